package executor

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"ctxlab/activities/api/errkind"
	"ctxlab/activities/testlog"
	"ctxlab/activities/testrun"
	"ctxlab/patch/diff"
)

// Local grades in a fresh temporary worktree on this machine, removed afterwards. A repository with a go.mod runs
// go test -json; any other runs Python tests (pytest -rA by default, or Config.TestCmdFor) on the test patch's files,
// or on exactly the listed test ids (Config.Tests). The model patch's test files are reset to base_commit first
// unless Config.ModelTests keeps them.
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
	// The language is read before the model patch applies, so the patch cannot change which rules it is held to.
	lang := LanguageOf(dir)
	reset, err := filesToReset(r, lang)
	if err != nil {
		return res, err
	}
	saved, err := saveFiles(dir, slices.Sorted(maps.Keys(reset)))
	if err != nil {
		return res, fmt.Errorf("instance %s: saving the test files: %w", r.Instance.InstanceID, err)
	}
	rep, err := diff.Apply(dir, r.Patch, diff.Options{})
	res.Apply = rep
	if err != nil {
		res.ApplyErr = err.Error()
		return res, nil
	}
	if err := recordTestFiles(r, lang, rep, reset, &res); err != nil {
		return res, err
	}
	if err := saved.restore(); err != nil {
		return res, fmt.Errorf("instance %s: %w", r.Instance.InstanceID, err)
	}
	if _, err := diff.ApplyDir(dir, r.Instance.TestPatch); err != nil {
		return res, fmt.Errorf("instance %s: %w: %v", r.Instance.InstanceID, ErrTestPatch, err)
	}
	o, err := localTestOptions(r, lang, dir, res.ModelTestFiles)
	if err != nil {
		return res, err
	}
	run, err := testrun.Run(ctx, o)
	res.Ran, res.Output, res.Report, res.TimedOut, res.Duration, res.Command = true, run.Output, run.Report,
		run.TimedOut, run.Duration, run.Args
	res.Isolation, res.Note = run.Isolation, run.Note
	// A Python command's exit code is its own; a Go run runs many binaries and has none.
	res.ExitCode, res.ExitCodeKnown = run.ExitCode, len(o.Command) > 0
	return res, markRun(err)
}

// filesToReset are the files reset to base_commit after the model patch, in the harness's order: the model patch
// goes onto base_commit; then the eval script resets the test patch's files to base_commit (discarding the model's
// edits to them) and applies the test patch. The model's other test files are reset the same way unless the config
// keeps them.
func filesToReset(r Request, lang string) (map[string]bool, error) {
	testPaths, err := diff.SafePaths(r.Instance.TestPatch)
	if err != nil {
		return nil, fmt.Errorf("instance %s: %w: %v", r.Instance.InstanceID, ErrTestPatch, err)
	}
	reset := map[string]bool{}
	for _, p := range testPaths {
		reset[p] = true
	}
	// A patch SafePaths refuses is refused by Apply too, with the same parser, and nothing is written.
	modelPaths, _ := diff.SafePaths(r.Patch)
	for _, p := range modelPaths {
		if IsTestFile(lang, p) && !r.Config.modelTestsKept() {
			reset[p] = true
		}
	}
	return reset, nil
}

// recordTestFiles records in res the test files the applied patch rep wrote that are reset (dropped) and those
// that are kept, and fails should it have written a test file that was not saved to be reset.
func recordTestFiles(r Request, lang string, rep diff.Report, reset map[string]bool, res *Result) error {
	for _, p := range rep.Files {
		switch {
		case reset[p]:
			res.TestFilesDropped = append(res.TestFilesDropped, p)
		case IsTestFile(lang, p) && !r.Config.modelTestsKept():
			// Fail closed should Apply ever write a path SafePaths did not list.
			return fmt.Errorf("instance %s: the model patch wrote test file %s, which was not saved to be reset",
				r.Instance.InstanceID, p)
		case IsTestFile(lang, p) && !slices.Contains(rep.Deleted, p):
			res.ModelTestFiles = append(res.ModelTestFiles, p)
		}
	}
	return nil
}

// localTestOptions are the test run's options in the worktree dir: go test -json for a Go module with no
// configured command, else the Python command; modelTests are the model's own test files, which the run leaves out.
func localTestOptions(r Request, lang, dir string, modelTests []string) (testrun.Options, error) {
	o := testrun.Options{Dir: dir, Timeout: r.Timeout, OutputCap: r.OutputCap, Heartbeat: r.Heartbeat,
		Isolate: r.Config.Isolation != "none",
		GoProxy: r.Config.GoProxy, ExcludeTestFiles: modelTests}
	testCmd := r.Config.TestCmdFor(r.Instance.Repo, lang)
	if lang == LangGo && testCmd == "" {
		// Without the go command every package would "fail to build": the machine's failure, not the patch's.
		if _, err := exec.LookPath("go"); err != nil {
			return o, errkind.Mark(errkind.Toolchain, fmt.Errorf("instance %s: no Go toolchain to build the "+
				"tests with (install Go, or put the go command on PATH): %w", r.Instance.InstanceID, err))
		}
		// A Multi-SWE-bench row's tests that must not newly fail run too (Decide checks them).
		o.Tests = slices.Concat(r.Instance.FailToPass, r.Instance.PassToPass, r.Instance.NoNewFailures)
		return o, nil
	}
	py, err := pythonCommand(r, dir, testCmd)
	if err != nil {
		return o, err
	}
	o.Command, o.Parser, o.Results = py.cmd, py.parser, py.results
	// Python writes no bytecode into the worktree, and finds ctxlab's helpers and the repository's own packages.
	o.ExtraEnv = append([]string{"PYTHONDONTWRITEBYTECODE=1", "PYTHONPATH=" + dir}, py.env...)
	return o, nil
}

