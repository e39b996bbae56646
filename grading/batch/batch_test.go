package batch

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"ctxlab/dataset/swebench"
	"ctxlab/grading"
	"ctxlab/results"
	"ctxlab/results/predictions"
	"ctxlab/runfolder"
	"ctxlab/specs"
	"ctxlab/store/cas"
)

// writeDataset writes a dataset of the instances ids (each with a gold patch naming it) and returns its path.
func writeDataset(t *testing.T, ids ...string) string {
	t.Helper()
	var b strings.Builder
	for _, id := range ids {
		b.WriteString(`{"instance_id": "` + id + `", "repo": "acme/x", "base_commit": "0123456789abcdef0123456789abcdef01234567", ` +
			`"patch": "gold of ` + id + `", "test_patch": "diff", "problem_statement": "p", ` +
			`"FAIL_TO_PASS": ["TestA"], "PASS_TO_PASS": []}` + "\n")
	}
	p := filepath.Join(t.TempDir(), "d.jsonl")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRead: a predictions file is split into the dataset's instances and the unknown ones (sorted, each once);
// gold and empty make one prediction per instance, the gold patch or the no-fix patch; Graded names each
// predicted instance once, in the predictions' order.
func TestRead(t *testing.T) {
	ds := writeDataset(t, "b-1", "a-1")
	preds := filepath.Join(t.TempDir(), "p.jsonl")
	if err := predictions.WriteFile(preds, []predictions.Prediction{
		{InstanceID: "b-1", ModelNameOrPath: "m", ModelPatch: "x"},
		{InstanceID: "z-9", ModelNameOrPath: "m", ModelPatch: "x"},
		{InstanceID: "a-1", ModelNameOrPath: "m", ModelPatch: "x"},
		{InstanceID: "b-1", ModelNameOrPath: "m2", ModelPatch: "y"},
		{InstanceID: "c-3", ModelNameOrPath: "m", ModelPatch: "x"},
		{InstanceID: "z-9", ModelNameOrPath: "m2", ModelPatch: "x"},
	}); err != nil {
		t.Fatal(err)
	}
	in, err := Read(ds, preds)
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Predictions) != 3 || in.Ignored != 3 || !slices.Equal(in.Unknown, []string{"c-3", "z-9"}) {
		t.Errorf("predictions %d, ignored %d, unknown %v", len(in.Predictions), in.Ignored, in.Unknown)
	}
	var graded, all []string
	for _, g := range in.Graded() {
		graded = append(graded, g.InstanceID)
	}
	for _, g := range in.Dataset() {
		all = append(all, g.InstanceID)
	}
	if !slices.Equal(graded, []string{"b-1", "a-1"}) || !slices.Equal(all, []string{"a-1", "b-1"}) {
		t.Errorf("graded %v, dataset %v", graded, all)
	}

	for _, mode := range []string{Gold, Empty} {
		in, err := Read(ds, mode)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range in.Predictions {
			want := NoFixPatch
			if mode == Gold {
				want = "gold of " + p.InstanceID
			}
			if p.ModelNameOrPath != mode || p.ModelPatch != want {
				t.Errorf("%s: %+v", mode, p)
			}
		}
		if len(in.Predictions) != 2 || len(in.Unknown) != 0 {
			t.Errorf("%s: %+v", mode, in)
		}
	}
	if _, err := Read(ds, filepath.Join(t.TempDir(), "gold")); err == nil {
		t.Error("a missing file named gold was read as the gold validation")
	}
}

// gradedRow is the row a fake grader gives a prediction: resolved when its patch says so, an error when it says
// that.
func gradedRow(inst swebench.Instance, p predictions.Prediction) results.Row {
	row := results.Row{results.FieldInstance: inst.InstanceID, results.FieldMethod: "m", results.FieldModel: p.ModelNameOrPath}
	switch p.ModelPatch {
	case "error":
		row[results.FieldError] = "the checkout failed"
	default:
		specs.Resolved.Set(row, p.ModelPatch == "fix")
		row[specs.GradeStatus.Name] = "graded"
	}
	return row
}

// TestGradeAllAndWrite: every prediction is graded once, at most concurrency at once, its row in its place; Write
// replaces an earlier run's rows of the same keys and writes the harness's run report; Errored and Invalid name
// the rows that errored and that fail a validation.
func TestGradeAllAndWrite(t *testing.T) {
	ds := writeDataset(t, "a-1", "b-1", "c-1")
	in, err := Read(ds, Gold)
	if err != nil {
		t.Fatal(err)
	}
	in.Predictions[0].ModelPatch, in.Predictions[1].ModelPatch, in.Predictions[2].ModelPatch = "fix", "nothing", "error"
	var running, most atomic.Int32
	grade := func(ctx context.Context, inst swebench.Instance, p predictions.Prediction) grading.Graded {
		n := running.Add(1)
		defer running.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(20 * time.Millisecond)
		return grading.Graded{Row: gradedRow(inst, p)}
	}
	done := GradeAll(context.Background(), in, grade, 2, zerolog.Nop())
	if most.Load() != 2 {
		t.Errorf("%d graded at once, want 2", most.Load())
	}
	for i, d := range done {
		if d.Row.String(results.FieldInstance) != in.Predictions[i].InstanceID {
			t.Errorf("row %d is %s's", i, d.Row.String(results.FieldInstance))
		}
	}

	runDir := filepath.Join(t.TempDir(), "grade-gold")
	store, err := cas.NewDir(filepath.Join(runDir, "cas"))
	if err != nil {
		t.Fatal(err)
	}
	run := grading.HarnessRun{ID: "grade-gold", Dataset: ds, Predictions: Gold, Executor: "local"}
	for range 2 { // a second run's rows replace the first's
		if _, err := Write(context.Background(), store, runDir, run, in, done); err != nil {
			t.Fatal(err)
		}
	}
	rows, bad, err := results.ReadFile(runfolder.Rows(runDir))
	if err != nil || len(bad) != 0 || len(rows) != 3 {
		t.Fatalf("%d rows, %d bad lines, %v", len(rows), len(bad), err)
	}
	if _, err := os.Stat(filepath.Join(runDir, "logs", "run_evaluation", "grade-gold", "run.json")); err != nil {
		t.Errorf("no harness run metadata: %v", err)
	}
	if got := Errored(rows); !slices.Equal(got, []string{"c-1"}) {
		t.Errorf("errored %v", got)
	}
	var invalid []string
	for _, r := range Invalid(Gold, rows) {
		invalid = append(invalid, r.String(results.FieldInstance))
	}
	if !slices.Equal(invalid, []string{"b-1", "c-1"}) {
		t.Errorf("invalid under gold: %v", invalid)
	}
	if n := len(Invalid(Empty, rows)); n != 1 {
		t.Errorf("%d invalid under empty, want 1 (the resolved one)", n)
	}
}
