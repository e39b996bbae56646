package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"ctxlab/starter/embedded"
	"ctxlab/testkit/e2e"
	"ctxlab/workflows"
)

// TestRunAgainstExistingServer runs the demo sweep with --address against a server the test started, then replays
// the recorded workflow histories with the current workflow code, which fails on any non-deterministic change.
func TestRunAgainstExistingServer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	srv, err := embedded.Start(ctx, embedded.Options{DBFile: filepath.Join(dir, "temporal.db"),
		LogFile: filepath.Join(dir, "temporal.log"), Namespace: "ctxlab-test"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()

	runs := filepath.Join(dir, "runs")
	spec := demoVariant(t, "{ "+referenceMethods+" }") // the reference methods keep the test quick
	stdout, stderr, code := runStarter(t, 10*time.Minute, "run", spec, "--runs", runs, "--address", srv.HostPort(),
		"--namespace", "ctxlab-test", "--quiet")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "| oracle_files | offline |") {
		t.Errorf("no summary on stdout:\n%s", stdout)
	}
	if _, err := os.Stat(filepath.Join(runs, "demo", "temporal.db")); err == nil {
		t.Error("an embedded server was started although --address was given")
	}
	statusFromServer(t, runs, srv.HostPort())

	c, err := client.Dial(client.Options{HostPort: srv.HostPort(), Namespace: "ctxlab-test"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	replayer := worker.NewWorkflowReplayer()
	replayer.RegisterWorkflowWithOptions(workflows.Sweep, workflow.RegisterOptions{Name: workflows.SweepName})
	replayer.RegisterWorkflowWithOptions(workflows.Issue, workflow.RegisterOptions{Name: workflows.IssueName})
	for _, id := range []string{"sweep/demo", "issue/demo/acme__humanize-1"} {
		h := history(ctx, t, c, id)
		if len(h.Events) < 5 {
			t.Fatalf("%s: only %d events", id, len(h.Events))
		}
		if err := replayer.ReplayWorkflowHistory(nil, h); err != nil {
			t.Errorf("replaying %s: %v", id, err)
		}
	}
}

// statusFromServer: starter status --address reads the rows from the sweep on the server, not from results.jsonl
// alone: with the file gone, it writes them back and counts every issue done; in another runs folder, whose store
// lacks the rows, it says to give --store.
func statusFromServer(t *testing.T, runs, address string) {
	t.Helper()
	file := filepath.Join(runs, "demo", "results.jsonl")
	want := readRows(t, file)
	if err := os.Rename(file, file+".lost"); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runStarter(t, 2*time.Minute, "status", "demo", "--runs", runs, "--address", address,
		"--namespace", "ctxlab-test", "--json")
	var st struct {
		Instances int `json:"instances"`
		Issues    struct {
			Done int `json:"done"`
		} `json:"issues"`
		Sweep struct {
			State string `json:"state"`
		} `json:"sweep"`
	}
	if err := json.Unmarshal([]byte(stdout), &st); code != 0 || err != nil {
		t.Fatalf("status --address: exit %d, %v\n%s\n%s", code, err, stdout, stderr)
	}
	if st.Instances != 11 || st.Issues.Done != 11 || st.Sweep.State != "completed" {
		t.Errorf("status --address: %d instances, %d done, sweep %q; want 11, 11, completed\n%s", st.Instances,
			st.Issues.Done, st.Sweep.State, stdout)
	}
	e2e.SameRows(t, readRows(t, file), want)

	_, stderr, code = runStarter(t, 2*time.Minute, "status", "demo", "--runs", t.TempDir(), "--address", address,
		"--namespace", "ctxlab-test")
	if code == 0 || !strings.Contains(stderr, "--store") {
		t.Errorf("status --address where the rows' store is not: exit %d\n%s", code, stderr)
	}
}

func history(ctx context.Context, t *testing.T, c client.Client, id string) *historypb.History {
	t.Helper()
	it := c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	h := &historypb.History{}
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatalf("history of %s: %v", id, err)
		}
		h.Events = append(h.Events, e)
	}
	return h
}

func TestAddressUnreachableFailsClearly(t *testing.T) {
	t.Parallel()
	spec := demoSpec(t)
	_, stderr, code := runStarter(t, 2*time.Minute, "run", spec, "--runs", t.TempDir(), "--address", "127.0.0.1:1",
		"--quiet")
	if code == 0 || !strings.Contains(stderr, "cannot reach Temporal at 127.0.0.1:1") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
}