// savedFiles are the base_commit contents of the test patch's files; absent ones are in missing.
type savedFiles struct {
	dir     string
	files   map[string][]byte
	missing map[string]bool
}

func saveFiles(dir string, paths []string) (savedFiles, error) {
	s := savedFiles{dir: dir, files: map[string][]byte{}, missing: map[string]bool{}}
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

// pythonRun is how the local executor runs an instance's Python tests.
type pythonRun struct {
	cmd    []string
	parser string
	env    []string
	// results is the file ctxlab's results plugin or unittest runner writes (testrun.Options.Results); empty when
	// the command runs neither pytest nor unittest itself (tox, a script), whose output is then parsed.
	results string
}

// pythonCommand is the local Python test command: testCmd (split on spaces) or `python -m pytest -rA`, followed by
// the test patch's Python files, or in the listed mode by exactly the instance's test ids: for pytest through a
// plugin that deselects every other collected test, for unittest as dotted ids. A command that runs pytest gets
// ctxlab's results plugin (-p ctxlab_results), and `-m unittest` becomes `-m ctxlab_unittest`, so that results are
// read from the results file, never from what the tests print.
func pythonCommand(r Request, dir, testCmd string) (pythonRun, error) {
	var run pythonRun
	if testCmd != "" {
		run.cmd, run.parser = strings.Fields(testCmd), parserFor(r.Config, testCmd)
	} else {
		py, err := FindPython(r.Config.Python, "pytest")
		if err != nil {
			return run, err
		}
		run.cmd, run.parser = []string{py, "-m", "pytest", "-rA", "-p", "no:cacheprovider"}, parserFor(r.Config, "pytest")
	}
	if run.parser == testlog.ParserGo {
		return run, nil // a go test command in a Python repository: Go's own runner, no helpers
	}
	listed := r.Config.Tests == TestsListed
	var ids []string
	if listed {
		ids = listedIDs(r.Instance.FailToPass, r.Instance.PassToPass)
	}
	helperDir, results, listFile, err := writePythonHelpers(dir, ids)
	if err != nil {
		return run, fmt.Errorf("instance %s: %w", r.Instance.InstanceID, err)
	}
	run.env = []string{"PYTHONPATH=" + helperDir + string(os.PathListSeparator) + dir}
	if i := unittestModuleArg(run.cmd); run.parser == testlog.ParserUnittest && i > 0 {
		run.cmd[i], run.results = unittestRunnerModule, results
	}
	if run.parser == testlog.ParserPytest && runsPytest(run.cmd) {
		run.cmd, run.results = append(run.cmd, "-p", resultsPluginModule), results
	}
	if !listed {
		for _, f := range TestFiles(r.Instance.TestPatch) {
			if strings.HasSuffix(f, ".py") {
				run.cmd = append(run.cmd, f)
			}
		}
		return run, nil
	}
	switch run.parser {
	case testlog.ParserPytest:
		run.cmd = append(run.cmd, "-p", listedPluginModule)
		run.cmd = append(run.cmd, pytestFiles(dir, ids)...)
		run.env = append(run.env, "CTXLAB_LISTED_TESTS="+listFile)
	case testlog.ParserUnittest:
		for _, id := range ids {
			run.cmd = append(run.cmd, UnittestID(id))
		}
	default:
		return run, errkind.Mark(errkind.BadInput, fmt.Errorf("instance %s: grading.tests %q needs the "+
			"pytest or unittest log parser, not %q", r.Instance.InstanceID, TestsListed, run.parser))
	}
	return run, nil
}

// runsPytest says whether a command runs pytest itself (pytest, py.test, or python -m pytest), so that pytest reads
// the options appended to it.
func runsPytest(cmd []string) bool {
	if len(cmd) > 0 && slices.Contains([]string{"pytest", "py.test"}, filepath.Base(cmd[0])) {
		return true
	}
	for i := 1; i < len(cmd); i++ {
		if cmd[i-1] == "-m" && cmd[i] == "pytest" {
			return true
		}
	}
	return false
}

// unittestModuleArg is the index of "unittest" in a `python -m unittest` command, or -1.
func unittestModuleArg(cmd []string) int {
	for i := 1; i < len(cmd); i++ {
		if cmd[i-1] == "-m" && cmd[i] == "unittest" {
			return i
		}
	}
	return -1
}

// FindPython returns want if set, else the first of python3 on PATH and /usr/bin/python3 that imports module.
// An interpreter found is remembered for the process (per module and PATH): importing pytest to check takes
// 0.15-0.4 s, as long as a small instance's whole test run. A failure is not remembered, so installing the
// module later is seen.
func FindPython(want, module string) (string, error) {
	if want != "" {
		return want, nil
	}
	key := module + "\x00" + os.Getenv("PATH")
	if p, ok := foundPython.Load(key); ok {
		return p.(string), nil
	}
	for _, p := range []string{"python3", "/usr/bin/python3"} {
		path, err := exec.LookPath(p)
		if err != nil {
			continue
		}
		if module == "" || exec.Command(path, "-c", "import "+module).Run() == nil {
			foundPython.Store(key, path)
			return path, nil
		}
	}
	return "", errkind.Mark(errkind.MissingRunner, fmt.Errorf("no python3 that can import %s (set grading.python, "+
		"or install python3-%s)", module, module))
}

// foundPython maps module and PATH to the interpreter FindPython found.
var foundPython sync.Map

var _ Executor = Local{}
