package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ctxlab/dataset/swebench"
	"ctxlab/grading/executor"
	"ctxlab/starter/exitcode"
)

func TestParseImagesBuildFlags(t *testing.T) {
	var stderr bytes.Buffer
	o, err := parseImagesBuild([]string{"--dataset", "d.jsonl", "--base", "me/py:1", "--namespace", "ns",
		"--instances", "a__b-1, c__d-2"}, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if o.dataset != "d.jsonl" || o.base != "me/py:1" || o.namespace != "ns" || !o.instances["a__b-1"] || !o.instances["c__d-2"] {
		t.Errorf("parsed %+v", o)
	}
	o, err = parseImagesBuild([]string{"--spec", "s.jsonnet", "--runs", "r", "--ext-str", "model=offline"}, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if o.spec != "s.jsonnet" || o.runs != "r" || o.ExtStr["model"] != "offline" || o.set["namespace"] || !o.set["runs"] {
		t.Errorf("parsed %+v", o)
	}
	for _, bad := range [][]string{{}, {"--base", "x"}, {"--dataset", "d", "extra"}, {"--dataset", "d", "--spec", "s"}} {
		if _, err := parseImagesBuild(bad, &stderr); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	if code := Main([]string{"images", "push"}, &stderr, &stderr); code != exitcode.Usage {
		t.Errorf("images push: exit %d", code)
	}
}

// writeImagesDataset writes a dataset of the instances ids and returns its path.
func writeImagesDataset(t *testing.T, ids ...string) string {
	t.Helper()
	var b strings.Builder
	for _, id := range ids {
		b.WriteString(`{"instance_id": "` + id + `", "repo": "acme/x", "base_commit": ` +
			`"0123456789abcdef0123456789abcdef01234567", "patch": "p", "test_patch": "t", "problem_statement": "s", ` +
			`"FAIL_TO_PASS": ["TestA"], "PASS_TO_PASS": []}` + "\n")
	}
	p := filepath.Join(t.TempDir(), "d.jsonl")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestImagesPullWithoutEngine: starter images pull selects the instances --instances names (one not in the dataset
// is a usage error) and, when the docker program cannot pull, exits 1 naming each instance's image; starter grade
// --executor docker stops before grading when its images cannot be pulled.
func TestImagesPullWithoutEngine(t *testing.T) {
	ds := writeImagesDataset(t, "acme__x-1", "acme__x-2")
	noDocker := filepath.Join(t.TempDir(), "docker")
	code, stdout, stderr := runMain("images", "pull", "--dataset", ds, "--instances", "acme__x-9", "--docker", noDocker)
	if code != exitcode.Usage || !strings.Contains(stderr, "instance acme__x-9 is not in "+ds) {
		t.Errorf("an unknown instance: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr = runMain("images", "pull", "--dataset", ds, "--instances", "acme__x-2", "--docker", noDocker,
		"--namespace", "ns")
	image := executor.ImageOf("ns", swebench.Instance{InstanceID: "acme__x-2", Repo: "acme/x"})
	if code != exitcode.Fail || !strings.Contains(stderr, "1 of 1 image(s) could not be pulled") ||
		!strings.Contains(stderr, "instance acme__x-2: docker pull "+image) || strings.Contains(stderr, "acme__x-1") {
		t.Errorf("no docker program: exit %d, want %d naming %s alone\n%s%s", code, exitcode.Fail, image, stdout, stderr)
	}

	t.Setenv("PATH", t.TempDir()) // grade runs the docker on PATH
	code, stdout, stderr = runMain("grade", "--dataset", ds, "--predictions", "gold", "--executor", "docker",
		"--runs", t.TempDir())
	if code != exitcode.Fail || !strings.Contains(stderr, "2 of 2 image(s) could not be pulled") ||
		!strings.Contains(stderr, "starter: nothing graded") {
		t.Errorf("grade without docker: exit %d\n%s%s", code, stdout, stderr)
	}
}

// TestImagesBuildWithoutEngine: starter images build names an instance --instances asks for that is not in the
// dataset as a usage error before it touches the engine, and exits 1 naming the docker program it could not run.
func TestImagesBuildWithoutEngine(t *testing.T) {
	ds := writeImagesDataset(t, "acme__x-1")
	noDocker := filepath.Join(t.TempDir(), "docker")
	code, stdout, stderr := runMain("images", "build", "--dataset", ds, "--instances", "acme__x-9", "--docker", noDocker)
	if code != exitcode.Usage || !strings.Contains(stderr, "acme__x-9") {
		t.Errorf("an unknown instance: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr = runMain("images", "build", "--dataset", ds, "--docker", noDocker)
	if code != exitcode.Fail || !strings.Contains(stderr, noDocker) || strings.Contains(stdout, "built") {
		t.Errorf("no docker program: exit %d, want %d naming %s\n%s%s", code, exitcode.Fail, noDocker, stdout, stderr)
	}
}
