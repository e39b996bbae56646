package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"ctxlab/demobench"
	"ctxlab/grading/executor"
	"ctxlab/internal/images"
	"ctxlab/results"
	"ctxlab/specs"
	"ctxlab/starter/cli"
	"ctxlab/testkit/dockertest"
	"ctxlab/testkit/e2e"
)

// dockerDemoSpec is the path of specs/demo-docker.jsonnet.
func dockerDemoSpec(t *testing.T) string {
	return filepath.Join(e2e.RepoRoot(t), "specs", "demo-docker.jsonnet")
}

// Done when: `starter images build` + a spec with grading.executor 'docker' grades the demo in a sweep, offline, in
// a real engine. A Python instance whose tests run by their listed ids and a Go one that requires a third-party
// module (which its image must carry, since containers have no network) under the two reference methods keep the
// test to a few minutes; the full demo is measured in the README.
func TestDockerSweepGradesDemo(t *testing.T) {
	t.Parallel()
	bin := dockertest.Engine(t)
	dockertest.Base(t, bin, images.LangPython)
	dockertest.Base(t, bin, images.LangGo)
	ids := []string{"acme__tablefmt-1", "acme__relnotes-1"}
	// A namespace of its own, so the images are built here (not found from an earlier build) and removed after; the
	// pid keeps a concurrent run of these tests from removing them.
	namespace := testNamespace("ctxlabtestsweep")
	for _, id := range ids {
		name := executor.InstanceImage(namespace, id)
		t.Cleanup(func() { _ = exec.Command(bin, "image", "rm", "-f", name).Run() })
	}
	spec := filepath.Join(t.TempDir(), "docker-sweep.jsonnet")
	src := "(import '" + dockerDemoSpec(t) + "') + { " + referenceMethods + ", name: 'docker-sweep', " +
		"dataset+: { instances: ['" + strings.Join(ids, "', '") + "'] }, grading+: { namespace: '" + namespace + "' } }\n"
	if err := os.WriteFile(spec, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	runs := t.TempDir()

	// The images, from the spec alone: its dataset (generated into the run folder), namespace and goproxy.
	start := time.Now()
	var out, errb bytes.Buffer
	if code := cli.Main([]string{"images", "build", "--spec", spec, "--runs", runs}, &out, &errb); code != 0 {
		t.Fatalf("images build: exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	t.Logf("images build in %s:\n%s", time.Since(start).Round(time.Second), out.String())
	if n := strings.Count(out.String(), "\tbuilt in "); n != len(ids) {
		t.Errorf("images build built %d images, want %d (one per selected instance):\n%s", n, len(ids), out.String())
	}
	for _, id := range ids {
		if err := exec.Command(bin, "image", "inspect", executor.InstanceImage(namespace, id)).Run(); err != nil {
			t.Fatalf("no image %s after images build: %v", executor.InstanceImage(namespace, id), err)
		}
	}

	start = time.Now()
	stdout, stderr, code := runStarter(t, 10*time.Minute, "run", spec, "--runs", runs, "--quiet")
	if code != 0 {
		t.Fatalf("run: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	t.Logf("sweep in %s", time.Since(start).Round(time.Second))
	rows := readRows(t, filepath.Join(runs, "docker-sweep", "results.jsonl"))
	if len(rows) != 2*len(ids) {
		t.Fatalf("%d rows, want %d (2 methods x %d instances): %v", len(rows), 2*len(ids), len(ids), keys(rows))
	}
	resolved := map[string]int{}
	for k, r := range rows {
		if r[results.FieldError] != nil {
			t.Errorf("row %v has error %v", k, r[results.FieldError])
		}
		if got := r.String("grade_executor"); got != "docker" {
			t.Errorf("row %v: grade_executor %q, want docker", k, got)
		}
		// The executor says "container" only after running the eval script in one; no_source's patch is empty
		// (the offline model writes none without source), so nothing runs for it, in a container or not.
		applied, _ := r.Bool("patch_applied")
		if got := r.String("grade_isolation"); applied && got != "container" {
			t.Errorf("row %v: grade_isolation %q, want container (tests run in a container)", k, got)
		}
		if k.Method == "oracle_files" && !applied {
			t.Errorf("row %v: the oracle's patch did not apply: %v", k, r)
		}
		if v, _ := r.Bool(specs.Resolved.Name); v {
			resolved[k.Method]++
		}
	}
	if resolved["oracle_files"] != len(ids) || resolved["no_source"] != 0 {
		t.Errorf("resolved in docker: oracle_files %d of %d (want all), no_source %d (want none)\n%s",
			resolved["oracle_files"], len(ids), resolved["no_source"], stdout)
	}
}

// A sweep whose images were never built is refused by starter run's check, naming the instance, the image and the
// command that makes it, before any row is written; run past the check (--no-check), it fails their rows at once,
// naming the same, instead of pulling from a registry or hanging.
func TestDockerSweepMissingImageIsARowError(t *testing.T) {
	t.Parallel()
	bin := dockertest.Engine(t)
	namespace, id := testNamespace("ctxlabtestnoimages"), "acme__tablefmt-1"
	image := executor.InstanceImage(namespace, id)
	if exec.Command(bin, "image", "inspect", image).Run() == nil {
		t.Fatalf("image %s exists; this test needs it missing", image)
	}
	spec := filepath.Join(t.TempDir(), "missing.jsonnet")
	src := "(import '" + dockerDemoSpec(t) + "') + { " + referenceMethods + ", name: 'docker-missing', " +
		"dataset+: { instances: ['" + id + "'] }, grading+: { namespace: '" + namespace + "' } }\n"
	if err := os.WriteFile(spec, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	runs := t.TempDir()
	stdout, stderr, code := runStarter(t, 5*time.Minute, "run", spec, "--runs", runs, "--quiet")
	if code != exitUsage || !strings.Contains(stderr, "instance "+id+": not gradable") ||
		!strings.Contains(stderr, "docker pull "+image) || !strings.Contains(stderr, "starter images build") {
		t.Fatalf("run: exit %d, want %d (the check refuses, naming %s and its image)\nstdout:\n%s\nstderr:\n%s", code,
			exitUsage, id, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(runs, "docker-missing", "results.jsonl")); !os.IsNotExist(err) {
		t.Fatalf("results.jsonl after the check refused: %v", err)
	}
	start := time.Now()
	stdout, stderr, code = runStarter(t, 5*time.Minute, "run", spec, "--runs", runs, "--quiet", "--no-check")
	if code != exitRowErrors {
		t.Fatalf("run: exit %d, want %d (rows with errors)\nstdout:\n%s\nstderr:\n%s", code, exitRowErrors, stdout, stderr)
	}
	t.Logf("sweep with a missing image finished in %s", time.Since(start).Round(time.Second))
	rows := readRows(t, filepath.Join(runs, "docker-missing", "results.jsonl"))
	oracle, ok := rows[results.Key{Instance: id, Method: "oracle_files", Model: "offline"}]
	if !ok {
		t.Fatalf("no oracle_files row: %v", keys(rows))
	}
	msg, _ := oracle[results.FieldError].(string)
	for _, want := range []string{image, "docker pull " + image, "starter images build"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the row error does not say %q: %q", want, msg)
		}
	}
}

// A builder killed mid-build (SIGKILL: no deferred removal runs) leaves its temporary container behind, labeled with
// its pid and start time; the next build removes it before building, and leaves alone those of live builders.
func TestImagesBuildRemovesContainersOfKilledBuilders(t *testing.T) {
	// Not parallel, and alone on the engine: any other grade or build would remove the killed builder's container.
	bin := dockertest.Alone(t)
	dockertest.Base(t, bin, images.LangPython)
	root := t.TempDir()
	bench, err := demobench.Generate(filepath.Join(root, "dataset"))
	if err != nil {
		t.Fatal(err)
	}
	namespace, id := testNamespace("ctxlabtestkill"), "acme__tablefmt-1"
	image := executor.InstanceImage(namespace, id)
	t.Cleanup(func() { _ = exec.Command(bin, "image", "rm", "-f", image).Run() })

	// The killed builder's docker stops at commit, so it is surely mid-build, its container created, when killed.
	realDocker, err := exec.LookPath(bin)
	if err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(root, "committing")
	wrapper := filepath.Join(root, "docker-stuck-at-commit")
	script := "#!/bin/sh\nif [ \"$1\" = commit ]; then touch '" + marker + "'; exec sleep 600; fi\nexec '" +
		realDocker + "' \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := starter(t.Context(), t, "images", "build", "--dataset", bench.File, "--namespace", namespace,
		"--instances", id, "--rebuild", "--docker", wrapper)
	builder := e2e.StartGroup(t, "builder", cmd) // a kill takes the builder and its stuck docker
	pid := cmd.Process.Pid
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		if _, err := os.Stat(marker); err == nil {
			break
		}
		if builder.Exited() {
			t.Fatalf("the builder exited before docker commit:\n%s", builder.Out.String())
		}
		if time.Now().After(deadline) {
			builder.Kill()
			t.Fatalf("the builder never reached docker commit:\n%s", builder.Out.String())
		}
	}
	left := buildContainersOf(t, bin, pid)
	if len(left) != 1 {
		t.Fatalf("containers of the builder mid-build: %v, want one ctxlab-build-*", left)
	}
	// While the builder lives, its container is not stale.
	if removed, err := executor.RemoveStaleContainers(t.Context(), bin); err != nil || slices.Contains(removed, left[0]) {
		t.Fatalf("the container of a live builder was removed (%v, %v)", removed, err)
	}
	builder.Kill()
	if still := buildContainersOf(t, bin, pid); len(still) != 1 {
		t.Fatalf("after the SIGKILL the container should still be there (nothing removed it): %v", still)
	}

	var out, errb bytes.Buffer
	if code := cli.Main([]string{"images", "build", "--dataset", bench.File, "--namespace", namespace, "--instances", id,
		"--rebuild"}, &out, &errb); code != 0 {
		t.Fatalf("next build: exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	if still := buildContainersOf(t, bin, pid); len(still) != 0 {
		t.Errorf("the killed builder's container survived the next build: %v", still)
	}
	if !strings.Contains(errb.String(), "removed container "+left[0]) {
		t.Errorf("the next build did not say it removed %s:\n%s", left[0], errb.String())
	}
	if !strings.Contains(out.String(), id+"\t"+image+"\tbuilt") {
		t.Errorf("the next build did not build %s:\n%s", image, out.String())
	}
}

// buildContainersOf lists the ctxlab-build-* containers labeled with a builder's pid.
func buildContainersOf(t *testing.T, bin string, pid int) []string {
	t.Helper()
	out, err := exec.Command(bin, "ps", "-a", "--filter", "label=ctxlab.pid="+strconv.Itoa(pid),
		"--filter", "name=ctxlab-build-", "--format", "{{.Names}}").Output()
	if err != nil {
		t.Fatalf("docker ps: %v", err)
	}
	return strings.Fields(string(out))
}
