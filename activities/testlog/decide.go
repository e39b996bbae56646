package testlog

import (
	"sort"
	"strings"
)

// Verdict is the grading of one instance. Every listed test lands in exactly one of Passed, Failed, Missing or
// Skipped (names are deduplicated; a name in both lists is graded once).
type Verdict struct {
	Resolved bool     `json:"resolved"`
	Passed   []string `json:"passed"`
	Failed   []string `json:"failed"`
	Missing  []string `json:"missing"`
	Skipped  []string `json:"skipped"`
}

// Decide grades a run: the instance is resolved only when every FAIL_TO_PASS and every PASS_TO_PASS test passed.
//
//   - A test with no result is Missing, and counts as failing (its package did not build, the name is wrong, or the
//     binary died before reaching it).
//   - A test name that ran in several packages must pass in every one of them; one failure makes it Failed.
//   - A skipped test counts as not passing, for FAIL_TO_PASS and PASS_TO_PASS alike (it lands in Skipped). This is
//     SWE-bench's own rule (only PASSED/XFAIL pass), and it is the safe choice for PASS_TO_PASS too: those lists hold
//     tests that passed with the reference patch in the same environment, so a skip now means the candidate changed
//     behaviour; counting a skip as a pass would also reward a patch that merely adds t.Skip to a failing test.
//   - Nothing is decided from an exit code: only per-test results count.
//
// A Go name may be package-qualified ("import/path::TestX", "./pkg::TestX", "pkg/sub::TestX/sub"; see
// SplitGoTestName): then only the results of that package count. A bare name counts the results of every package.
//
// A name go test would print differently (spaces in subtest names become underscores) is also looked up in that
// form.
func Decide(failToPass, passToPass []string, rep Report) Verdict {
	v := Verdict{Passed: []string{}, Failed: []string{}, Missing: []string{}, Skipped: []string{}}
	seen := map[string]bool{}
	all := append(append([]string{}, failToPass...), passToPass...)
	for _, name := range all {
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
		case anyStatus(results, StatusSkip):
			v.Skipped = append(v.Skipped, name)
		default:
			v.Passed = append(v.Passed, name)
		}
	}
	sort.Strings(v.Passed)
	sort.Strings(v.Failed)
	sort.Strings(v.Missing)
	sort.Strings(v.Skipped)
	v.Resolved = len(all) > 0 && len(v.Failed) == 0 && len(v.Missing) == 0 && len(v.Skipped) == 0
	return v
}

func lookup(rep Report, name string) []TestResult {
	if rs := rep.Tests[name]; len(rs) > 0 {
		return rs
	}
	pkg, test := SplitGoTestName(name)
	rs := rep.Tests[test]
	if len(rs) == 0 {
		rs = rep.Tests[strings.ReplaceAll(test, " ", "_")]
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

func anyStatus(rs []TestResult, s Status) bool {
	for _, r := range rs {
		if r.Status == s {
			return true
		}
	}
	return false
}
