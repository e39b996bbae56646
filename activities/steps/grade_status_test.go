package activities

import (
	"context"
	"path"
	"strings"
	"testing"

	"ctxlab/activities/api"
	"ctxlab/grading"
	"ctxlab/grading/executor"
	"ctxlab/patch/diff"
	"ctxlab/store/cas"
)

// A model patch that breaks the build of the tests' package is build_failed, with the compiler's text on the row.
func TestGradeBuildFailedIsItsOwnOutcome(t *testing.T) {
	f := newFixture(t)
	row := f.rows[inst]
	var testDir string
	for _, file := range executor.TestFiles(row.TestPatch) {
		if strings.HasSuffix(file, "_test.go") {
			testDir = path.Dir(file)
			break
		}
	}
	if testDir == "" {
		t.Fatalf("instance %s has no Go test file", inst)
	}
	broken := row.Patch + diff.Unified(path.Join(testDir, "zz_broken.go"), nil, []byte("package zzbroken\n"))
	co := f.must(f.node("checkout", inst, nil, nil))
	params := map[string]any{"grading": map[string]any{"executor": "local", "timeout": "5m"}}
	r := f.must(f.node("grade", inst, params, map[string]api.NodeOutput{"checkout": co, "patch": f.putPatch(broken)})).Row
	msg, _ := r["grade_build_error"].(string)
	if r["grade_status"] != grading.StatusBuildFailed || r["resolved"] != false || !strings.Contains(msg, "zzbroken") {
		t.Errorf("row: %v", r)
	}
}

// Test names the runner never reports (here: names of no test in the repository) are tests_name_mismatch, with a note.
func TestGradeNameMismatch(t *testing.T) {
	f := newFixture(t)
	row := f.rows[inst]
	for i, n := range row.FailToPass {
		row.FailToPass[i] = "TestRenamed" + n
	}
	for i, n := range row.PassToPass {
		row.PassToPass[i] = "other/pkg::" + n
	}
	ref, err := cas.PutJSON(context.Background(), mustStore(t, f.a), row)
	if err != nil {
		t.Fatal(err)
	}
	f.refs[inst] = api.InstanceRef{ID: inst, Ref: ref}
	co := f.must(f.node("checkout", inst, nil, nil))
	params := map[string]any{"grading": map[string]any{"executor": "local", "timeout": "5m"}}
	r := f.must(f.node("grade", inst, params, map[string]api.NodeOutput{"checkout": co, "patch": f.putPatch(row.Patch)})).Row
	note, _ := r["grade_note"].(string)
	if r["grade_status"] != grading.StatusNameMismatch || !strings.Contains(note, "names do not match") {
		t.Errorf("row: %v", r)
	}
}
