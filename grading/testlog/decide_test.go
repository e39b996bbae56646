package testlog

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// The SWE-bench harness's resolution rule, as swebench/harness/grading.py states it (SWE-bench/SWE-bench, v4.0.x,
// commit fdefc6a2; unchanged since XFAIL was added to test_passed):
//
//	test_passed(case, sm) = case in sm and sm[case] in [PASSED, XFAIL]
//	test_failed(case, sm) = case not in sm or sm[case] in [FAILED, ERROR]
//	get_eval_tests_report: a case goes to "success" if test_passed, else to "failure" if test_failed, else nowhere
//	compute_fail_to_pass / compute_pass_to_pass = success / (success + failure), 1 when both are empty
//	get_resolution_status: FULL (resolved) when both are 1
//
// harnessStatusOf maps a harness status string to what ParseHarness gives Decide; "" is a test the log does not name.
var harnessStatusOf = map[string]Status{"PASSED": StatusPass, "XFAIL": StatusPass, "FAILED": StatusFail,
	"ERROR": StatusFail, "SKIPPED": StatusSkip, "XPASS": StatusSkip, "ERROR:": StatusSkip}

// harnessResolved is grading.py's arithmetic over a status map, written independently of Decide's lists.
func harnessResolved(f2p, p2p []string, sm map[string]string) bool {
	ratio := func(cases []string) float64 {
		success, failure := 0, 0
		for _, c := range cases {
			st, in := sm[c]
			switch {
			case in && (st == "PASSED" || st == "XFAIL"):
				success++
			case !in || st == "FAILED" || st == "ERROR":
				failure++
			}
		}
		if success+failure == 0 {
			return 1
		}
		return float64(success) / float64(success+failure)
	}
	return ratio(f2p) == 1 && ratio(p2p) == 1
}

// reportOf turns a harness status map into the Report ParseHarness would give (an unknown status counts neither way).
func reportOf(sm map[string]string) Report {
	rep := Report{Tests: map[string][]TestResult{}}
	for name, st := range sm {
		s, ok := harnessStatusOf[st]
		if !ok {
			s = StatusSkip
		}
		rep.Tests[name] = []TestResult{{Status: s}}
	}
	return rep
}

// Every status combination of the harness's rule, row by row, each citing what grading.py does with it.
func TestDecideFollowsHarnessTable(t *testing.T) {
	for _, c := range []struct {
		name     string
		f2p, p2p []string
		sm       map[string]string
		resolved bool
		why      string
	}{
		{"pass", []string{"a"}, []string{"b"}, map[string]string{"a": "PASSED", "b": "PASSED"}, true,
			"test_passed: PASSED is a success"},
		{"xfail passes", []string{"a"}, []string{"b"}, map[string]string{"a": "XFAIL", "b": "XFAIL"}, true,
			"test_passed: XFAIL is a success"},
		{"failed f2p", []string{"a"}, nil, map[string]string{"a": "FAILED"}, false, "test_failed: FAILED"},
		{"error f2p", []string{"a"}, nil, map[string]string{"a": "ERROR"}, false, "test_failed: ERROR"},
		{"error p2p", []string{"a"}, []string{"b"}, map[string]string{"a": "PASSED", "b": "ERROR"}, false,
			"test_failed: ERROR, p2p ratio 0"},
		{"missing f2p", []string{"a"}, nil, map[string]string{}, false, "test_failed: case not in sm"},
		{"missing p2p", []string{"a"}, []string{"b"}, map[string]string{"a": "PASSED"}, false,
			"test_failed: case not in sm"},
		{"skipped f2p alone", []string{"a"}, nil, map[string]string{"a": "SKIPPED"}, true,
			"SKIPPED is neither success nor failure; 0/0 is 1"},
		{"skipped f2p beside a pass", []string{"a", "b"}, nil, map[string]string{"a": "PASSED", "b": "SKIPPED"}, true,
			"1 success / (1 + 0)"},
		{"skipped f2p beside a failure", []string{"a", "b"}, nil, map[string]string{"a": "FAILED", "b": "SKIPPED"},
			false, "0 / (0 + 1)"},
		{"skipped p2p", []string{"a"}, []string{"b"}, map[string]string{"a": "PASSED", "b": "SKIPPED"}, true,
			"p2p 0/0 is 1"},
		{"unknown status", []string{"a"}, []string{"b"}, map[string]string{"a": "PASSED", "b": "XPASS"}, true,
			"a status outside PASSED/XFAIL/FAILED/ERROR is neither"},
		{"unknown status from pytest's 'ERROR: not found'", []string{"a"}, nil, map[string]string{"a": "ERROR:"}, true,
			"'ERROR:' is not 'ERROR': neither"},
		{"empty lists", nil, nil, map[string]string{"a": "FAILED"}, true, "both ratios 0/0 are 1"},
		{"empty f2p, passing p2p", nil, []string{"b"}, map[string]string{"b": "PASSED"}, true, "f2p 0/0 is 1"},
		{"empty f2p, failing p2p", nil, []string{"b"}, map[string]string{"b": "FAILED"}, false, "p2p 0/1"},
		{"empty f2p, missing p2p", nil, []string{"b"}, map[string]string{}, false, "p2p: not in sm fails"},
		{"same name in both lists", []string{"a"}, []string{"a"}, map[string]string{"a": "PASSED"}, true,
			"counted in each list, passes in each"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := harnessResolved(c.f2p, c.p2p, c.sm); got != c.resolved {
				t.Fatalf("the table row disagrees with grading.py's arithmetic: %v (%s)", got, c.why)
			}
			if v := Decide(c.f2p, c.p2p, reportOf(c.sm)); v.Resolved != c.resolved {
				t.Errorf("Decide resolved = %v, want %v (%s): %+v", v.Resolved, c.resolved, c.why, v)
			}
		})
	}
}

