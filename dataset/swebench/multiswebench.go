package swebench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Multi-SWE-bench rows name a pull request (org, repo, number), its base commit (base.sha), the fix and test patches
// and the issues it resolves, and list the tests by how they changed between the run with the test patch alone and
// the run with both patches, each a dict keyed by test name.
//
// Which tests a resolved instance must pass: the harness (multi_swe_bench/harness/report.py, Report.check, step
// "Fix something") counts as fixed every test whose status with the test patch alone is not PASS and with the fix
// is PASS; the dataset splits those by their status before the fix (f2p: FAIL, s2p: SKIP, n2p: NONE, the test did
// not exist or did not run), and a test that passed with the test patch must not fail with the fix (step "No new
// failures"), which are the p2p tests. So FAIL_TO_PASS is the union of the f2p, s2p and n2p keys, and PASS_TO_PASS
// the p2p keys.

// MultiSWEBenchID is the instance id of a Multi-SWE-bench pull request, as the harness names it: org__repo-number.
func MultiSWEBenchID(org, repo string, number int) string {
	return fmt.Sprintf("%s__%s-%d", org, repo, number)
}

// ParseMultiSWEBenchID undoes MultiSWEBenchID. GitHub organisations cannot hold "__", so the first "__" ends the org;
// the number follows the last "-".
func ParseMultiSWEBenchID(id string) (org, repo string, number int, ok bool) {
	org, rest, found := strings.Cut(id, "__")
	i := strings.LastIndex(rest, "-")
	if !found || org == "" || i <= 0 {
		return "", "", 0, false
	}
	number, err := strconv.Atoi(rest[i+1:])
	if err != nil || number < 0 {
		return "", "", 0, false
	}
	return org, rest[:i], number, true
}

// msbIssue is one entry of a Multi-SWE-bench row's resolved_issues.
type msbIssue struct {
	Title string `json:"title"`
	Body  string `json:"body"`
}

// decodeMultiSWEBench converts a Multi-SWE-bench row into an instance, one field at a time so that an error names
// its field. The pull request's own title and body are not used: they describe the fix.
func decodeMultiSWEBench(r rawRow) (Instance, error) {
	in := Instance{Format: FormatMultiSWEBench}
	var org, repo string
	if err := decodeString(r.fields["org"], &org); err != nil {
		return in, r.fail("", "org", err)
	}
	if err := decodeString(r.fields["repo"], &repo); err != nil {
		return in, r.fail("", "repo", err)
	}
	number, err := decodeNumber(r.fields["number"])
	if err != nil {
		return in, r.fail("", "number", err)
	}
	if org == "" || repo == "" {
		return in, r.fail("", "", fmt.Errorf("row lacks required fields: org and repo"))
	}
	if err := CheckRepo(org + "/" + repo); err != nil {
		return in, r.fail("", "org, repo", err)
	}
	in.InstanceID = MultiSWEBenchID(org, repo, number)
	in.Repo = org + "/" + repo

	if raw := r.fields["base"]; len(raw) > 0 && string(raw) != "null" {
		var base map[string]json.RawMessage
		if err := json.Unmarshal(raw, &base); err != nil {
			return in, r.fail(in.InstanceID, "base", fmt.Errorf("want an object with sha, ref and label, got %.40s", raw))
		}
		if err := decodeString(base["sha"], &in.BaseCommit); err != nil {
			return in, r.fail(in.InstanceID, "base.sha", err)
		}
	}
	if err := decodeString(r.fields["fix_patch"], &in.Patch); err != nil {
		return in, r.fail(in.InstanceID, "fix_patch", err)
	}
	if err := decodeString(r.fields["test_patch"], &in.TestPatch); err != nil {
		return in, r.fail(in.InstanceID, "test_patch", err)
	}

	var issues []msbIssue
	if raw := r.fields["resolved_issues"]; len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &issues); err != nil {
			return in, r.fail(in.InstanceID, "resolved_issues", fmt.Errorf("want a list of {title, body}: %w", err))
		}
	}
	var statement []string
	for _, is := range issues {
		if text := strings.TrimSpace(is.Title + "\n\n" + is.Body); text != "" {
			statement = append(statement, text)
		}
	}
	in.ProblemStatement = strings.Join(statement, "\n\n")

	var fixed []string
	for _, name := range []string{"f2p_tests", "s2p_tests", "n2p_tests"} {
		tests, err := testNamesOf(r.fields[name])
		if err != nil {
			return in, r.fail(in.InstanceID, name, err)
		}
		fixed = append(fixed, tests...)
	}
	slices.Sort(fixed)
	in.FailToPass = slices.Compact(fixed)
	passing, err := testNamesOf(r.fields["p2p_tests"])
	if err != nil {
		return in, r.fail(in.InstanceID, "p2p_tests", err)
	}
	in.PassToPass = passing
	if in.NoNewFailures, err = noNewFailures(r, in); err != nil {
		return in, err
	}
	return in, nil
}

