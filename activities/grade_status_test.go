package activities

import (
	"context"
	"path"
	"strings"
	"testing"

	"ctxlab/activities/executor"
	"ctxlab/activities/testlog"
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
	grading := map[string]any{"grading": map[string]any{"executor": "local", "timeout": "5m"}}
	r := f.must(f.node("grade", inst, grading, map[string]NodeOutput{"checkout": co, "patch": f.putPatch(broken)})).Row
	msg, _ := r["grade_build_error"].(string)
	if r["grade_status"] != GradeBuildFailed || r["resolved"] != false || !strings.Contains(msg, "zzbroken") {
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
	f.refs[inst] = InstanceRef{ID: inst, Ref: ref}
	co := f.must(f.node("checkout", inst, nil, nil))
	grading := map[string]any{"grading": map[string]any{"executor": "local", "timeout": "5m"}}
	r := f.must(f.node("grade", inst, grading, map[string]NodeOutput{"checkout": co, "patch": f.putPatch(row.Patch)})).Row
	note, _ := r["grade_note"].(string)
	if r["grade_status"] != GradeNameMismatch || !strings.Contains(note, "names do not match") {
		t.Errorf("row: %v", r)
	}
}

func TestRunStatus(t *testing.T) {
	missing := testlog.Verdict{Missing: []string{"TestA", "TestB"}}
	someRan := testlog.Verdict{Passed: []string{"TestA"}, Missing: []string{"TestB"}}
	for _, c := range []struct {
		name string
		res  executor.Result
		v    testlog.Verdict
		want string
	}{
		{"build failed", executor.Result{Report: testlog.Report{BuildFailed: []string{"m/p"}}}, missing, GradeBuildFailed},
		{"build failed, some ran", executor.Result{Report: testlog.Report{BuildFailed: []string{"m/p"}}}, someRan, GradeBuildFailed},
		{"others ran", executor.Result{Report: testlog.Report{Tests: map[string][]testlog.TestResult{"TestC": nil}}}, missing, GradeNameMismatch},
		{"none declared", executor.Result{Report: testlog.Report{NotDeclared: []string{"TestA", "TestB"}}}, missing, GradeNameMismatch},
		{"declared, nothing reported", executor.Result{Report: testlog.Report{NotDeclared: []string{"TestB"}}}, missing, GradeTestsMissing},
		{"some missing", executor.Result{Report: testlog.Report{Tests: map[string][]testlog.TestResult{"TestA": nil}}}, someRan, GradeTestsMissing},
		{"timeout first", executor.Result{TimedOut: true, Report: testlog.Report{BuildFailed: []string{"m/p"}}}, missing, GradeTimeout},
	} {
		if got := runStatus(c.res, c.v); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

func TestHeadOfKeepsWholeLines(t *testing.T) {
	long := strings.Repeat("a line of compiler output\n", 200)
	got := headOf(long, maxBuildError)
	if len(got) > maxBuildError+10 || !strings.HasSuffix(got, "output\n[...]\n") || !strings.HasPrefix(long, strings.TrimSuffix(got, "[...]\n")) {
		t.Errorf("headOf: %d bytes, ends %q", len(got), got[len(got)-20:])
	}
	if headOf("short\n", maxBuildError) != "short\n" {
		t.Error("short text changed")
	}
}
