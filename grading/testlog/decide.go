package testlog

import (
	"sort"
	"strings"

	"ctxlab/dataset/swebench"
)

// Verdict is the grading of one instance. Every listed test lands in exactly one of Passed, Failed, Missing or
// Skipped (names are deduplicated; a name in both lists is graded once).
type Verdict struct {
	Resolved bool     `json:"resolved"`
	Passed   []string `json:"passed"`
	Failed   []string `json:"failed"`
	Missing  []string `json:"missing"`
	// Skipped holds the tests whose result counts neither as a pass nor as a failure: skipped, or a status the
	// harness does not know.
	Skipped []string `json:"skipped"`
	// Regressed lists tests outside the lists that Multi-SWE-bench forbids to fail and that failed
	// (DecideMultiSWEBench); always empty for Decide.
	Regressed []string `json:"regressed,omitempty"`
}

// DecideInstance grades a run's report by the rule of the harness the instance comes from: Multi-SWE-bench's for
// its rows (DecideMultiSWEBench, with the row's NoNewFailures), SWE-bench's grading.py for every other (Decide).
func DecideInstance(in swebench.Instance, rep Report) Verdict {
	if in.Format == swebench.FormatMultiSWEBench {
		return DecideMultiSWEBench(in.FailToPass, in.PassToPass, in.NoNewFailures, rep)
	}
	return Decide(in.FailToPass, in.PassToPass, rep)
}

// Decide grades a run by the SWE-bench harness's rule (SWE-bench/SWE-bench swebench/harness/grading.py, v4.0.x at
// commit fdefc6a2: test_passed, test_failed, get_eval_tests_report, compute_fail_to_pass, compute_pass_to_pass,
// get_resolution_status), which SWE-bench Multilingual's Go rows are graded by too:
//
//   - a test passes when its status is PASSED or XFAIL (StatusPass), and fails when it is FAILED or ERROR
//     (StatusFail) or when it has no result at all (Missing: its package did not build, the name is wrong, or the
//     run died before reaching it);
//   - any other status (SKIPPED, or one the harness does not know) counts neither way (Skipped): the harness leaves
//     it out of both the successes and the failures;
//   - the instance is resolved when no FAIL_TO_PASS and no PASS_TO_PASS test fails. Empty lists, or lists whose
//     tests were all skipped, resolve (the harness's ratios are 1 when nothing counted). So a patch that makes
//     every listed test skip resolves, as in the harness; the row lists those tests (tests_skipped).
//   - Nothing is decided from an exit code: only per-test results count.
//
// A Go name may be package-qualified ("import/path::TestX", "./pkg::TestX", "pkg/sub::TestX/sub"; see
// SplitGoTestName): then only the results of that package count. A bare name counts the results of every package:
// a failure in any of them fails it, else a pass in any of them passes it (a skip elsewhere counts neither way).
//
// A name go test would print differently (spaces in subtest names become underscores; see printedName) is also
// looked up in that form.
func Decide(failToPass, passToPass []string, rep Report) Verdict {
	v := classify(failToPass, passToPass, rep)
	v.Resolved = len(v.Failed) == 0 && len(v.Missing) == 0
	return v
}

// DecideMultiSWEBench grades a run by Multi-SWE-bench's rule (multi-swe-bench/multi-swe-bench,
// multi_swe_bench/harness/report.py Report.check and gen_report.py's evaluation mode, at commit fc0e95bc): every
// FAIL_TO_PASS and PASS_TO_PASS test must pass (a skip, an unknown status or no result does not: the harness wants
// each in the report's f2p/s2p/n2p/p2p tests, whose fix status is PASS); FAIL_TO_PASS must not be empty ("Fix
// something"); and no test of noNewFailures may fail (Regressed): the tests that passed with the test patch alone
// ("No new failures") or passed at base_commit and were skipped or absent with the test patch ("Anomalous
// pattern"), which the dataset row lists (swebench.Instance.NoNewFailures). A test of noNewFailures that is
// skipped or did not run is fine, as in the harness.
func DecideMultiSWEBench(failToPass, passToPass, noNewFailures []string, rep Report) Verdict {
	v := classify(failToPass, passToPass, rep)
	listed := map[string]bool{}
	for _, name := range append(append([]string{}, failToPass...), passToPass...) {
		listed[name] = true
	}
	seen := map[string]bool{}
	for _, name := range noNewFailures {
		if listed[name] || seen[name] {
			continue
		}
		seen[name] = true
		if anyStatus(lookup(rep, name), StatusFail) {
			v.Regressed = append(v.Regressed, name)
		}
	}
	sort.Strings(v.Regressed)
	v.Resolved = len(failToPass) > 0 && len(v.Failed) == 0 && len(v.Missing) == 0 && len(v.Skipped) == 0 &&
		len(v.Regressed) == 0
	return v
}

// classify puts every listed test in one bucket of a Verdict (see Decide); Resolved is left to the caller's rule.
func classify(failToPass, passToPass []string, rep Report) Verdict {
	v := Verdict{Passed: []string{}, Failed: []string{}, Missing: []string{}, Skipped: []string{}}
	seen := map[string]bool{}
	for _, name := range append(append([]string{}, failToPass...), passToPass...) {
		if seen[name] {
			continue
		}
		seen[name] = true
		results := lookup(rep, name)
		switch {
		case len(results) == 0:
			v.Missing = append(v.Missing, name)
		case anyStatus(results, StatusFail):
			v.Failed = append(v.Failed, name)
		case anyStatus(results, StatusPass):
			v.Passed = append(v.Passed, name)
		default:
			v.Skipped = append(v.Skipped, name)
		}
	}
	sort.Strings(v.Passed)
	sort.Strings(v.Failed)
	sort.Strings(v.Missing)
	sort.Strings(v.Skipped)
	return v
}

func lookup(rep Report, name string) []TestResult {
	if rs := rep.Tests[name]; len(rs) > 0 {
		return rs
	}
	pkg, test := SplitGoTestName(name)
	rs := rep.Tests[test]
	if len(rs) == 0 {
		rs = rep.Tests[printedName(test)]
	}
	if pkg == "" {
		return rs
	}
	var in []TestResult
	for _, r := range rs {
		if PackageMatches(pkg, r.Package, r.Dir) {
			in = append(in, r)
		}
	}
	return in
}

// printedName is a Go test name as go test prints it: spaces in subtest names become underscores (the testing
// package's rewrite); a top-level name is printed as given (an inner runner's suite may be named "inner suite").
func printedName(name string) string {
	top, sub, ok := strings.Cut(name, "/")
	if !ok {
		return name
	}
	return top + "/" + strings.ReplaceAll(sub, " ", "_")
}

func anyStatus(rs []TestResult, s Status) bool {
	for _, r := range rs {
		if r.Status == s {
			return true
		}
	}
	return false
}
