package executor

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"ctxlab/activities/diff"
	"ctxlab/activities/testrun"
)

// Local grades in a fresh temporary worktree on this machine, removed afterwards. A repository with a go.mod runs
// go test -json; any other runs Python tests (pytest -rA by default, or Config.TestCmd) on the test patch's files.
type Local struct{}

// Run implements Executor.
func (Local) Run(ctx context.Context, r Request) (Result, error) {
	var res Result
	if r.Materialize == nil {
		return res, fmt.Errorf("local executor: nothing to materialize the repository with")
	}
	dir, err := TempDir()
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	if err := r.Materialize(ctx, dir); err != nil {
		return res, err
	}
	// The harness's order: the model patch goes onto base_commit; then the eval script resets the test patch's
	// files to base_commit (discarding the model's edits to them) and applies the test patch.
	tests, err := saveFiles(dir, r.Instance.TestPatch)
	if err != nil {
		return res, fmt.Errorf("instance %s: %w: %v", r.Instance.InstanceID, ErrTestPatch, err)
	}
	rep, err := diff.Apply(dir, r.Patch, diff.Options{})
	res.Apply = rep
	if err != nil {
		res.ApplyErr = err.Error()
		return res, nil
	}
	if err := tests.restore(); err != nil {
		return res, err
	}
	if _, err := diff.ApplyDir(dir, r.Instance.TestPatch); err != nil {
		return res, fmt.Errorf("instance %s: %w: %v", r.Instance.InstanceID, ErrTestPatch, err)
	}

	o := testrun.Options{Dir: dir, Timeout: r.Timeout, OutputCap: r.OutputCap, Heartbeat: r.Heartbeat,
		GoProxy: r.Config.GoProxy}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil && r.Config.TestCmd == "" {
		o.Tests = append(append([]string{}, r.Instance.FailToPass...), r.Instance.PassToPass...)
	} else {
		cmd, parser, err := pythonCommand(r)
		if err != nil {
			return res, err
		}
		o.Command, o.Parser = cmd, parser
		// Python writes no bytecode into the worktree, and finds the repository's own packages.
		o.ExtraEnv = []string{"PYTHONDONTWRITEBYTECODE=1", "PYTHONPATH=" + dir}
	}
	run, err := testrun.Run(ctx, o)
	res.Ran, res.Output, res.Report, res.TimedOut, res.Duration, res.Command = true, run.Output, run.Report,
		run.TimedOut, run.Duration, run.Args
	return res, err
}

// savedFiles are the base_commit contents of the test patch's files; absent ones are in missing.
type savedFiles struct {
	dir     string
	files   map[string][]byte
	missing map[string]bool
}

func saveFiles(dir, testPatch string) (savedFiles, error) {
	s := savedFiles{dir: dir, files: map[string][]byte{}, missing: map[string]bool{}}
	paths, err := diff.SafePaths(testPatch)
	if err != nil {
		return s, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return s, err
	}
	defer root.Close()
	for _, p := range paths {
		b, err := root.ReadFile(p)
		switch {
		case os.IsNotExist(err):
			s.missing[p] = true
		case err != nil:
			return s, err
		default:
			s.files[p] = b
		}
	}
	return s, nil
}

// restore puts the saved contents back, as `git checkout base_commit -- files` does, removing files that did not
// exist. Writes go through an os.Root, so a symbolic link the model patch could not make anyway cannot lead out.
func (s savedFiles) restore() error {
	root, err := os.OpenRoot(s.dir)
	if err != nil {
		return err
	}
	defer root.Close()
	for p := range s.missing {
		if err := root.Remove(p); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("resetting %s: %w", p, err)
		}
	}
	for p, b := range s.files {
		if d := filepath.Dir(p); d != "." {
			if err := root.MkdirAll(d, 0o755); err != nil {
				return fmt.Errorf("resetting %s: %w", p, err)
			}
		}
		if err := root.WriteFile(p, b, 0o644); err != nil {
			return fmt.Errorf("resetting %s: %w", p, err)
		}
	}
	return nil
}

// pythonCommand is the local Python test command: Config.TestCmd (split on spaces) or `python -m pytest -rA`, with
// the test patch's Python files appended.
func pythonCommand(r Request) ([]string, string, error) {
	var files []string
	for _, f := range TestFiles(r.Instance.TestPatch) {
		if strings.HasSuffix(f, ".py") {
			files = append(files, f)
		}
	}
	if r.Config.TestCmd != "" {
		cmd := strings.Fields(r.Config.TestCmd)
		return append(cmd, files...), parserFor(r.Config, r.Config.TestCmd), nil
	}
	py, err := FindPython(r.Config.Python, "pytest")
	if err != nil {
		return nil, "", err
	}
	cmd := append([]string{py, "-m", "pytest", "-rA", "-p", "no:cacheprovider"}, files...)
	return cmd, parserFor(r.Config, "pytest"), nil
}

// FindPython returns want if set, else the first of python3 on PATH and /usr/bin/python3 that imports module.
func FindPython(want, module string) (string, error) {
	if want != "" {
		return want, nil
	}
	for _, p := range []string{"python3", "/usr/bin/python3"} {
		path, err := exec.LookPath(p)
		if err != nil {
			continue
		}
		if module == "" || exec.Command(path, "-c", "import "+module).Run() == nil {
			return path, nil
		}
	}
	return "", fmt.Errorf("no python3 that can import %s (set grading.python, or install python3-%s)", module, module)
}

var _ Executor = Local{}
