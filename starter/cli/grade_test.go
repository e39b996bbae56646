package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ctxlab/activities/predictions"
	"ctxlab/demobench"
	"ctxlab/results"
)

func TestParseGradeFlags(t *testing.T) {
	var stderr bytes.Buffer
	o, err := parseGrade([]string{"--dataset", "d.jsonl", "--predictions", "p/x.jsonl", "--reruns", "2",
		"--executor", "docker", "--timeout", "5m"}, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if o.name != "grade-x" || o.grading.Reruns != 2 || o.grading.Executor != "docker" || o.grading.Timeout.D().Minutes() != 5 {
		t.Errorf("parsed %+v", o)
	}
	if o, err := parseGrade([]string{"--dataset", "data/test-00000-of-00001.parquet", "--predictions", "gold"}, &stderr); err != nil ||
		o.name != "grade-gold" || !isValidation(o.predictions) {
		t.Errorf("gold: %+v %v", o, err)
	}
	if isValidation("./gold") {
		t.Error("a file path ./gold is taken for the gold mode")
	}
	for _, bad := range [][]string{{"--dataset", "d"}, {"--predictions", "p"},
		{"--dataset", "d", "--predictions", "p", "--executor", "k8s"}, {"--dataset", "d", "--predictions", "p", "extra"}} {
		if _, err := parseGrade(bad, &stderr); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

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
		// The demo's grading options (specs/demo.jsonnet): its dataset's module proxy, Python tests by listed ids.
		code := Main([]string{"grade", "--dataset", bench.File, "--predictions", file, "--runs", runs, "--quiet",
			"--goproxy", "file://{dataset_dir}/goproxy", "--tests", "listed"}, &out, &errb)
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s", c.name, code, errb.String())
		}
		rows, bad, err := results.ReadFile(filepath.Join(runs, "grade-"+c.name, "results.jsonl"))
		if err != nil || len(bad) > 0 || len(rows) != len(c.preds) {
			t.Fatalf("%s: %d rows, %v, %v", c.name, len(rows), bad, err)
		}
		resolved := 0
		for _, r := range rows {
			if v, _ := r.Bool(results.FieldResolved); v {
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
	if code := Main([]string{"predictions", "grade-gold", "--runs", runs}, &out, &errb); code != 0 {
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
	if code := Main([]string{"grade", "--dataset", bench.File, "--predictions", file, "--runs", runs}, &out, &errb); code != exitUsage ||
		!strings.Contains(errb.String(), "nobody__nothing-1") {
		t.Errorf("stray prediction: exit %d: %s", code, errb.String())
	}
}
