package grading

import (
	"slices"
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
		{"build failed", executor.Result{Report: testlog.Report{BuildFailed: []string{"m/p"}}}, missing, StatusBuildFailed},
		{"build failed, some ran", executor.Result{Report: testlog.Report{BuildFailed: []string{"m/p"}}}, someRan, StatusBuildFailed},
		{"others ran", executor.Result{Report: testlog.Report{Tests: map[string][]testlog.TestResult{"TestC": nil}}}, missing, StatusNameMismatch},
		{"none declared", executor.Result{Report: testlog.Report{NotDeclared: []string{"TestA", "TestB"}}}, missing, StatusNameMismatch},
		{"declared, nothing reported", executor.Result{Report: testlog.Report{NotDeclared: []string{"TestB"}}}, missing, StatusNoTests},
		{"some missing", executor.Result{Report: testlog.Report{Tests: map[string][]testlog.TestResult{"TestA": nil}}}, someRan, StatusTestsMissing},
		{"timeout first", executor.Result{TimedOut: true, Report: testlog.Report{BuildFailed: []string{"m/p"}}}, missing, StatusTimeout},
		// SWE-bench 5.0: a run that counts no test is rejected, even when nothing was listed (a vacuous pass), and
		// a resolved run whose recorded exit code is non-zero while nothing failed is rejected.
		{"no tests at all", executor.Result{}, missing, StatusNoTests},
		{"no tests, nothing listed", executor.Result{}, testlog.Verdict{Resolved: true}, StatusNoTests},
		{"exit code contradicts", executor.Result{ExitCodeKnown: true, ExitCode: 1, Report: testlog.Report{
			Tests: map[string][]testlog.TestResult{"TestA": {{Status: testlog.StatusPass}}}}}, passed, StatusExitCodeMismatch},
		{"exit code agrees: another test failed", executor.Result{ExitCodeKnown: true, ExitCode: 1, Report: testlog.Report{
			Tests: map[string][]testlog.TestResult{"TestA": {{Status: testlog.StatusPass}}, "TestZ": {{Status: testlog.StatusFail}}}}},
			passed, StatusResolved},
		{"exit code unknown", executor.Result{ExitCode: 1, Report: testlog.Report{
			Tests: map[string][]testlog.TestResult{"TestA": {{Status: testlog.StatusPass}}}}}, passed, StatusResolved},
	} {
		if got := runStatus(c.res, c.v); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

// SWE-bench 5.0's rules on a run's results (HarnessRule), beside its 4.x resolution rule. Cited: the eval script
// records the test command's exit code after the tests and before the reset, in SWEBENCH_TEST_EXIT_CODE, marked
// ">>>>> Test Exit Code" (swebench/harness/constants/__init__.py at SWE-bench/SWE-bench commit 334882dd; the
// maintainers in SWE-bench#526, and PR#620 "detect stdout spoofing via test exit code", which reads the test
// command's status, not the script's, and checks that every parser can record a failure); a run whose summary
// counts zero tests is rejected (ctxlab issue 38's account of 5.0). How 5.0 combines the exit code with the status
// map was not found in the searchable copies; ctxlab's reading: a non-zero exit with no failure recorded is a
// contradiction, and the run is rejected.
func TestHarnessRules(t *testing.T) {
	pass := map[string][]testlog.TestResult{"t::a": {{Status: testlog.StatusPass}}}
	withFail := map[string][]testlog.TestResult{"t::a": {{Status: testlog.StatusPass}}, "t::b": {{Status: testlog.StatusFail}}}
	for _, c := range []struct {
		name string
		res  executor.Result
		want string
	}{
		{"zero tests", executor.Result{ExitCodeKnown: true, ExitCode: 5}, StatusNoTests},
		{"zero tests, exit 0", executor.Result{ExitCodeKnown: true}, StatusNoTests},
		{"zero tests, a build failed", executor.Result{Report: testlog.Report{BuildFailed: []string{"m/p"}}, ExitCodeKnown: true, ExitCode: 1}, ""},
		{"passes, exit 0", executor.Result{Report: testlog.Report{Tests: pass}, ExitCodeKnown: true}, ""},
		{"passes, exit 1: forged", executor.Result{Report: testlog.Report{Tests: pass}, ExitCodeKnown: true, ExitCode: 1}, StatusExitCodeMismatch},
		{"passes, killed", executor.Result{Report: testlog.Report{Tests: pass}, ExitCodeKnown: true, ExitCode: 137}, StatusExitCodeMismatch},
		{"a failure explains exit 1", executor.Result{Report: testlog.Report{Tests: withFail}, ExitCodeKnown: true, ExitCode: 1}, ""},
		{"a build failure explains exit 1", executor.Result{Report: testlog.Report{Tests: pass, BuildFailed: []string{"m/q"}}, ExitCodeKnown: true, ExitCode: 1}, ""},
		{"exit code not recorded", executor.Result{Report: testlog.Report{Tests: pass}, ExitCode: 1}, ""},
	} {
		if got := HarnessRule(c.res); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// The go command's words for a module of the build list that the offline build needed and the module cache lacked
// name it, whatever the go.mod's go version: a "go: downloading" line (go 1.17 and later), or, for an older go.mod
// (gopkg.in modules come without go.sum), the module lookup refused or its checksum not verifiable offline. A
// missing import is the patch's doing and names no module of the build list.
func TestModulesDownloaded(t *testing.T) {
	out := "go: downloading github.com/pkg/errors v0.9.1\n" +
		"m.go:3:8: module lookup disabled by GOPROXY=off\n" +
		"go: gopkg.in/check.v1@v0.0.0-20161208181325-20d25e280405: module lookup disabled by GOPROXY=off\n" +
		"example.com/dep@v1.0.0: verifying module: example.com/dep@v1.0.0: initializing sumdb.Client: dial tcp: no such host\n" +
		"m.go:4:8: cannot find module providing package example.com/new: module lookup disabled by GOPROXY=off\n" +
		"go: downloading github.com/pkg/errors v0.9.1\n"
	want := []string{"github.com/pkg/errors v0.9.1", "gopkg.in/check.v1 v0.0.0-20161208181325-20d25e280405",
		"example.com/dep v1.0.0"}
	if got := modulesDownloaded(out); !slices.Equal(got, want) {
		t.Errorf("modulesDownloaded = %q, want %q", got, want)
	}
}