// TestSecondStarterAttaches starts a slowed sweep, then a second starter on the same run folder: it must attach to
// the running sweep instead of starting another, and both must report the same finished sweep.
func TestSecondStarterAttaches(t *testing.T) {
	t.Parallel()
	spec := demoVariant(t, "{ name: 'attach', "+referenceMethods+", debug: { slow_activities: '300ms' } }")
	runs := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var out1, err1 bytes.Buffer
	_, exited := startWorking(ctx, t, spec, runs, "attach", &out1, &err1)
	out2, err2, code := runStarter(t, 10*time.Minute, "run", spec, "--runs", runs)
	if code != 0 {
		t.Fatalf("second starter: exit %d\n%s", code, err2)
	}
	if err := <-exited; err != nil {
		t.Fatalf("first starter: %v\n%s", err, err1.String())
	}
	if !strings.Contains(err2, "another starter runs this sweep") || !strings.Contains(err2, "attached to the running sweep") {
		t.Errorf("second starter did not attach:\n%s", err2)
	}
	if out1.String() != out2 {
		t.Errorf("the two starters report different sweeps:\n%s\n---\n%s", out1.String(), out2)
	}
}

// startWorking starts `starter run spec --runs runs --quiet` (the sweep named name) and returns once its sweep has
// started working (attempts.jsonl has a line): the first of two starters of a run folder. exited gets its end.
func startWorking(ctx context.Context, t *testing.T, spec, runs, name string, stdout, stderr io.Writer) (
	*exec.Cmd, <-chan error) {
	t.Helper()
	first := starter(ctx, t, "run", spec, "--runs", runs, "--quiet")
	first.Stdout, first.Stderr = stdout, stderr
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- first.Wait() }()
	waitWhileRunning(ctx, t, exited, "it started working", func() bool {
		b, err := os.ReadFile(filepath.Join(runs, name, "attempts.jsonl"))
		return err == nil && len(b) > 0
	})
	return first, exited
}

// waitWhileRunning polls ok until it holds, failing the test if the first starter exits (exited) or ctx ends first.
func waitWhileRunning(ctx context.Context, t *testing.T, exited <-chan error, what string, ok func() bool) {
	t.Helper()
	for !ok() {
		select {
		case err := <-exited:
			t.Fatalf("first starter exited before %s: %v", what, err)
		case <-ctx.Done():
			t.Fatalf("never: %s", what)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// TestAttachedStarterTakesOver: a second starter attached to a first's server must finish the sweep when the first
// is killed mid-sweep: it sees the server go, takes the run's lock, starts the server itself and resumes the sweep
// with its own workers, every row written once. Before, it waited on the dead server until its calls timed out and
// failed with "sweep failed: context deadline exceeded" (also when the first merely finished and stopped its server
// before the second read the sweep's end).
func TestAttachedStarterTakesOver(t *testing.T) {
	t.Parallel()
	spec := demoVariant(t, "{ name: 'takeover', "+referenceMethods+", debug: { slow_activities: '300ms' } }")
	runs := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	first, exited := startWorking(ctx, t, spec, runs, "takeover", nil, nil)
	second := starter(ctx, t, "run", spec, "--runs", runs)
	var out2 e2e.SyncBuffer
	var err2 e2e.SyncBuffer
	second.Stdout, second.Stderr = &out2, &err2
	if err := second.Start(); err != nil {
		t.Fatal(err)
	}
	waitWhileRunning(ctx, t, exited, "the second attached", func() bool {
		return strings.Contains(err2.String(), "attached to the running sweep")
	})
	if err := first.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-exited
	if err := second.Wait(); err != nil {
		t.Fatalf("second starter: %v\n%s", err, err2.String())
	}
	if !strings.Contains(err2.String(), "carrying on with a server of this one") {
		t.Errorf("the second starter did not say it took over:\n%s", err2.String())
	}
	b, err := os.ReadFile(filepath.Join(runs, "takeover", "results.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Count(string(b), "\n")
	rows := readRows(t, filepath.Join(runs, "takeover", "results.jsonl"))
	if want := 11 * 2; len(rows) != want || lines != want {
		t.Errorf("%d rows in %d lines, want %d once each", len(rows), lines, want)
	}
}
