package grading

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"ctxlab/activities/api/errkind"
	"ctxlab/dataset/swebench"
	"ctxlab/results"
	"ctxlab/results/predictions"
	"ctxlab/specs"
	"ctxlab/store/cas"
)

// Each kind of graded row lands in one list of the harness's run report, with 5.0's label where it has one, and
// gets the instance folder the harness would write for it: a report.json only for a grade that ran the tests, no
// folder at all for an empty patch. (starter/e2e's TestGradeWritesHarnessOutput reads a real grade run's output
// with the harness's own reading.)
func TestWriteHarnessOutput(t *testing.T) {
	row := func(fields map[string]any) results.Row { return results.Row(fields) }
	status := specs.GradeStatus.Name
	cases := []struct {
		id   string
		row  results.Row
		list string
		// report says a report.json is written, folder that the instance has a folder at all.
		report, folder bool
		reason         string
	}{
		{"resolved", row(map[string]any{status: StatusResolved}), "resolved_ids", true, true, ""},
		{"unresolved", row(map[string]any{status: StatusUnresolved}), "unresolved_ids", true, true, ""},
		{"oom", row(map[string]any{status: StatusUnresolved, specs.GradeExitCode.Name: 137.0}), "unresolved_ids", true,
			true, ReasonOutOfMemory},
		{"timeout", row(map[string]any{status: StatusTimeout}), "unresolved_ids", true, true, ReasonTestsTimedOut},
		{"empty", row(map[string]any{status: StatusEmptyPatch}), "empty_patch_ids", false, false, ""},
		{"malformed", row(map[string]any{status: StatusMalformed}), "error_ids", false, true, ""},
		{"repo", row(map[string]any{results.FieldError: "no repository", results.FieldErrorKind: string(errkind.RepoUnavailable)}),
			"infra_failure_ids", false, true, string(errkind.RepoUnavailable)},
		{"ratelimit", row(map[string]any{results.FieldError: "slow down", results.FieldErrorKind: string(errkind.RateLimit)}),
			"error_ids", false, true, ""},
	}
	var dataset []swebench.Instance
	var preds []predictions.Prediction
	var out []Graded
	for _, c := range cases {
		dataset = append(dataset, swebench.Instance{InstanceID: c.id, FailToPass: []string{"t"}})
		preds = append(preds, predictions.Prediction{InstanceID: c.id, ModelNameOrPath: "org/m", ModelPatch: "p"})
		out = append(out, Graded{Row: c.row})
	}
	dataset = append(dataset, swebench.Instance{InstanceID: "unsubmitted"})
	store, err := cas.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	run := HarnessRun{ID: "r1", Dataset: "d.jsonl", Predictions: "p.jsonl", Executor: "local", Timeout: time.Minute}
	if err := WriteHarnessOutput(context.Background(), store, dir, run, dataset, preds, out); err != nil {
		t.Fatal(err)
	}
	var report map[string]any
	readJSON(t, filepath.Join(dir, "org__m.r1.json"), &report)
	for _, c := range cases {
		if !slices.Contains(asStrings(report[c.list]), c.id) {
			t.Errorf("%s: not in %s: %v", c.id, c.list, report)
		}
		reasons, _ := report["failure_reasons"].(map[string]any)
		if got, _ := reasons[c.id].(string); got != c.reason {
			t.Errorf("%s: failure reason %q, want %q", c.id, got, c.reason)
		}
		folder := filepath.Join(dir, "logs/run_evaluation/r1/org__m", c.id)
		_, err := os.Stat(folder)
		if c.folder != (err == nil) {
			t.Errorf("%s: folder written %v, want %v", c.id, err == nil, c.folder)
		}
		if _, err := os.Stat(filepath.Join(folder, "report.json")); c.report != (err == nil) {
			t.Errorf("%s: report.json written %v, want %v", c.id, err == nil, c.report)
		}
	}
	if got := asStrings(report["incomplete_ids"]); !slices.Equal(got, []string{"unsubmitted"}) {
		t.Errorf("incomplete_ids %v, want [unsubmitted]", got)
	}
	if report["submitted_instances"] != float64(len(cases)) || report["total_instances"] != float64(len(dataset)) {
		t.Errorf("counts: %v", report)
	}
	var meta map[string]any
	readJSON(t, filepath.Join(dir, "logs/run_evaluation/r1/run.json"), &meta)
	if meta["run_id"] != "r1" || meta["timeout"] != 60.0 || meta["ctxlab_executor"] != "local" {
		t.Errorf("run.json: %v", meta)
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// A row's explanation is its first error line, else its listed tests that did not pass, read alike from a row as
// the grade made it and as the run folder reads it back from JSON.
func TestExplanation(t *testing.T) {
	made := results.Row{specs.TestsFailed.Name: []string{"a", "b"}, specs.TestsMissing.Name: []string{"c"}}
	b, err := json.Marshal(made)
	if err != nil {
		t.Fatal(err)
	}
	var read results.Row
	if err := json.Unmarshal(b, &read); err != nil {
		t.Fatal(err)
	}
	for _, r := range []results.Row{made, read} {
		if got, want := Explanation(r), "missing: c; failed: a, b"; got != want {
			t.Errorf("Explanation(%v) = %q, want %q", r, got, want)
		}
	}
	long := results.Row{specs.GradeError.Name: "\n" + strings.Repeat("x", 200) + "\nsecond line",
		specs.TestsFailed.Name: []string{"a"}}
	if got := Explanation(long); got != strings.Repeat("x", 160)+"..." {
		t.Errorf("Explanation of an error: %q", got)
	}
}
