package executor

import (
	"fmt"
	"slices"

	"ctxlab/patch/diff"
)

// applyModelPatch applies r's model patch to the worktree dir, recording in res how it applied and which test files
// it touched; not applied (and no error) when it does not apply.
func applyModelPatch(r Request, lang, dir string, reset map[string]bool, res *Result) (bool, error) {
	rep, err := diff.Apply(dir, r.Patch, diff.Options{})
	res.Apply = rep
	if err != nil {
		res.ApplyErr = err.Error()
		return false, nil
	}
	return true, recordTestFiles(r, lang, rep, reset, res)
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

// dropTestFiles records in res the test files of the applied patch rep that never reach the container (the test
// patch's, which the eval script resets anyway, and the model's others unless the config keeps them) and those that
// do, and returns the dropped ones.
func dropTestFiles(r Request, lang string, rep diff.Report, res *Result) map[string]bool {
	testPaths := TestFiles(r.Instance.TestPatch)
	dropped := map[string]bool{}
	for _, p := range rep.Files {
		switch {
		case contains(testPaths, p) || (IsTestFile(lang, p) && !r.Config.modelTestsKept()):
			dropped[p] = true
			res.TestFilesDropped = append(res.TestFilesDropped, p)
		case IsTestFile(lang, p) && !contains(rep.Deleted, p):
			res.ModelTestFiles = append(res.ModelTestFiles, p)
		}
	}
	return dropped
}
