package e2e

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"ctxlab/activities/limiter"
	"ctxlab/results"
	"ctxlab/runfolder"
	"ctxlab/starter/sweepclient"
	"ctxlab/testkit/e2e"
	"ctxlab/testkit/fakeopenai"
)

// budgetOf queries the run's budget workflow on the server the run's starter published in its run folder dir.
func budgetOf(ctx context.Context, t *testing.T, dir, run string) limiter.Status {
	t.Helper()
	sf, ok := readServerFile(filepath.Join(dir, runfolder.ServerFile))
	if !ok || sf.Address == "" {
		t.Fatalf("no server published in %s", dir)
	}
	st, err := sweepclient.ReadBudget(ctx, dialServer(ctx, t, sf.Address), run)
	if err != nil {
		t.Fatalf("the budget of %s: %v", run, err)
	}
	return st
}

// TestSpendCapAcrossMachines: two llm workers, each on a machine of its own (testkit/machines: its run folders and
// /tmp a private tmpfs), beside the starter's and the workflow worker's machines, sharing only Temporal and a
// file:// store, under a $0.20 cap on calls billed $0.04025 each. The cap was lock files and limits.json in the run folder: each
// such worker found no limits in its own folder and every call went out (the issue saw 11 calls, about $1.55,
// under a $1.20 cap). Held by the run's budget workflow, the endpoint bills at most the cap (reservations of the
// worst case leave nothing to the calls in flight), the starter stops with the exit code of a paused sweep, and a
// starter run again with the cap raised continues the waiting sweep to its end, every row without an error.
func TestSpendCapAcrossMachines(t *testing.T) {
	t.Parallel()
	srv := fakeopenai.New(fakeopenai.WithUsage(100, 4000))
	srv.SetDelayWhen(func(fakeopenai.ChatRequest) time.Duration { return 300 * time.Millisecond })
	hs := httptest.NewServer(srv)
	defer hs.Close()
	env := []string{"OPENAI_BASE_URL=" + hs.URL + "/v1", "OPENAI_API_KEY="}
	const perCall = (100*2.5 + 4000*10) / 1e6 // $0.04025
	specs := t.TempDir()
	spec := func(capUSD string) string {
		return e2e.DemoVariant(t, filepath.Join(specs, "cap-"+capUSD+".jsonnet"), "{ name: 'machines', "+
			"dataset+: { limit: 3 }, methods: super.methods[2:3], models: [super.models[0] + { price: { input: 2.5, "+
			"output: 10 } }], limits+: { spend_usd: "+capUSD+" } }")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	d := fileStoreDeployment(t, ctx, spec("0.2"), env)
	d.startStarter("machines")
	d.worker("worker-wf", "workflow,cpu,grade")
	d.worker("worker-llm-1", "llm")
	d.worker("worker-llm-2", "llm")
	code := exitOf(ctx, t, d.starter, "the capped sweep")
	billed := float64(srv.Calls()) * perCall
	t.Logf("under the $0.20 cap: %d calls billed $%.4f, starter exit %d", srv.Calls(), billed, code)
	if billed > 0.2+1e-9 {
		t.Errorf("the endpoint billed $%.4f in %d calls under a $0.20 cap", billed, srv.Calls())
	}
	if code != exitPaused || srv.Calls() == 0 {
		t.Fatalf("capped sweep: exit %d after %d calls, want %d (paused at the cap) after some\n%s", code,
			srv.Calls(), exitPaused, d.starter.out.String())
	}

	// status shows the spend the budget counts over every machine's calls, on the server `starter ui` runs for
	// the stopped sweep from the starter's run folder, where the workers come back to it.
	statusOut := statusWithViewer(ctx, t, d.starterRuns, "machines")
	t.Logf("starter status:\n%s", statusOut)
	if want := fmt.Sprintf("spend:     $%.4f in %d calls, cap $0.2000 (the run's budget workflow",
		float64(srv.Calls())*perCall, srv.Calls()); !strings.Contains(statusOut, want) {
		t.Errorf("status does not show the budget's spend %q:\n%s", want, statusOut)
	}

	// Raised, the cap lets the waiting sweep finish.
	d.spec = spec("100")
	d.startStarter("machines")
	if code := exitOf(ctx, t, d.starter, "the sweep with the cap raised"); code != 0 {
		t.Fatalf("the sweep with the cap raised: exit %d\n%s", code, d.starter.out.String())
	}
	rows := readRows(t, d.starterPath("machines", "results.jsonl"))
	if len(rows) != 3 {
		t.Errorf("%d rows, want cq2care on 3 instances", len(rows))
	}
	for k, r := range rows {
		if r[results.FieldError] != nil {
			t.Errorf("%v: %v", k, r[results.FieldError])
		}
	}
}

// fileStoreDeployment is a deployment whose store is a file:// folder every machine mounts, its starter and
// workers given the openai model of the demo.
func fileStoreDeployment(t *testing.T, ctx context.Context, spec string, env []string) *deployment {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "store")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	d := newDeployment(t, ctx, spec, "file://"+dir, []string{dir}, env)
	d.flags = []string{"--ext-str", "model=openai"}
	return d
}

