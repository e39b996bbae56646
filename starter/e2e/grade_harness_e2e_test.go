package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"ctxlab/dataset/swebench"
	"ctxlab/demobench"
	"ctxlab/grading/batch"
	"ctxlab/grading/executor"
	"ctxlab/internal/images"
	"ctxlab/results"
	"ctxlab/results/predictions"
	"ctxlab/specs"
	"ctxlab/starter/cli"
	"ctxlab/testkit/dockertest"
)

// harnessReader is make_run_report's reading of the log tree (swebench/harness/reporting.py, SWE-bench/SWE-bench at
// commit f2abdb82, transcribed): for each dataset instance with a non-empty prediction, its report.json under
// logs/run_evaluation/<run_id>/<model>/<instance_id> decides resolved or unresolved; a missing or unreadable one is
// an error. It prints the ids it finds in each list, as JSON.
const harnessReader = `
import json, sys
from pathlib import Path
dataset, preds, run_id = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
out = {"resolved": [], "unresolved": [], "error": [], "empty": [], "incomplete": []}
for instance in dataset:
    iid = instance["instance_id"]
    if iid not in preds:
        out["incomplete"].append(iid); continue
    p = preds[iid]
    if p.get("model_patch", None) in ["", None]:
        out["empty"].append(iid); continue
    f = Path("logs/run_evaluation") / run_id / p["model_name_or_path"].replace("/", "__") / iid / "report.json"
    if f.exists():
        try:
            report = json.loads(f.read_text().strip())
            out["resolved" if report[iid]["resolved"] else "unresolved"].append(iid)
        except (json.JSONDecodeError, KeyError):
            out["error"].append(iid)
    else:
        out["error"].append(iid)
print(json.dumps({k: sorted(v) for k, v in out.items()}))
`

