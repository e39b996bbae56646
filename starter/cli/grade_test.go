package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ctxlab/dataset/swebench"
	"ctxlab/demobench"
	"ctxlab/grading/batch"
	"ctxlab/results"
	"ctxlab/results/predictions"
	"ctxlab/specs"
	"ctxlab/starter/exitcode"
	"ctxlab/testkit/e2e"
)

// demoTestCmd is the --test-cmd of the demo's grading (specs/demo.jsonnet's grading.test_cmd): its Python tests are
// unittest's.
var demoTestCmd = `{"python": "` + demobench.PythonTestCmd + `"}`

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
		o.name != "grade-gold" || !batch.IsValidation(o.predictions) {
		t.Errorf("gold: %+v %v", o, err)
	}
	if batch.IsValidation("./gold") {
		t.Error("a file path ./gold is taken for the gold mode")
	}
	for _, bad := range [][]string{{"--dataset", "d"}, {"--predictions", "p"},
		{"--dataset", "d", "--predictions", "p", "--executor", "k8s"}, {"--dataset", "d", "--predictions", "p", "extra"}} {
		if _, err := parseGrade(bad, &stderr); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

// Predictions that name instances outside the dataset are all listed (the first 20, and how many more) and stop the
// run; --ignore-unknown grades the known ones and says how many it ignored.
func TestGradeUnknownInstances(t *testing.T) {
	root := t.TempDir()
	t.Setenv("TMPDIR", t.TempDir())
	bench, err := demobench.Generate(filepath.Join(root, "dataset"))
	if err != nil {
		t.Fatal(err)
	}
	known := bench.Instances[0].InstanceID
	preds := []predictions.Prediction{{InstanceID: known, ModelNameOrPath: "m"}}
	var stray []string
	for i := range 25 {
		id := fmt.Sprintf("nobody__nothing-%02d", i)
		stray = append(stray, id)
		preds = append(preds, predictions.Prediction{InstanceID: id, ModelNameOrPath: "m"})
	}
	file := filepath.Join(root, "mixed.jsonl")
	if err := predictions.WriteFile(file, preds); err != nil {
		t.Fatal(err)
	}
	runs := filepath.Join(root, "runs")
	var out, errb bytes.Buffer
	code := Main([]string{"grade", "--dataset", bench.File, "--predictions", file, "--runs", runs, "--quiet"}, &out, &errb)
	if code == exitcode.OK {
		t.Errorf("unknown instances: exit 0")
	}
	for _, id := range stray[:20] {
		if !strings.Contains(errb.String(), id) {
			t.Errorf("unknown instance %s is not listed:\n%s", id, errb.String())
		}
	}
	if !strings.Contains(errb.String(), "25 prediction") || !strings.Contains(errb.String(), "5 more") ||
		!strings.Contains(errb.String(), "--ignore-unknown") {
		t.Errorf("the message does not count them, say how many more, or offer --ignore-unknown:\n%s", errb.String())
	}
	if _, err := os.Stat(filepath.Join(runs, "grade-mixed", "results.jsonl")); err == nil {
		t.Error("rows were graded although the run stopped")
	}

	out.Reset()
	errb.Reset()
	code = Main([]string{"grade", "--dataset", bench.File, "--predictions", file, "--runs", runs, "--quiet",
		"--ignore-unknown"}, &out, &errb)
	if code != exitcode.OK {
		t.Fatalf("--ignore-unknown: exit %d\n%s", code, errb.String())
	}
	if !strings.Contains(errb.String(), "ignored 25") {
		t.Errorf("--ignore-unknown does not say how many it ignored:\n%s", errb.String())
	}
	rows, bad, err := results.ReadFile(filepath.Join(runs, "grade-mixed", "results.jsonl"))
	if err != nil || len(bad) > 0 || len(rows) != 1 || rows[0].String(results.FieldInstance) != known {
		t.Fatalf("--ignore-unknown graded %v (%v, %v), want only %s", rows, bad, err, known)
	}

	// Nothing known is nothing to grade, ignored or not.
	file = filepath.Join(root, "stray.jsonl")
	if err := predictions.WriteFile(file, preds[1:]); err != nil {
		t.Fatal(err)
	}
	errb.Reset()
	if code := Main([]string{"grade", "--dataset", bench.File, "--predictions", file, "--runs", runs, "--quiet",
		"--ignore-unknown"}, &out, &errb); code == exitcode.OK || !strings.Contains(errb.String(), "nothing to grade") {
		t.Errorf("only unknown instances, ignored: exit %d\n%s", code, errb.String())
	}
}

// A row that fails says its cause once (the activities' permanent errors carried their text twice), and the log
// line of each graded prediction gives its duration with a unit and a status only when there is one. The
// predictions are a one-line map keyed by instance id, as another harness writes them.
func TestGradeErrorRowAndLogLine(t *testing.T) {
	root := t.TempDir()
	t.Setenv("TMPDIR", t.TempDir())
	bench, err := demobench.Generate(filepath.Join(root, "dataset"))
	if err != nil {
		t.Fatal(err)
	}
	// A dataset beside the demo's whose first instance names a repository that is not there: its checkout fails,
	// the other's works.
	insts := []swebench.Instance{bench.Instances[0], bench.Instances[1]}
	insts[0].Repo = "nobody/gone"
	missing := filepath.Join(bench.DatasetDir, "repos", "nobody", "gone")
	var data bytes.Buffer
	if err := swebench.Write(&data, insts); err != nil {
		t.Fatal(err)
	}
	dataset := filepath.Join(bench.DatasetDir, "broken.jsonl")
	if err := os.WriteFile(dataset, data.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	broken, fine := insts[0].InstanceID, insts[1].InstanceID
	file := filepath.Join(root, "map.json")
	oneLine := fmt.Sprintf(`{%q: {"model_name_or_path": "m", "model_patch": ""}, %q: {"model_name_or_path": "m", "model_patch": ""}}`,
		broken, fine)
	if err := os.WriteFile(file, []byte(oneLine), 0o644); err != nil {
		t.Fatal(err)
	}
	runs := filepath.Join(root, "runs")
	var out, errb bytes.Buffer
	code := Main([]string{"grade", "--dataset", dataset, "--predictions", file, "--runs", runs}, &out, &errb)
	if code != exitcode.Fail {
		t.Errorf("a failed row: exit %d, want %d\n%s", code, exitcode.Fail, errb.String())
	}
	rows, bad, err := results.ReadFile(filepath.Join(runs, "grade-map", "results.jsonl"))
	if err != nil || len(bad) > 0 || len(rows) != 2 {
		t.Fatalf("%d rows, %v, %v\n%s", len(rows), bad, err, errb.String())
	}
	for _, r := range rows {
		msg := r.String(results.FieldError)
		switch r.String(results.FieldInstance) {
		case broken:
			for _, part := range []string{"instance " + broken + ": repository " + missing, "repository not found"} {
				if n := strings.Count(msg, part); n != 1 {
					t.Errorf("the error says %q %d times, want once: %s", part, n, msg)
				}
			}
			if strings.Contains(msg, "retryable:") {
				t.Errorf("the error carries Temporal's annotation: %s", msg)
			}
			// No verdict, as a sweep's row whose step failed (and the harness's error instances): null, not false.
			for _, f := range []string{specs.Resolved.Name, specs.PatchApplied.Name} {
				if v, ok := r[f]; !ok || v != nil {
					t.Errorf("the failed row's %s is %v (present: %v), want null", f, v, ok)
				}
			}
		case fine:
			if msg != "" || r.String("grade_status") != "empty_patch" {
				t.Errorf("the other instance: %v", r)
			}
			// The row a sweep's checkout and grade steps make: the checkout's fields too.
			if n, ok := r.Float(specs.RepoFiles.Name); !ok || n < 1 || r[specs.PatchApplied.Name] != false ||
				r[specs.Resolved.Name] != false {
				t.Errorf("the graded row lacks a field of its steps: %v", r)
			}
		}
	}
	// Both the console and the log file: no null status, and the duration's unit in its name.
	logText, err := os.ReadFile(filepath.Join(runs, "grade-map", "ctxlab.log"))
	if err != nil {
		t.Fatal(err)
	}
	graded := 0
	for _, line := range strings.Split(string(logText), "\n") {
		var entry map[string]any
		if json.Unmarshal([]byte(line), &entry) != nil || entry["message"] != "graded" {
			continue
		}
		graded++
		if v, ok := entry["status"]; ok && v == nil {
			t.Errorf("log entry with a null status: %s", line)
		}
		if _, ok := entry["took"]; ok {
			t.Errorf("log entry with a duration whose unit it does not name: %s", line)
		}
		if ms, ok := entry["took_ms"].(float64); !ok || ms != float64(int64(ms)) || ms < 0 {
			t.Errorf("log entry without a whole took_ms: %s", line)
		}
		if entry["instance"] == fine && entry["status"] != "empty_patch" {
			t.Errorf("log entry without the row's status: %s", line)
		}
	}
	if graded != 2 {
		t.Errorf("%d graded entries in the log, want 2:\n%s", graded, logText)
	}
	if strings.Contains(errb.String(), "status=null") || strings.Contains(errb.String(), "took=") {
		t.Errorf("console: %s", errb.String())
	}
	// The summary counts the errored row apart from the graded one, naming it.
	if want := "graded: 1 of 2 predictions; errored: 1 (no test verdict"; !strings.Contains(out.String(), want) ||
		!strings.Contains(out.String(), "): "+broken+"\n") {
		t.Errorf("the summary does not count the errored row apart (want %q naming %s):\n%s", want, broken, out.String())
	}
}

// An executor's error names its instance, and the grade activity named it again: "instance X: instance X: ...".
func TestGradeExecutorErrorNamesItsInstanceOnce(t *testing.T) {
	root := t.TempDir()
	t.Setenv("TMPDIR", t.TempDir())
	bench, err := demobench.Generate(filepath.Join(root, "dataset"))
	if err != nil {
		t.Fatal(err)
	}
	py := e2e.FewDemoInstances(t, bench)[1]
	file := filepath.Join(root, "py.jsonl")
	if err := predictions.WriteFile(file, []predictions.Prediction{{InstanceID: py.InstanceID, ModelNameOrPath: "m",
		ModelPatch: py.Patch}}); err != nil {
		t.Fatal(err)
	}
	runs := filepath.Join(root, "runs")
	var out, errb bytes.Buffer
	// Listed Python tests need a Python log parser: the local executor refuses any other.
	code := Main([]string{"grade", "--dataset", bench.File, "--predictions", file, "--runs", runs, "--quiet",
		"--tests", "listed", "--log-parser", "tap"}, &out, &errb)
	if code != exitcode.Fail {
		t.Errorf("exit %d, want %d\n%s", code, exitcode.Fail, errb.String())
	}
	rows, _, err := results.ReadFile(filepath.Join(runs, "grade-py", "results.jsonl"))
	if err != nil || len(rows) != 1 {
		t.Fatalf("%d rows, %v\n%s", len(rows), err, errb.String())
	}
	msg := rows[0].String(results.FieldError)
	if !strings.Contains(msg, "log parser") || strings.Count(msg, "instance "+py.InstanceID+":") != 1 {
		t.Errorf("the error should name the instance once and say why: %s", msg)
	}
}
