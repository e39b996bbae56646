package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ctxlab/dataset/swebench"
	"ctxlab/demobench"
	"ctxlab/grading/batch"
	"ctxlab/results"
	"ctxlab/results/predictions"
	"ctxlab/runlog"
	"ctxlab/specs"
	"ctxlab/starter/cli"
	"ctxlab/testkit/e2e"
)

// Done when: `starter grade` with the demo's gold patches as predictions resolves every instance and with empty
// patches resolves none; the gold run's predictions export back to the file that was graded.
func TestGradeGoldAndEmptyPredictions(t *testing.T) {
	root := t.TempDir()
	t.Setenv("TMPDIR", t.TempDir())
	bench, err := demobench.Generate(filepath.Join(root, "dataset"))
	if err != nil {
		t.Fatal(err)
	}
	var gold, empty []predictions.Prediction
	for _, in := range bench.Instances {
		gold = append(gold, predictions.Prediction{InstanceID: in.InstanceID, ModelNameOrPath: "gold", ModelPatch: in.Patch})
		empty = append(empty, predictions.Prediction{InstanceID: in.InstanceID, ModelNameOrPath: "empty"})
	}
	runs := filepath.Join(root, "runs")
	for _, c := range []struct {
		name     string
		preds    []predictions.Prediction
		resolved int
	}{{"gold", gold, len(gold)}, {"empty", empty, 0}} {
		file := filepath.Join(root, c.name+".jsonl")
		if err := predictions.WriteFile(file, c.preds); err != nil {
			t.Fatal(err)
		}
		var out, errb bytes.Buffer
		// The demo's grading options (specs/demo.jsonnet): its dataset's module proxy, Python tests by listed ids,
		// with unittest.
		code := cli.Main([]string{"grade", "--dataset", bench.File, "--predictions", file, "--runs", runs, "--quiet",
			"--goproxy", "file://{dataset_dir}/goproxy", "--tests", "listed", "--test-cmd", demoTestCmd}, &out, &errb)
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s", c.name, code, errb.String())
		}
		rows, bad, err := results.ReadFile(filepath.Join(runs, "grade-"+c.name, "results.jsonl"))
		if err != nil || len(bad) > 0 || len(rows) != len(c.preds) {
			t.Fatalf("%s: %d rows, %v, %v", c.name, len(rows), bad, err)
		}
		resolved := 0
		for _, r := range rows {
			if v, _ := r.Bool(specs.Resolved.Name); v {
				resolved++
			}
			for _, f := range results.Required {
				if _, ok := r[f]; !ok {
					t.Errorf("%s: row %s lacks %s", c.name, r.String(results.FieldInstance), f)
				}
			}
			if c.name == "empty" && r.String("grade_status") != "empty_patch" {
				t.Errorf("empty: %v", r)
			}
			if r.String(results.FieldModel) != c.name || r.String(results.FieldMethod) != "predictions" {
				t.Errorf("%s: row key %v", c.name, r.Key())
			}
		}
		if resolved != c.resolved {
			t.Errorf("%s: %d of %d resolved, want %d", c.name, resolved, len(rows), c.resolved)
		}
		if !strings.Contains(out.String(), "| predictions | "+c.name+" | ") {
			t.Errorf("%s: summary:\n%s", c.name, out.String())
		}
	}

	// Export the gold run's predictions: the same patches come back, one file for its one model.
	var out, errb bytes.Buffer
	if code := cli.Main([]string{"predictions", "grade-gold", "--runs", runs}, &out, &errb); code != 0 {
		t.Fatalf("predictions: exit %d\n%s", code, errb.String())
	}
	back, err := predictions.ReadFile(filepath.Join(runs, "grade-gold", "predictions", "gold.jsonl"))
	if err != nil || len(back) != len(gold) {
		t.Fatalf("exported %d, %v\n%s", len(back), err, out.String())
	}
	want := map[string]string{}
	for _, p := range gold {
		want[p.InstanceID] = p.ModelPatch
	}
	for _, p := range back {
		if p.ModelNameOrPath != "gold" || want[p.InstanceID] != p.ModelPatch {
			t.Errorf("exported %s/%s differs", p.ModelNameOrPath, p.InstanceID)
		}
	}
	if left, _ := os.ReadDir(os.Getenv("TMPDIR")); len(left) != 0 {
		t.Errorf("grading left %d entries in the temporary folder", len(left))
	}

	// Unknown instances stop the run before anything is graded.
	file := filepath.Join(root, "stray.jsonl")
	if err := predictions.WriteFile(file, []predictions.Prediction{{InstanceID: "nobody__nothing-1"}}); err != nil {
		t.Fatal(err)
	}
	errb.Reset()
	if code := cli.Main([]string{"grade", "--dataset", bench.File, "--predictions", file, "--runs", runs}, &out, &errb); code != exitUsage ||
		!strings.Contains(errb.String(), "nobody__nothing-1") {
		t.Errorf("stray prediction: exit %d: %s", code, errb.String())
	}
}