// `starter grade` writes the SWE-bench harness's log tree and run report into the run folder, and the harness's own
// reading of them (transcribed above) finds what ctxlab's rows say: gold resolves, a patch that fixes nothing does
// not, an empty one is an empty patch, a repository that is not there is an error to the harness and an infra
// failure to 5.0, and an instance without a prediction is incomplete.
func TestGradeWritesHarnessOutput(t *testing.T) {
	root := t.TempDir()
	t.Setenv("TMPDIR", t.TempDir())
	bench, err := demobench.Generate(filepath.Join(root, "dataset"))
	if err != nil {
		t.Fatal(err)
	}
	insts := []swebench.Instance{bench.Instances[0], bench.Instances[1], bench.Instances[2], bench.Instances[3]}
	insts[2].Repo = "nobody/gone" // its checkout fails: the environment's, to 5.0
	var data bytes.Buffer
	if err := swebench.Write(&data, insts); err != nil {
		t.Fatal(err)
	}
	dataset := filepath.Join(bench.DatasetDir, "four.jsonl")
	if err := os.WriteFile(dataset, data.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	model := "org/model"
	preds := []predictions.Prediction{
		{InstanceID: insts[0].InstanceID, ModelNameOrPath: model, ModelPatch: insts[0].Patch},
		{InstanceID: insts[1].InstanceID, ModelNameOrPath: model, ModelPatch: batch.NoFixPatch},
		{InstanceID: insts[2].InstanceID, ModelNameOrPath: model, ModelPatch: insts[2].Patch},
	}
	file := filepath.Join(root, "preds.jsonl")
	if err := predictions.WriteFile(file, preds); err != nil {
		t.Fatal(err)
	}
	runs := filepath.Join(root, "runs")
	var out, errb bytes.Buffer
	code := cli.Main([]string{"grade", "--dataset", dataset, "--predictions", file, "--runs", runs, "--quiet", "--no-check",
		"--goproxy", "file://{dataset_dir}/goproxy", "--tests", "listed", "--test-cmd", demoTestCmd}, &out, &errb)
	if code != exitFail { // the missing repository's row errors
		t.Fatalf("exit %d\n%s", code, errb.String())
	}
	runDir := filepath.Join(runs, "grade-preds")
	var rep map[string]any
	b, err := os.ReadFile(filepath.Join(runDir, "org__model.grade-preds.json"))
	if err != nil || json.Unmarshal(b, &rep) != nil {
		t.Fatalf("run report: %v\n%s", err, b)
	}
	ids := func(k string) []string {
		var l []string
		for _, v := range rep[k].([]any) {
			l = append(l, v.(string))
		}
		return l
	}
	want := map[string][]string{"resolved_ids": {insts[0].InstanceID}, "unresolved_ids": {insts[1].InstanceID},
		"infra_failure_ids": {insts[2].InstanceID}, "error_ids": nil, "incomplete_ids": {insts[3].InstanceID},
		"ambiguous_failure_ids": nil}
	for k, w := range want {
		if got := ids(k); !slices.Equal(got, w) {
			t.Errorf("%s = %v, want %v\n%s", k, got, w, b)
		}
	}
	if rep["schema_version"] != 2.0 || rep["total_instances"] != 4.0 || rep["submitted_instances"] != 3.0 ||
		rep["completed_instances"] != 2.0 || rep["infra_failure_instances"] != 1.0 {
		t.Errorf("counts: %s", b)
	}
	if reasons := rep["failure_reasons"].(map[string]any); reasons[insts[2].InstanceID] != "repo_unavailable" {
		t.Errorf("failure_reasons %v", reasons)
	}
	inst := filepath.Join(runDir, "logs", "run_evaluation", "grade-preds", "org__model", insts[0].InstanceID)
	for _, name := range []string{"report.json", "test_output.txt", "run_instance.log", "patch.diff"} {
		if fi, err := os.Stat(filepath.Join(inst, name)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", name, err)
		}
	}
	if p, _ := os.ReadFile(filepath.Join(inst, "patch.diff")); string(p) != insts[0].Patch {
		t.Errorf("patch.diff is not the prediction's patch")
	}
	if _, err := os.Stat(filepath.Join(runDir, "logs", "run_evaluation", "grade-preds", "run.json")); err != nil {
		t.Error(err)
	}

	// The harness's own reading of the tree agrees with ctxlab's report (to 4.x, the infra failure is an error).
	dsJSON, _ := json.Marshal(insts)
	predMap := map[string]predictions.Prediction{}
	for _, p := range preds {
		predMap[p.InstanceID] = p
	}
	pJSON, _ := json.Marshal(predMap)
	dsFile, pFile := filepath.Join(root, "ds.json"), filepath.Join(root, "p.json")
	if err := os.WriteFile(dsFile, dsJSON, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pFile, pJSON, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("python3", "-c", harnessReader, dsFile, pFile, "grade-preds")
	cmd.Dir = runDir
	got, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the harness's reading: %v\n%s", err, got)
	}
	var read map[string][]string
	if err := json.Unmarshal(got, &read); err != nil {
		t.Fatalf("%v: %s", err, got)
	}
	if !slices.Equal(read["resolved"], ids("resolved_ids")) || !slices.Equal(read["unresolved"], ids("unresolved_ids")) ||
		!slices.Equal(read["error"], ids("infra_failure_ids")) || !slices.Equal(read["incomplete"], ids("incomplete_ids")) {
		t.Errorf("the harness reads %v; ctxlab's report says %s", read, b)
	}
}

// `starter grade --executor docker` pulls the image it lacks from a registry (Debian's docker-registry on
// loopback, holding an image `starter images build` made and pushed), grades the gold patch in it through the
// results channel (the demo's unittest command runs as ctxlab_unittest), and writes the harness's output; with
// --pull never, or an image the registry lacks, nothing is graded and the image is named.
func TestGradeDockerPullsFromRegistry(t *testing.T) {
	bin := dockertest.Engine(t)
	reg := dockertest.Registry(t)
	dockertest.Base(t, bin, images.LangPython)
	root := t.TempDir()
	t.Setenv("TMPDIR", t.TempDir())
	bench, err := demobench.Generate(filepath.Join(root, "dataset"))
	if err != nil {
		t.Fatal(err)
	}
	id := "acme__tablefmt-1"
	namespace := reg + "/" + testNamespace("ctxlabtestpull")
	image := executor.InstanceImage(namespace, id)
	t.Cleanup(func() { _ = exec.Command(bin, "image", "rm", "-f", image).Run() })
	var out, errb bytes.Buffer
	if code := cli.Main([]string{"images", "build", "--dataset", bench.File, "--namespace", namespace, "--instances", id},
		&out, &errb); code != 0 {
		t.Fatalf("images build: exit %d\n%s", code, errb.String())
	}
	if b, err := exec.Command(bin, "push", image).CombinedOutput(); err != nil {
		t.Fatalf("docker push: %v\n%s", err, b)
	}
	if b, err := exec.Command(bin, "image", "rm", image).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	var in swebench.Instance
	for _, i := range bench.Instances {
		if i.InstanceID == id {
			in = i
		}
	}
	file := filepath.Join(root, "gold.jsonl")
	if err := predictions.WriteFile(file, []predictions.Prediction{{InstanceID: id, ModelNameOrPath: "gold",
		ModelPatch: in.Patch}}); err != nil {
		t.Fatal(err)
	}
	runs := filepath.Join(root, "runs")
	grade := func(extra ...string) (int, string, string) {
		var out, errb bytes.Buffer
		args := append([]string{"grade", "--dataset", bench.File, "--predictions", file, "--runs", runs, "--quiet",
			"--executor", "docker", "--namespace", namespace, "--tests", "listed", "--test-cmd", demoTestCmd,
			"--ignore-unknown"}, extra...)
		code := cli.Main(args, &out, &errb)
		return code, out.String(), errb.String()
	}
	if code, _, stderr := grade("--pull", "never"); code == 0 || !strings.Contains(stderr, image) {
		t.Errorf("--pull never, image missing: exit %d, want a failure naming %s:\n%s", code, image, stderr)
	}
	code, stdout, stderr := grade()
	if code != 0 {
		t.Fatalf("grade: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "] pulled "+image) {
		t.Errorf("no pull progress for %s:\n%s", image, stderr)
	}
	rows, _, err := results.ReadFile(filepath.Join(runs, "grade-gold", "results.jsonl"))
	if err != nil || len(rows) != 1 {
		t.Fatalf("%d rows, %v", len(rows), err)
	}
	if r := rows[0]; r.String(specs.GradeStatus.Name) != "resolved" || r.String(specs.GradeIsolation.Name) != "container" ||
		r[specs.GradeExitCode.Name] != 0.0 {
		t.Errorf("row: %v", r)
	}
	report := filepath.Join(runs, "grade-gold", "logs", "run_evaluation", "grade-gold", "gold", id, "report.json")
	if b, err := os.ReadFile(report); err != nil || !strings.Contains(string(b), `"resolved": true`) {
		t.Errorf("report.json: %v\n%s", err, b)
	}

	// A namespace the registry has nothing under: refused, named, nothing graded.
	if b, err := exec.Command(bin, "image", "rm", "-f", image).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	namespace += "absent"
	code, _, stderr = grade()
	if code == 0 || !strings.Contains(stderr, executor.InstanceImage(namespace, id)) ||
		!strings.Contains(stderr, "the registry has no such image or tag") || !strings.Contains(stderr, "instance "+id) {
		t.Errorf("absent image: exit %d\n%s", code, stderr)
	}
}
