package e2e

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"ctxlab/demobench"
	"ctxlab/grading/executor"
	"ctxlab/internal/images"
	"ctxlab/results"
	"ctxlab/results/predictions"
	"ctxlab/specs"
	"ctxlab/starter/cli"
	"ctxlab/testkit/dockertest"
)

// Done when: `starter images build` + the docker executor grades the demo offline: gold patches resolve, empty ones
// do not. A Python instance, a Go one and a Go one that requires a third-party module (from the dataset's module
// proxy, so its image must carry the module) keep the test to a few minutes.
func TestImagesBuildThenGradeDemoInDocker(t *testing.T) {
	t.Parallel()
	bin := dockertest.Engine(t)
	dockertest.Base(t, bin, images.LangPython)
	dockertest.Base(t, bin, images.LangGo)
	root := t.TempDir()
	bench, err := demobench.Generate(filepath.Join(root, "dataset"))
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{"acme__tablefmt-1", "acme__humanize-1", "acme__relnotes-1"}
	namespace := testNamespace("ctxlabtestdemo")
	for _, id := range ids {
		name := executor.InstanceImage(namespace, id)
		t.Cleanup(func() { _ = exec.Command(bin, "image", "rm", "-f", name).Run() })
	}
	var out, errb bytes.Buffer
	if code := cli.Main([]string{"images", "build", "--dataset", bench.File, "--namespace", namespace, "--rebuild",
		"--goproxy", "file://{dataset_dir}/goproxy", "--instances", strings.Join(ids, ",")}, &out, &errb); code != 0 {
		t.Fatalf("images build: exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	t.Logf("images build:\n%s", out.String())
	for _, id := range ids {
		if !strings.Contains(out.String(), id+"\t"+executor.InstanceImage(namespace, id)+"\tbuilt") {
			t.Errorf("no image built for %s", id)
		}
	}

	var gold, empty []predictions.Prediction
	for _, in := range bench.Instances {
		for _, id := range ids {
			if in.InstanceID == id {
				gold = append(gold, predictions.Prediction{InstanceID: id, ModelNameOrPath: "gold", ModelPatch: in.Patch})
				empty = append(empty, predictions.Prediction{InstanceID: id, ModelNameOrPath: "empty"})
			}
		}
	}
	runs := filepath.Join(root, "runs")
	for _, c := range []struct {
		name     string
		preds    []predictions.Prediction
		resolved int
	}{{"gold", gold, len(ids)}, {"empty", empty, 0}} {
		file := filepath.Join(root, c.name+".jsonl")
		if err := predictions.WriteFile(file, c.preds); err != nil {
			t.Fatal(err)
		}
		out.Reset()
		errb.Reset()
		code := cli.Main([]string{"grade", "--dataset", bench.File, "--predictions", file, "--runs", runs, "--quiet",
			"--executor", "docker", "--namespace", namespace, "--tests", "listed", "--test-cmd", demoTestCmd}, &out,
			&errb)
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s", c.name, code, errb.String())
		}
		rows, bad, err := results.ReadFile(filepath.Join(runs, "grade-"+c.name, "results.jsonl"))
		if err != nil || len(bad) > 0 || len(rows) != len(ids) {
			t.Fatalf("%s: %d rows, %v, %v", c.name, len(rows), bad, err)
		}
		resolved := 0
		for _, r := range rows {
			if v, _ := r.Bool(specs.Resolved.Name); v {
				resolved++
			} else if c.name == "gold" {
				t.Errorf("gold of %s not resolved: %v", r.String(results.FieldInstance), r)
			}
		}
		if resolved != c.resolved {
			t.Errorf("%s: %d of %d resolved in docker, want %d\n%s", c.name, resolved, len(rows), c.resolved, out.String())
		}
	}
}