// Test statuses of Multi-SWE-bench's harness (multi_swe_bench/harness/test_result.py, TestStatus); NONE is a test a
// run did not report.
const (
	msbPass = "PASS"
	msbFail = "FAIL"
	msbSkip = "SKIP"
	msbNone = "NONE"
)

// noNewFailures lists the tests Report.check (multi_swe_bench/harness/report.py, multi-swe-bench/multi-swe-bench at
// commit fc0e95bc) forbids the fix to fail, besides the listed ones: those whose status with the test patch alone
// (test_patch_result) is PASS ("No new failures"), and those that passed at base_commit (run_result) and were
// skipped or absent with the test patch ("Anomalous pattern"). A row without these results lists none: its
// per-test {run, test, fix} dicts cover only the listed tests, which must pass anyway.
func noNewFailures(r rawRow, in Instance) (TestList, error) {
	run, err := msbStatuses(r, in, "run_result")
	if err != nil {
		return nil, err
	}
	test, err := msbStatuses(r, in, "test_patch_result")
	if err != nil {
		return nil, err
	}
	listed := map[string]bool{}
	for _, name := range append(append([]string{}, in.FailToPass...), in.PassToPass...) {
		listed[name] = true
	}
	var out []string
	for _, statuses := range []map[string]string{run, test} {
		for name := range statuses {
			st := test[name]
			if st == "" {
				st = msbNone
			}
			if listed[name] || slices.Contains(out, name) {
				continue
			}
			if st == msbPass || (run[name] == msbPass && (st == msbNone || st == msbSkip)) {
				out = append(out, name)
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// msbStatuses reads a run's results ({passed,failed,skipped}_tests, lists of names) into name -> status; absent or
// null is an empty run.
func msbStatuses(r rawRow, in Instance, field string) (map[string]string, error) {
	out := map[string]string{}
	raw := bytes.TrimSpace(r.fields[field])
	if len(raw) == 0 || string(raw) == "null" {
		return out, nil
	}
	var res map[string]json.RawMessage
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, r.fail(in.InstanceID, field, fmt.Errorf("want an object with passed_tests, failed_tests and skipped_tests, got %.40s", raw))
	}
	for _, part := range []struct{ key, status string }{
		{"passed_tests", msbPass}, {"failed_tests", msbFail}, {"skipped_tests", msbSkip},
	} {
		b := bytes.TrimSpace(res[part.key])
		if len(b) == 0 || string(b) == "null" {
			continue
		}
		var names []string
		if err := json.Unmarshal(b, &names); err != nil {
			return nil, r.fail(in.InstanceID, field+"."+part.key, fmt.Errorf("want a list of test names, got %.40s", b))
		}
		for _, name := range names {
			out[name] = part.status
		}
	}
	return out, nil
}

// testNamesOf returns the keys of a dict of tests in name order; absent and null are none.
func testNamesOf(raw json.RawMessage) ([]string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var tests map[string]json.RawMessage
	if err := json.Unmarshal(raw, &tests); err != nil {
		return nil, fmt.Errorf("want an object keyed by test name, got %.40s", raw)
	}
	names := make([]string, 0, len(tests))
	for name := range tests {
		names = append(names, name)
	}
	slices.Sort(names)
	return names, nil
}

// decodeNumber reads a pull request number written as a JSON number or a string of digits.
func decodeNumber(raw json.RawMessage) (int, error) {
	var s string
	if err := decodeString(raw, &s); err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 0 {
		return 0, fmt.Errorf("want a pull request number, got %.40q", s)
	}
	return n, nil
}
