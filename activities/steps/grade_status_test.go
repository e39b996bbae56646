package steps

import (
	"path"
	"strings"
	"testing"

	"ctxlab/activities/api"
	"ctxlab/grading"
	"ctxlab/grading/executor"
	"ctxlab/patch/diff"
	"ctxlab/testkit/demorun"
)

// A model patch that breaks the build of the tests' package is build_failed, with the compiler's text on the row.
func TestGradeBuildFailedIsItsOwnOutcome(t *testing.T) {
	f := newFixture(t)
	row := f.Rows[demorun.Instance]
	var testDir string
	for _, file := range executor.TestFiles(row.TestPatch) {
		if strings.HasSuffix(file, "_test.go") {
			testDir = path.Dir(file)
			break
		}
	}
	if testDir == "" {
		t.Fatalf("instance %s has no Go test file", demorun.Instance)
	}
	broken := row.Patch + diff.Unified(path.Join(testDir, "zz_broken.go"), nil, []byte("package zzbroken\n"))
	co := f.Must(f.Node("checkout", demorun.Instance, nil, nil))
	params := map[string]any{"grading": map[string]any{"executor": "local", "timeout": "5m"}}
	r := f.Must(f.Node("grade", demorun.Instance, params, map[string]api.NodeOutput{"checkout": co, "patch": f.Put(broken)})).Row
	msg, _ := r["grade_build_error"].(string)
	if r["grade_status"] != grading.StatusBuildFailed || r["resolved"] != false || !strings.Contains(msg, "zzbroken") {
		t.Errorf("row: %v", r)
	}
}

// Test names the runner never reports (here: names of no test in the repository) are tests_name_mismatch, with a note.
func TestGradeNameMismatch(t *testing.T) {
	f := newFixture(t)
	row := f.Rows[demorun.Instance]
	for i, n := range row.FailToPass {
		row.FailToPass[i] = "TestRenamed" + n
	}
	for i, n := range row.PassToPass {
		row.PassToPass[i] = "other/pkg::" + n
	}
	f.SetRow(row)
	co := f.Must(f.Node("checkout", demorun.Instance, nil, nil))
	params := map[string]any{"grading": map[string]any{"executor": "local", "timeout": "5m"}}
	r := f.Must(f.Node("grade", demorun.Instance, params, map[string]api.NodeOutput{"checkout": co, "patch": f.Put(row.Patch)})).Row
	note, _ := r["grade_note"].(string)
	if r["grade_status"] != grading.StatusNameMismatch || !strings.Contains(note, "names do not match") {
		t.Errorf("row: %v", r)
	}
}