// TestGradeCorrectedDatasetInSameRunFolder validates a dataset whose test patch happens to fix the bug (so the empty
// prediction resolves: invalid), then the corrected dataset, under the same run name: the second run must grade the
// corrected rows, not return the first's memoized grade, and its rows must replace the first's in results.jsonl.
func TestGradeCorrectedDatasetInSameRunFolder(t *testing.T) {
	root := t.TempDir()
	t.Setenv("TMPDIR", t.TempDir())
	bench, err := demobench.Generate(filepath.Join(root, "dataset"))
	if err != nil {
		t.Fatal(err)
	}
	inst := e2e.FewDemoInstances(t, bench)[0] // the Go one: its tests are quick
	broken := inst
	broken.TestPatch += inst.Patch // the gold fix inside the test patch
	dataset := filepath.Join(bench.DatasetDir, "validate.jsonl")
	write := func(in swebench.Instance) {
		t.Helper()
		var data bytes.Buffer
		if err := swebench.Write(&data, []swebench.Instance{in}); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dataset, data.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	runs := filepath.Join(root, "runs")
	validate := func() (int, string, results.Row) {
		t.Helper()
		var out, errb bytes.Buffer
		code := cli.Main([]string{"grade", "--dataset", dataset, "--predictions", "empty", "--runs", runs, "--name", "val",
			"--quiet", "--goproxy", "file://{dataset_dir}/goproxy", "--tests", "listed"}, &out, &errb)
		rows, bad, err := results.ReadFile(filepath.Join(runs, "val", "results.jsonl"))
		if err != nil || len(bad) > 0 || len(rows) != 1 {
			t.Fatalf("%d rows, %v, %v\n%s\n%s", len(rows), bad, err, out.String(), errb.String())
		}
		return code, out.String(), rows[0]
	}
	write(broken)
	if code, out, row := validate(); code != exitFail || row["resolved"] != true {
		t.Fatalf("a test patch that fixes the bug: exit %d, row %v; want exit %d and the empty patch resolved\n%s",
			code, row, exitFail, out)
	}
	write(inst)
	code, out, row := validate()
	if code != exitOK || !strings.Contains(out, "the dataset is valid") {
		t.Errorf("the corrected dataset: exit %d, want %d and a valid dataset\n%s", code, exitOK, out)
	}
	if row["resolved"] != false || row["grade_status"] == "resolved" {
		t.Errorf("results.jsonl keeps the first dataset's grade: %v", row)
	}
}

// TestGradeRunReusesGradesOfAnEarlierBuild: a grade run folder an earlier build made keeps its node memos under
// that build's node keys (starter grade keyed its nodes its own way before its runs were grade plans), which this
// build does not look up. Grading it again must grade nothing for real: every grade node is answered by the grade
// memo (runs/NAME/grades, keyed by the patch's content, the instance, the snapshot and the settings), and the rows
// come out equal.
func TestGradeRunReusesGradesOfAnEarlierBuild(t *testing.T) {
	root := t.TempDir()
	t.Setenv("TMPDIR", t.TempDir())
	bench, err := demobench.Generate(filepath.Join(root, "dataset"))
	if err != nil {
		t.Fatal(err)
	}
	var preds []predictions.Prediction
	for _, in := range e2e.FewDemoInstances(t, bench) {
		preds = append(preds, predictions.Prediction{InstanceID: in.InstanceID, ModelNameOrPath: "m", ModelPatch: in.Patch},
			predictions.Prediction{InstanceID: in.InstanceID, ModelNameOrPath: "m__none", ModelPatch: batch.NoFixPatch})
	}
	file := filepath.Join(root, "p.jsonl")
	if err := predictions.WriteFile(file, preds); err != nil {
		t.Fatal(err)
	}
	runs := filepath.Join(root, "runs")
	runDir := filepath.Join(runs, "grade-p")
	grade := func() []results.Row {
		t.Helper()
		var out, errb bytes.Buffer
		if code := cli.Main([]string{"grade", "--dataset", bench.File, "--predictions", file, "--runs", runs, "--quiet",
			"--goproxy", "file://{dataset_dir}/goproxy", "--tests", "listed", "--test-cmd", demoTestCmd}, &out,
			&errb); code != exitOK {
			t.Fatalf("exit %d\n%s", code, errb.String())
		}
		rows, bad, err := results.ReadFile(filepath.Join(runDir, "results.jsonl"))
		if err != nil || len(bad) > 0 || len(rows) != len(preds) {
			t.Fatalf("%d rows, %v, %v", len(rows), bad, err)
		}
		return rows
	}
	first := grade()
	// The earlier build's node memos: under keys this build never asks for, as if these were gone.
	if err := os.RemoveAll(filepath.Join(runDir, "nodes")); err != nil {
		t.Fatal(err)
	}
	attempts, _, err := runlog.Read[runlog.Attempt](filepath.Join(runDir, "attempts.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	second := grade()
	again, _, err := runlog.Read[runlog.Attempt](filepath.Join(runDir, "attempts.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	grades := 0
	for _, a := range again[len(attempts):] {
		if a.Activity == specs.Grade.Name && a.Event == runlog.EventDone {
			grades++
			if a.Reused == "" {
				t.Errorf("%s: the grade node ran the tests again instead of reusing the stored grade", a.Instance)
			}
		}
	}
	if grades != len(preds) {
		t.Errorf("%d grade nodes finished in the second run, want %d", grades, len(preds))
	}
	byKey := map[results.Key]results.Row{}
	for _, r := range first {
		byKey[r.Key()] = r
	}
	for _, r := range second {
		a, _ := json.Marshal(byKey[r.Key()])
		b, _ := json.Marshal(r)
		if !bytes.Equal(a, b) {
			t.Errorf("%v: the second run's row differs:\n%s\n%s", r.Key(), a, b)
		}
	}
}