// Every combination of two FAIL_TO_PASS and two PASS_TO_PASS tests over every status (and absence) resolves in
// Decide exactly when grading.py's arithmetic says so, and each test lands in the bucket test_passed/test_failed put
// it in.
func TestDecideMatchesHarnessEveryCombination(t *testing.T) {
	statuses := []string{"", "PASSED", "XFAIL", "FAILED", "ERROR", "SKIPPED", "XPASS"}
	names := []string{"f1", "f2", "p1", "p2"}
	n := 0
	var walk func(i int, sm map[string]string)
	walk = func(i int, sm map[string]string) {
		if i == len(names) {
			n++
			f2p, p2p := names[:2], names[2:]
			want := harnessResolved(f2p, p2p, sm)
			v := Decide(f2p, p2p, reportOf(sm))
			if v.Resolved != want {
				t.Errorf("%v: Decide resolved = %v, grading.py %v (%+v)", sm, v.Resolved, want, v)
			}
			for _, name := range names {
				st, in := sm[name]
				bucket := "skipped"
				switch {
				case in && (st == "PASSED" || st == "XFAIL"):
					bucket = "passed"
				case !in:
					bucket = "missing"
				case st == "FAILED" || st == "ERROR":
					bucket = "failed"
				}
				if got := bucketOf(v, name); got != bucket {
					t.Errorf("%v: %s is %s, want %s", sm, name, got, bucket)
				}
			}
			return
		}
		for _, st := range statuses {
			next := map[string]string{}
			for k, v := range sm {
				next[k] = v
			}
			if st != "" {
				next[names[i]] = st
			}
			walk(i+1, next)
		}
	}
	walk(0, map[string]string{})
	if n != 7*7*7*7 {
		t.Fatalf("walked %d combinations", n)
	}
}

func bucketOf(v Verdict, name string) string {
	for _, b := range []struct {
		name  string
		names []string
	}{{"passed", v.Passed}, {"failed", v.Failed}, {"missing", v.Missing}, {"skipped", v.Skipped}} {
		if slices.Contains(b.names, name) {
			return b.name
		}
	}
	return "none"
}

// A Go name reported by several packages (a bare name runs in every package that declares it): a failure anywhere
// fails it; a skip in one package beside a pass in another is a pass, as a skip counts neither way.
func TestDecideGoNameInSeveralPackages(t *testing.T) {
	rep := Report{Tests: map[string][]TestResult{
		"TestPassSkip": {{Package: "m/a", Status: StatusPass}, {Package: "m/b", Status: StatusSkip}},
		"TestPassFail": {{Package: "m/a", Status: StatusPass}, {Package: "m/b", Status: StatusFail}},
		"TestSkipSkip": {{Package: "m/a", Status: StatusSkip}, {Package: "m/b", Status: StatusSkip}},
	}}
	for name, want := range map[string]string{"TestPassSkip": "passed", "TestPassFail": "failed",
		"TestSkipSkip": "skipped", "m/b::TestPassSkip": "skipped", "m/a::TestPassFail": "passed"} {
		if got := bucketOf(Decide([]string{name}, nil, rep), name); got != want {
			t.Errorf("%s: %s, want %s", name, got, want)
		}
	}
}

