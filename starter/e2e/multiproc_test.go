package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"ctxlab/testkit/e2e"
)

var (
	workerOnce sync.Once
	workerBin  string
	workerErr  error
)

// buildWorker builds the standalone worker (cmd ./worker) once per test binary, into the shared folder, and returns
// its path. It links no Temporal server, so it builds in seconds from the cache the test binary left.
func buildWorker(t *testing.T) string {
	t.Helper()
	workerOnce.Do(func() {
		bin := filepath.Join(sharedDir, "worker")
		cmd := exec.Command("go", "build", "-o", bin, "./worker")
		cmd.Dir = e2e.RepoRoot(t)
		if out, err := cmd.CombinedOutput(); err != nil {
			workerErr = fmt.Errorf("building the worker: %v\n%s", err, out)
			return
		}
		workerBin = bin
	})
	if workerErr != nil {
		t.Fatal(workerErr)
	}
	return workerBin
}

// proc is a subprocess whose output is kept for failure messages.
type proc struct {
	name string
	cmd  *exec.Cmd
	out  bytes.Buffer
	done chan error
}

func startProc(t *testing.T, name string, cmd *exec.Cmd) *proc {
	t.Helper()
	p := &proc{name: name, cmd: cmd, done: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = &p.out, &p.out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("--- %s output:\n%s", p.name, p.out.String())
		}
	})
	return p
}

func workerCmd(ctx context.Context, bin string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, bin, args...)
}

// grades counts the grade activity's attempt events in attempts.jsonl by kind (start, done, fail, memo).
func grades(path string) map[string]int {
	b, _ := os.ReadFile(path)
	out := map[string]int{}
	for line := range strings.SplitSeq(string(b), "\n") {
		var e struct{ Event, Activity string }
		if json.Unmarshal([]byte(line), &e) == nil && e.Activity == "grade" {
			out[e.Event]++
		}
	}
	return out
}

