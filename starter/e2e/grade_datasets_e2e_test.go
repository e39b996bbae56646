package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"ctxlab/dataset/swebench"
	"ctxlab/demobench"
	"ctxlab/results"
	"ctxlab/specs"
	"ctxlab/starter/cli"
	"ctxlab/testkit/e2e"
)

// hfParquetRow is a SWE-bench row as the Hugging Face download lays it out: test lists as JSON-encoded strings.
type hfParquetRow struct {
	InstanceID       string `parquet:"instance_id"`
	Repo             string `parquet:"repo"`
	BaseCommit       string `parquet:"base_commit"`
	ProblemStatement string `parquet:"problem_statement"`
	Patch            string `parquet:"patch"`
	TestPatch        string `parquet:"test_patch"`
	FailToPass       string `parquet:"FAIL_TO_PASS"`
	PassToPass       string `parquet:"PASS_TO_PASS"`
	Version          string `parquet:"version"`
}

func writeHFParquet(t *testing.T, path string, rows []swebench.Instance) {
	t.Helper()
	var out []hfParquetRow
	for _, in := range rows {
		f2p, _ := json.Marshal([]string(in.FailToPass))
		p2p, _ := json.Marshal(append([]string{}, in.PassToPass...))
		out = append(out, hfParquetRow{InstanceID: in.InstanceID, Repo: in.Repo, BaseCommit: in.BaseCommit,
			ProblemStatement: in.ProblemStatement, Patch: in.Patch, TestPatch: in.TestPatch, FailToPass: string(f2p),
			PassToPass: string(p2p), Version: "1.0"})
	}
	var buf bytes.Buffer
	if err := parquet.Write(&buf, out); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeMultiSWEBench writes the instances as Multi-SWE-bench rows: pull request number i+1 of each repository, the
// issue as a resolved issue, the first FAIL_TO_PASS test as f2p and the others as n2p (tests the fix adds).
func writeMultiSWEBench(t *testing.T, path string, rows []swebench.Instance) {
	t.Helper()
	var buf bytes.Buffer
	tests := func(names []string) map[string]any {
		m := map[string]any{}
		for _, n := range names {
			m[n] = map[string]string{"run": "NONE", "test": "FAIL", "fix": "PASS"}
		}
		return m
	}
	for i, in := range rows {
		org, repo, _ := strings.Cut(in.Repo, "/")
		title, body, _ := strings.Cut(in.ProblemStatement, "\n")
		row := map[string]any{"org": org, "repo": repo, "number": i + 1, "state": "closed", "title": "PR title",
			"body": "PR body", "base": map[string]string{"label": org + ":main", "ref": "main", "sha": in.BaseCommit},
			"resolved_issues": []map[string]any{{"number": 100 + i, "title": title, "body": body}},
			"fix_patch":       in.Patch, "test_patch": in.TestPatch,
			"f2p_tests": tests(in.FailToPass[:1]), "n2p_tests": tests(in.FailToPass[1:]), "s2p_tests": map[string]any{},
			"p2p_tests": tests(in.PassToPass)}
		b, err := json.Marshal(row)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(append(b, '\n'))
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Done when: `starter grade --predictions gold` on a parquet file and on a Multi-SWE-bench file written here resolves
// every instance and `--predictions empty` none; a dataset whose gold does not resolve fails validation, naming the
// instance and its grade_status.
func TestGradeValidatesParquetAndMultiSWEBenchDatasets(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	bench, err := demobench.Generate(filepath.Join(root, "dataset"))
	if err != nil {
		t.Fatal(err)
	}
	few := e2e.FewDemoInstances(t, bench)
	parquetFile := filepath.Join(root, "hf", "data", "test-00000-of-00001.parquet")
	writeHFParquet(t, parquetFile, few)
	msbFile := filepath.Join(root, "msb", "go_and_python.jsonl")
	if err := os.MkdirAll(filepath.Dir(msbFile), 0o755); err != nil {
		t.Fatal(err)
	}
	writeMultiSWEBench(t, msbFile, few)
	// The datasets live apart from the demo's repositories and module proxy, so both are named absolutely.
	grade := func(dataset, mode, name string) (int, string, []results.Row) {
		t.Helper()
		runs := filepath.Join(root, "runs")
		var out, errb bytes.Buffer
		code := cli.Main([]string{"grade", "--dataset", dataset, "--predictions", mode, "--name", name, "--runs", runs,
			"--quiet", "--repos", filepath.Join(bench.DatasetDir, "repos", "{repo}"),
			"--goproxy", "file://" + filepath.Join(bench.DatasetDir, "goproxy"), "--tests", "listed",
			"--test-cmd", demoTestCmd}, &out, &errb)
		rows, bad, err := results.ReadFile(filepath.Join(runs, name, "results.jsonl"))
		if err != nil || len(bad) > 0 {
			t.Fatalf("%s: %v %v\n%s", name, bad, err, errb.String())
		}
		return code, out.String() + errb.String(), rows
	}
	for _, c := range []struct{ name, dataset string }{{"parquet", parquetFile}, {"msb", msbFile}} {
		for _, mode := range []string{"gold", "empty"} {
			code, out, rows := grade(c.dataset, mode, c.name+"-"+mode)
			resolved := 0
			for _, r := range rows {
				if v, _ := r.Bool(specs.Resolved.Name); v {
					resolved++
				}
				// Empty means no fix, with the tests run: a FAIL_TO_PASS test that passes without the fix must show.
				if st := r.String("grade_status"); mode == "empty" && (st == "empty_patch" || r.String("patch_apply") != "applied") {
					t.Errorf("%s empty: %s graded without running its tests: %s", c.name, r.String(results.FieldInstance), st)
				}
				t.Logf("%s %s: %s %s", c.name, mode, r.String(results.FieldInstance), r.String("grade_status"))
				if r.String(results.FieldModel) != mode {
					t.Errorf("%s %s: row model %q", c.name, mode, r.String(results.FieldModel))
				}
				if c.name == "msb" && !strings.HasSuffix(r.String(results.FieldInstance), "-1") &&
					!strings.HasSuffix(r.String(results.FieldInstance), "-2") {
					t.Errorf("msb: instance id %q is not org__repo-number", r.String(results.FieldInstance))
				}
			}
			want := map[string]int{"gold": len(few), "empty": 0}[mode]
			if code != 0 || len(rows) != len(few) || resolved != want {
				t.Errorf("%s %s: exit %d, %d of %d resolved, want %d\n%s", c.name, mode, code, resolved, len(rows), want, out)
			}
			if !strings.Contains(out, "the dataset is valid") {
				t.Errorf("%s %s: no validation line:\n%s", c.name, mode, out)
			}
		}
	}

	// A gold patch that cannot resolve: its f2p test does not exist. Validation fails and says why.
	broken := []swebench.Instance{few[0]}
	broken[0].FailToPass = []string{"TestNoSuchTest"}
	brokenFile := filepath.Join(root, "msb", "broken.jsonl")
	writeMultiSWEBench(t, brokenFile, broken)
	code, out, rows := grade(brokenFile, "gold", "broken-gold")
	if code != exitFail || len(rows) != 1 {
		t.Fatalf("broken gold: exit %d, %d rows\n%s", code, len(rows), out)
	}
	t.Logf("broken gold:\n%s", out)
	id := rows[0].String(results.FieldInstance)
	status := rows[0].String("grade_status")
	if status == "" || status == "resolved" || !strings.Contains(out, "validation: 0 of 1 gold patches resolve") ||
		!strings.Contains(out, id+"\t"+status+"\tmissing: TestNoSuchTest") {
		t.Errorf("broken gold: status %q, summary:\n%s", status, out)
	}

	// An empty patch that resolves: FAIL_TO_PASS names a test that already passes. Validation fails on it.
	passing := []swebench.Instance{few[0]}
	if len(passing[0].PassToPass) == 0 {
		t.Fatalf("instance %s has no PASS_TO_PASS test to use", passing[0].InstanceID)
	}
	passing[0].FailToPass = passing[0].PassToPass[:1]
	passingFile := filepath.Join(root, "msb", "already_passing.jsonl")
	writeMultiSWEBench(t, passingFile, passing)
	code, out, rows = grade(passingFile, "empty", "passing-empty")
	if code != exitFail || len(rows) != 1 || !strings.Contains(out, "validation: 1 of 1 empty patches resolve") ||
		!strings.Contains(out, "FAIL_TO_PASS tests pass without a fix:\n  "+rows[0].String(results.FieldInstance)+"\t") {
		t.Errorf("empty that resolves: exit %d, %d rows\n%s", code, len(rows), out)
	}
}
