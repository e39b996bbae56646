package swebench

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const msbRow = `{"org":"acme","repo":"tool_kit","number":42,"state":"closed","title":"Fix the PR","body":"PR text",` +
	`"base":{"label":"acme:main","ref":"main","sha":"0123abcd"},"resolved_issues":[{"number":7,"title":"Crash on empty input","body":"It panics."},` +
	`{"number":8,"title":"Second","body":""}],"fix_patch":"diff fix","test_patch":"diff test",` +
	`"fixed_tests":{"x":{}},"p2p_tests":{"TestKeep":{"run":"PASS","test":"PASS","fix":"PASS"}},` +
	`"f2p_tests":{"TestFixed":{"run":"FAIL","test":"FAIL","fix":"PASS"}},"s2p_tests":{"TestSkipped":{}},` +
	`"n2p_tests":{"TestNew":{},"TestFixed":{}},"instance_id":"not used"}`

func TestReadMultiSWEBench(t *testing.T) {
	rows, err := Read(strings.NewReader(msbRow+"\n"), "msb.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	in := rows[0]
	if in.InstanceID != "acme__tool_kit-42" || in.Repo != "acme/tool_kit" || in.BaseCommit != "0123abcd" ||
		in.Patch != "diff fix" || in.TestPatch != "diff test" || in.Format != FormatMultiSWEBench {
		t.Errorf("instance %+v", in)
	}
	if in.ProblemStatement != "Crash on empty input\n\nIt panics.\n\nSecond" {
		t.Errorf("problem statement %q", in.ProblemStatement)
	}
	if !slices.Equal(in.FailToPass, []string{"TestFixed", "TestNew", "TestSkipped"}) || !slices.Equal(in.PassToPass, []string{"TestKeep"}) {
		t.Errorf("tests %v / %v", in.FailToPass, in.PassToPass)
	}
	org, repo, number, ok := ParseMultiSWEBenchID(in.InstanceID)
	if !ok || org != "acme" || repo != "tool_kit" || number != 42 {
		t.Errorf("parse %q: %s %s %d %v", in.InstanceID, org, repo, number, ok)
	}
	for _, id := range []string{"acme-42", "acme__tool", "__r-1", "a__r-x"} {
		if _, _, _, ok := ParseMultiSWEBenchID(id); ok {
			t.Errorf("%q parsed", id)
		}
	}

	// The format is decided per file: a JSON list of Multi-SWE-bench rows beside a SWE-bench JSONL shard.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.json"), []byte("["+msbRow+"]"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "b.jsonl"), []byte(good+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rows, err = ReadFile(dir)
	if err != nil || len(rows) != 2 || rows[0].Format != FormatMultiSWEBench || rows[1].Format != "" {
		t.Fatalf("mixed folder: %v %+v", err, rows)
	}

	for _, tc := range []struct{ name, from, to, want string }{
		{"number", `"number":42`, `"number":"x42"`, "msb.jsonl:1: field number: want a pull request number"},
		{"tests", `"p2p_tests":{"TestKeep"`, `"p2p_tests":["TestKeep"],"z":{"a"`, "field p2p_tests: want an object keyed by test name"},
		{"base", `"base":{"label"`, `"base":"0123","b":{"label"`, "(instance acme__tool_kit-42): field base: want an object"},
		{"no tests", `"f2p_tests":{"TestFixed"`, `"f2p_tests":null,"y":{"TestFixed"`, ""},
		{"no issues", `"resolved_issues":[`, `"resolved_issues":null,"w":[`, "lacks required fields: problem_statement"},
	} {
		row := strings.Replace(msbRow, tc.from, tc.to, 1)
		if row == msbRow {
			t.Fatalf("%s: replacement did not apply", tc.name)
		}
		rows, err := Read(strings.NewReader(row), "msb.jsonl")
		if tc.want == "" {
			// Without f2p the s2p and n2p tests still make FAIL_TO_PASS.
			if err != nil || !slices.Equal(rows[0].FailToPass, []string{"TestFixed", "TestNew", "TestSkipped"}) {
				t.Errorf("%s: %v %v", tc.name, err, rows)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
}

// A row that carries the harness's run results (run_result: base_commit; test_patch_result: the test patch alone)
// lists the tests Multi-SWE-bench forbids the fix to fail (report.py, Report.check): those that passed with the test
// patch ("No new failures"), and those that passed at base and were skipped or did not run with the test patch
// ("Anomalous pattern"). Listed tests are not repeated; a test that failed before is not one of them.
func TestMultiSWEBenchNoNewFailures(t *testing.T) {
	row := strings.TrimSuffix(msbRow, "}") + `,"run_result":{"passed_count":4,"failed_count":1,"skipped_count":1,` +
		`"passed_tests":["TestKeep","TestOld","TestVanished","TestNowSkipped"],"failed_tests":["TestFixed"],"skipped_tests":["TestWasSkipped"]},` +
		`"test_patch_result":{"passed_count":3,"failed_count":2,"skipped_count":2,` +
		`"passed_tests":["TestKeep","TestOld","TestExtra"],"failed_tests":["TestFixed","TestBrokenByTests"],` +
		`"skipped_tests":["TestNowSkipped","TestWasSkipped"]},` +
		`"fix_patch_result":{"passed_count":0,"failed_count":0,"skipped_count":0,"passed_tests":[],"failed_tests":[],"skipped_tests":[]}}`
	rows, err := Read(strings.NewReader(row), "msb.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"TestExtra", "TestNowSkipped", "TestOld", "TestVanished"}
	if got := rows[0].NoNewFailures; !slices.Equal(got, want) {
		t.Errorf("NoNewFailures = %v, want %v", got, want)
	}
	// Without the run results the row lists none (its tests' run/test/fix dicts cover only the listed tests).
	rows, err = Read(strings.NewReader(msbRow), "msb.jsonl")
	if err != nil || len(rows[0].NoNewFailures) != 0 {
		t.Errorf("row without run results: %v %v", err, rows[0].NoNewFailures)
	}
	bad := strings.Replace(row, `"passed_tests":["TestKeep","TestOld","TestExtra"]`, `"passed_tests":"TestKeep"`, 1)
	if _, err := Read(strings.NewReader(bad), "msb.jsonl"); err == nil ||
		!strings.Contains(err.Error(), "field test_patch_result.passed_tests") {
		t.Errorf("malformed test_patch_result: %v", err)
	}
}