// TestSweepAcrossProcesses is the scale-out test: one process holds the embedded server and submits the sweep
// with no workers of its own, one worker process serves workflows, llm and cpu, another serves grade; all three
// share a file:// object store for blobs. The grade worker is killed with SIGKILL in the middle of the sweep and
// started again; the sweep must complete with the rows of a single-process run.
func TestSweepAcrossProcesses(t *testing.T) {
	t.Parallel()
	worker := buildWorker(t)
	spec := demoVariant(t, "{ name: 'multi', "+referenceMethods+", debug: { slow_activities: '300ms' }, "+
		"limits+: { concurrency: 3, queues: { grade: { concurrency: 2 }, llm: { rate: 50 } } } }")

	// The single-process reference run, beside the multi-process one.
	refRuns := t.TempDir()
	reference := startStarter(t, 10*time.Minute, "run", spec, "--runs", refRuns, "--quiet")

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	runs := t.TempDir()
	dir := filepath.Join(runs, "multi")
	storeDir := t.TempDir()
	store := "file://" + filepath.ToSlash(storeDir)

	server := startProc(t, "starter", starter(ctx, t, "run", spec, "--runs", runs, "--no-worker", "--quiet",
		"--store", store))
	var sf serverFile
	for sf.Address == "" {
		select {
		case err := <-server.done:
			t.Fatalf("the starter exited before publishing its server: %v\n%s", err, server.out.String())
		case <-ctx.Done():
			t.Fatal("the starter never published its server")
		case <-time.After(100 * time.Millisecond):
		}
		if b, err := os.ReadFile(filepath.Join(dir, "server.json")); err == nil {
			_ = json.Unmarshal(b, &sf)
		}
	}

	// A worker for a namespace the server does not have refuses to start, naming it.
	out, err := workerCmd(ctx, worker, "--address", sf.Address, "--namespace", "nope", "--runs", runs).CombinedOutput()
	if err == nil || !strings.Contains(string(out), `namespace "nope" not found`) {
		t.Errorf("worker on a missing namespace: %v\n%s", err, out)
	}

	common := []string{"--address", sf.Address, "--namespace", "default", "--runs", runs, "--spec", spec}
	startProc(t, "worker llm,cpu", workerCmd(ctx, worker, append(common, "--queues", "workflow,llm,cpu",
		"--store", store)...))
	gradeCmd := func() *exec.Cmd {
		cmd := workerCmd(ctx, worker, append(common, "--queues", "grade")...)
		cmd.Env = append(os.Environ(), "CTXLAB_STORE="+store) // the environment setting, as a deployment would use
		return cmd
	}
	grader := startProc(t, "worker grade", gradeCmd())

	// Kill the grader while it grades, with rows still to come.
	attempts := filepath.Join(dir, "attempts.jsonl")
	for grades(attempts)["start"] == 0 {
		select {
		case err := <-server.done:
			t.Fatalf("the starter exited before any grading: %v\n%s", err, server.out.String())
		case <-ctx.Done():
			t.Fatal("no grade activity started")
		case <-time.After(50 * time.Millisecond):
		}
	}
	if err := grader.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-grader.done
	before := grades(attempts)
	rowsBefore := e2e.RowCount(filepath.Join(dir, "results.jsonl"))
	time.Sleep(time.Second)
	startProc(t, "worker grade (restarted)", gradeCmd())

	if _, stderr, code := reference(); code != 0 {
		t.Fatalf("single-process reference run: exit %d\n%s", code, stderr)
	}
	want := readRows(t, filepath.Join(refRuns, "multi", "results.jsonl"))
	if rowsBefore >= len(want) {
		t.Fatalf("the kill came too late: all %d rows were already written", rowsBefore)
	}

	select {
	case err := <-server.done:
		if err != nil {
			t.Fatalf("starter: %v\n%s", err, server.out.String())
		}
	case <-ctx.Done():
		t.Fatal("the sweep did not complete after the grade worker came back")
	}
	got := readRows(t, filepath.Join(dir, "results.jsonl"))
	if !reflect.DeepEqual(got, want) {
		t.Errorf("rows across processes differ from a single-process run's:\n got %v\nwant %v", keys(got), keys(want))
		for k, w := range want {
			if !reflect.DeepEqual(got[k], w) {
				t.Errorf("%v:\n got %v\nwant %v", k, got[k], w)
			}
		}
	}
	after := grades(attempts)
	if after["start"] <= before["start"] {
		t.Errorf("no grading after the restart: %v before the kill, %v at the end", before, after)
	}

	// Blobs went to the shared object store, none to the run folder.
	blobs, _ := filepath.Glob(filepath.Join(storeDir, "multi", "*", "*"))
	if len(blobs) < 10 {
		t.Errorf("only %d blobs in the shared store", len(blobs))
	}
	if local, _ := filepath.Glob(filepath.Join(dir, "cas", "*", "*")); len(local) > 0 {
		t.Errorf("%d blobs in the run folder's cas/ although a shared store was set", len(local))
	}
	t.Logf("grade attempts before the kill %v, at the end %v; %d of %d rows written at the kill", before, after,
		rowsBefore, len(want))
}

// TestNoWorkerUnreachableFailsClearly: a submit-only starter and a worker both refuse to start, saying why, when
// the server cannot be reached.
func TestNoWorkerUnreachableFailsClearly(t *testing.T) {
	t.Parallel()
	_, stderr, code := runStarter(t, 2*time.Minute, "run", demoSpec(t), "--runs", t.TempDir(), "--address",
		"127.0.0.1:1", "--no-worker", "--quiet")
	if code == 0 || !strings.Contains(stderr, "cannot reach Temporal at 127.0.0.1:1") {
		t.Errorf("starter: exit %d, stderr:\n%s", code, stderr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := workerCmd(ctx, buildWorker(t), "--address", "127.0.0.1:1", "--queues", "grade").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "worker: cannot reach Temporal at 127.0.0.1:1") {
		t.Errorf("worker: %v\n%s", err, out)
	}
}