// Multi-SWE-bench's rule (multi_swe_bench/harness/report.py, Report.check, and gen_report.py's evaluation mode,
// multi-swe-bench/multi-swe-bench at commit fc0e95bc): a listed test resolves only with fix status PASS (a skip or
// absence is not in report.f2p_tests/p2p_tests); a test that passed with the test patch alone must not fail with
// the fix ("No new failures"); a test that passed at base and did not run or was skipped with the test patch must
// not fail with the fix ("Anomalous pattern"); something must be fixed ("Fix something"), so an empty
// FAIL_TO_PASS never resolves.
func TestDecideMultiSWEBench(t *testing.T) {
	rep := Report{Tests: map[string][]TestResult{
		"TestFixed": {{Status: StatusPass}}, "TestKept": {{Status: StatusPass}}, "TestSkipped": {{Status: StatusSkip}},
		"TestBroken": {{Status: StatusFail}}, "TestFine": {{Status: StatusPass}},
	}}
	for _, c := range []struct {
		name          string
		f2p, p2p, nnf []string
		resolved      bool
		regressed     []string
	}{
		{"listed tests pass", []string{"TestFixed"}, []string{"TestKept"}, nil, true, nil},
		{"a skipped listed test does not resolve", []string{"TestFixed", "TestSkipped"}, nil, nil, false, nil},
		{"a missing listed test does not resolve", []string{"TestFixed", "TestAbsent"}, nil, nil, false, nil},
		{"empty FAIL_TO_PASS fixes nothing", nil, []string{"TestKept"}, nil, false, nil},
		{"a test that passed before the fix fails with it", []string{"TestFixed"}, nil,
			[]string{"TestBroken", "TestFine"}, false, []string{"TestBroken"}},
		{"tests that must not fail pass, skip or do not run", []string{"TestFixed"}, nil,
			[]string{"TestFine", "TestSkipped", "TestAbsent"}, true, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := DecideMultiSWEBench(c.f2p, c.p2p, c.nnf, rep)
			if v.Resolved != c.resolved || !slices.Equal(v.Regressed, c.regressed) {
				t.Errorf("resolved %v regressed %v, want %v %v (%+v)", v.Resolved, v.Regressed, c.resolved,
					c.regressed, v)
			}
		})
	}
	// SWE-bench's rule on the same report resolves the skipped and the empty rows.
	if !Decide([]string{"TestFixed", "TestSkipped"}, nil, rep).Resolved || !Decide(nil, []string{"TestKept"}, rep).Resolved {
		t.Error("SWE-bench's rule should resolve a skipped FAIL_TO_PASS test and an empty FAIL_TO_PASS")
	}
}

// The harness's parsers through ParseHarness, then Decide: what a real log gives grading.py.
func TestDecideOnHarnessParsedLogs(t *testing.T) {
	log := strings.Join([]string{
		"PASSED tests/t.py::test_a",
		"SKIPPED tests/t.py::test_s - needs network",
		"XFAIL tests/t.py::test_x - known",
		"ERROR: not found: tests/t.py::test_gone",
		"FAILED tests/t.py::test_f - assert 1 == 2",
	}, "\n")
	rep, err := ParseHarness(ParserHarnessPytest, strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		f2p      []string
		resolved bool
	}{
		{[]string{"tests/t.py::test_a", "tests/t.py::test_s", "tests/t.py::test_x"}, true},
		{[]string{"tests/t.py::test_a", "tests/t.py::test_f"}, false},
		{[]string{"tests/t.py::test_gone"}, false}, // named only as "not": absent
	} {
		if v := Decide(c.f2p, nil, rep); v.Resolved != c.resolved {
			t.Errorf("%v: resolved %v, want %v: %s", c.f2p, v.Resolved, c.resolved, fmt.Sprint(v))
		}
	}
}