// exitOf waits for a process to exit and returns its exit code.
func exitOf(ctx context.Context, t *testing.T, p *proc, what string) int {
	t.Helper()
	select {
	case err := <-p.done:
		var ee *exec.ExitError
		if asExit(err, &ee) {
			return ee.ExitCode()
		} else if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return 0
	case <-ctx.Done():
		t.Fatalf("%s did not end", what)
		return -1
	}
}

// statusWithViewer runs `starter status` for a run whose sweep stopped, while `starter ui` serves the run's
// embedded server (the workers that were connected to it come back to it), and returns its output once it shows
// the budget's spend (or after two minutes).
func statusWithViewer(ctx context.Context, t *testing.T, runs, name string) string {
	t.Helper()
	ui := startProc(t, "starter ui", starter(ctx, t, "ui", name, "--runs", runs))
	for {
		sf, ok := readServerFile(filepath.Join(runs, name, runfolder.ServerFile))
		if ok && sf.Address != "" && sf.PID == ui.cmd.Process.Pid {
			break
		}
		select {
		case err := <-ui.done:
			t.Fatalf("starter ui exited: %v\n%s", err, ui.out.String())
		case <-ctx.Done():
			t.Fatal("starter ui never published its server")
		case <-time.After(100 * time.Millisecond):
		}
	}
	// The budget answers once a workflow worker has come back to the server.
	var out string
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(time.Second) {
		out, _ = mainOut(t, "status", name, "--runs", runs)
		if strings.Contains(out, "budget workflow;") || time.Now().After(deadline) {
			break
		}
	}
	_ = ui.cmd.Process.Signal(syscall.SIGINT)
	if err := <-ui.done; err != nil {
		t.Logf("starter ui: %v", err)
	}
	return out
}

// TestKilledWorkerFreesItsReservation: under a cap that lets one call go at a time, the llm worker holding that
// call is killed with SIGKILL while the endpoint holds its answer. Its reservation lived in the run folder's lock
// files, which the kernel freed; held by the budget workflow, it must not block the other worker, on another
// machine, forever: it lapses with the dead worker's lease (or when Temporal runs the call's activity again), and
// the sweep finishes, every row without an error. While the killed worker held it, the other worker's calls
// waited: the cap is one across machines.
func TestKilledWorkerFreesItsReservation(t *testing.T) {
	t.Parallel()
	// Answers are cheap (100+10 tokens: $0.00035), a call's worst case (4,096 answer tokens at $10 per million,
	// and its prompt) over $0.04: under a $0.06 cap one call goes at a time. The first call is held.
	srv := fakeopenai.New(fakeopenai.WithUsage(100, 10))
	var mu sync.Mutex
	held := false
	srv.SetDelayWhen(func(fakeopenai.ChatRequest) time.Duration {
		mu.Lock()
		defer mu.Unlock()
		if !held {
			held = true
			return 10 * time.Minute
		}
		return 0
	})
	hs := httptest.NewServer(srv)
	defer hs.Close()
	env := []string{"OPENAI_BASE_URL=" + hs.URL + "/v1", "OPENAI_API_KEY="}
	spec := demoVariant(t, "{ name: 'killed', dataset+: { limit: 3 }, methods: super.methods[0:1], anchor:: null, "+
		"models: [super.models[0] + { price: { input: 2.5, output: 10 } }], limits+: { spend_usd: 0.06 } }")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	d := fileStoreDeployment(t, ctx, spec, env)
	d.startStarter("killed")
	d.worker("worker-wf", "workflow,cpu,grade")
	first := d.worker("worker-llm-1", "llm")
	for srv.InFlight() == 0 {
		select {
		case err := <-d.starter.done:
			t.Fatalf("the starter ended before the first call: %v\n%s", err, d.starter.out.String())
		case <-ctx.Done():
			t.Fatal("no call reached the endpoint")
		case <-time.After(100 * time.Millisecond):
		}
	}
	d.worker("worker-llm-2", "llm")
	time.Sleep(5 * time.Second)
	if n := srv.Calls(); n != 1 {
		t.Errorf("%d calls while the first worker held the only reservation the cap allows, want 1", n)
	}
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-first.done
	killed := time.Now()
	if code := exitOf(ctx, t, d.starter, "the sweep after the kill"); code != 0 {
		t.Fatalf("the sweep after the kill: exit %d\n%s", code, d.starter.out.String())
	}
	t.Logf("finished %v after the kill, %d calls", time.Since(killed).Round(time.Second), srv.Calls())
	rows := readRows(t, d.starterPath("killed", "results.jsonl"))
	if len(rows) != 3 {
		t.Errorf("%d rows, want no_source on 3 instances", len(rows))
	}
	for k, r := range rows {
		if r[results.FieldError] != nil {
			t.Errorf("%v: %v", k, r[results.FieldError])
		}
	}
}
