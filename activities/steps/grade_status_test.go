package steps

import (
	"strings"
	"testing"

	"ctxlab/grading/executor"
	"ctxlab/grading/testlog"
)

func TestRunStatus(t *testing.T) {
	missing := testlog.Verdict{Missing: []string{"TestA", "TestB"}}
	someRan := testlog.Verdict{Passed: []string{"TestA"}, Missing: []string{"TestB"}}
	passed := testlog.Verdict{Resolved: true, Passed: []string{"TestA"}}
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
		{"declared, nothing reported", executor.Result{Report: testlog.Report{NotDeclared: []string{"TestB"}}}, missing, GradeNoTests},
		{"some missing", executor.Result{Report: testlog.Report{Tests: map[string][]testlog.TestResult{"TestA": nil}}}, someRan, GradeTestsMissing},
		{"timeout first", executor.Result{TimedOut: true, Report: testlog.Report{BuildFailed: []string{"m/p"}}}, missing, GradeTimeout},
		// SWE-bench 5.0: a run that counts no test is rejected, even when nothing was listed (a vacuous pass), and
		// a resolved run whose recorded exit code is non-zero while nothing failed is rejected.
		{"no tests at all", executor.Result{}, missing, GradeNoTests},
		{"no tests, nothing listed", executor.Result{}, testlog.Verdict{Resolved: true}, GradeNoTests},
		{"exit code contradicts", executor.Result{ExitCodeKnown: true, ExitCode: 1, Report: testlog.Report{
			Tests: map[string][]testlog.TestResult{"TestA": {{Status: testlog.StatusPass}}}}}, passed, GradeExitCodeMismatch},
		{"exit code agrees: another test failed", executor.Result{ExitCodeKnown: true, ExitCode: 1, Report: testlog.Report{
			Tests: map[string][]testlog.TestResult{"TestA": {{Status: testlog.StatusPass}}, "TestZ": {{Status: testlog.StatusFail}}}}},
			passed, GradeResolved},
		{"exit code unknown", executor.Result{ExitCode: 1, Report: testlog.Report{
			Tests: map[string][]testlog.TestResult{"TestA": {{Status: testlog.StatusPass}}}}}, passed, GradeResolved},
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
