package executor

import (
	"fmt"
	"os"
	"path/filepath"

	"ctxlab/grading/sandbox"
	"ctxlab/patch/diff"
)

// TempPrefix starts the name of every grading folder; the process id follows, so stale folders of dead processes
// can be told from live ones.
const TempPrefix = "ctxlab-grade-"

// TempDir makes a fresh grading folder in the system's temporary folder.
func TempDir() (string, error) {
	return os.MkdirTemp("", fmt.Sprintf("%s%d-", TempPrefix, os.Getpid()))
}

// CleanStale removes grading folders under dir (the system's temporary folder when empty) left by processes that
// no longer run, such as a worker killed in the middle of a grade. It returns how many it removed.
func CleanStale(dir string) (int, error) {
	if dir == "" {
		dir = os.TempDir()
	}
	return sandbox.RemoveDead(dir, TempPrefix)
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
