package cli

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

	"github.com/rs/zerolog"

	"ctxlab/activities/limiter"
	"ctxlab/results"
	"ctxlab/runfolder"
	"ctxlab/testkit/fakeopenai"
)

// budgetOf queries the run's budget workflow on the server the run's starter published in its run folder dir.
func budgetOf(ctx context.Context, t *testing.T, dir, run string) limiter.Status {
	t.Helper()
	sf, ok := readServerFile(filepath.Join(dir, runfolder.ServerFile))
	if !ok || sf.Address == "" {
		t.Fatalf("no server published in %s", dir)
	}
	c, err := dial(ctx, sf.Address, "default", zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	st, err := readBudget(ctx, c, run)
	if err != nil {
		t.Fatalf("the budget of %s: %v", run, err)
	}
	return st
}

// machine is a worker process on a machine of its own: a private mount namespace where an empty tmpfs covers the
// runs folder, so that the run folder it writes (its calls, node memos, response cache, any lock or limits file)
// is its alone, as on a machine that shares no disk with the starter; it shares only the Temporal server, the
// object store and the endpoint.
func machine(ctx context.Context, t *testing.T, worker, runs string, env []string, args ...string) *exec.Cmd {
	t.Helper()
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Fatalf("no unshare (util-linux) to give a worker a machine of its own: %v", err)
	}
	ns := []string{"--mount", "--propagation", "private"}
	if os.Geteuid() != 0 {
		ns = append([]string{"--user", "--map-root-user"}, ns...)
	}
	script := `mount -t tmpfs machine "$RUNS" && exec "$@"`
	cmd := exec.CommandContext(ctx, unshare, append(append(ns, "sh", "-c", script, "sh", worker), args...)...)
	cmd.Env = append(append(os.Environ(), env...), "RUNS="+runs)
	return cmd
}

// startCluster starts a starter that holds the embedded server and runs no worker (--no-worker) and a worker for
// the workflows and the cpu and grade queues beside it; it returns the starter and the flags a worker needs to
// join. The caller starts the llm workers.
func startCluster(ctx context.Context, t *testing.T, worker, spec, runs, name, store string, env []string,
	extra ...string) (*proc, []string) {
	t.Helper()
	args := append([]string{"run", spec, "--runs", runs, "--no-worker", "--store", store}, extra...)
	server := startProc(t, "starter", starter(ctx, t, args...))
	var sf serverFile
	for sf.Address == "" {
		select {
		case err := <-server.done:
			t.Fatalf("the starter exited before publishing its server: %v\n%s", err, server.out.String())
		case <-ctx.Done():
			t.Fatal("the starter never published its server")
		case <-time.After(100 * time.Millisecond):
		}
		sf, _ = readServerFile(filepath.Join(runs, name, runfolder.ServerFile))
	}
	join := []string{"--address", sf.Address, "--namespace", "default", "--runs", runs, "--store", store,
		"--spec", spec}
	cmd := workerCmd(ctx, worker, append(join, "--queues", "workflow,cpu,grade")...)
	cmd.Env = append(os.Environ(), env...)
	startProc(t, "worker workflow,cpu,grade", cmd)
	return server, join
}

// TestSpendCapAcrossMachines: two llm workers, each on a machine of its own (its run folder on a private tmpfs),
// under a $0.20 cap on calls billed $0.04025 each. The cap was lock files and limits.json in the run folder: each
// such worker found no limits in its own folder and every call went out (the issue saw 11 calls, about $1.55,
// under a $1.20 cap). Held by the run's budget workflow, the endpoint bills at most the cap (reservations of the
// worst case leave nothing to the calls in flight), the starter stops with the exit code of a paused sweep, and a
// starter run again with the cap raised continues the waiting sweep to its end, every row without an error.
func TestSpendCapAcrossMachines(t *testing.T) {
	t.Parallel()
	worker := buildWorker(t)
	srv := fakeopenai.New(fakeopenai.WithUsage(100, 4000))
	srv.SetDelayWhen(func(fakeopenai.ChatRequest) time.Duration { return 300 * time.Millisecond })
	hs := httptest.NewServer(srv)
	defer hs.Close()
	env := []string{"OPENAI_BASE_URL=" + hs.URL + "/v1", "OPENAI_API_KEY="}
	setStarterEnv(t, env...)
	const perCall = (100*2.5 + 4000*10) / 1e6 // $0.04025
	spec := func(capUSD string) string {
		return demoVariant(t, "{ name: 'machines', dataset+: { limit: 3 }, methods: super.methods[2:3], "+
			"models: [super.models[0] + { price: { input: 2.5, output: 10 } }], limits+: { spend_usd: "+capUSD+" } }")
	}
	runs := t.TempDir()
	store := "file://" + filepath.ToSlash(t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	server, join := startCluster(ctx, t, worker, spec("0.2"), runs, "machines", store, env,
		"--ext-str", "model=openai", "--quiet")
	for _, name := range []string{"llm worker 1", "llm worker 2"} {
		startProc(t, name, machine(ctx, t, worker, runs, env, append(join, "--queues", "llm")...))
	}
	var code int
	select {
	case err := <-server.done:
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("the capped sweep did not stop")
	}
	billed := float64(srv.Calls()) * perCall
	t.Logf("under the $0.20 cap: %d calls billed $%.4f, starter exit %d", srv.Calls(), billed, code)
	if billed > 0.2+1e-9 {
		t.Errorf("the endpoint billed $%.4f in %d calls under a $0.20 cap", billed, srv.Calls())
	}
	if code != exitPaused || srv.Calls() == 0 {
		t.Fatalf("capped sweep: exit %d after %d calls, want %d (paused at the cap) after some\n%s", code,
			srv.Calls(), exitPaused, server.out.String())
	}

	// The starter's own ledger holds no call (the llm workers wrote theirs on their machines): status shows the
	// spend the budget counts, on the server `starter ui` runs for the stopped sweep.
	statusOut := statusWithViewer(ctx, t, runs, "machines")
	t.Logf("starter status:\n%s", statusOut)
	if want := fmt.Sprintf("spend:     $%.4f in %d calls, cap $0.2000 (the run's budget workflow",
		float64(srv.Calls())*perCall, srv.Calls()); !strings.Contains(statusOut, want) {
		t.Errorf("status does not show the budget's spend %q:\n%s", want, statusOut)
	}

	raised := startProc(t, "starter (cap raised)", starter(ctx, t, "run", spec("100"), "--runs", runs,
		"--no-worker", "--store", store, "--ext-str", "model=openai", "--quiet"))
	select {
	case err := <-raised.done:
		if err != nil {
			t.Fatalf("the sweep with the cap raised: %v\n%s", err, raised.out.String())
		}
	case <-ctx.Done():
		t.Fatal("the sweep with the cap raised did not finish")
	}
	rows := readRows(t, filepath.Join(runs, "machines", "results.jsonl"))
	if len(rows) != 3 {
		t.Errorf("%d rows, want cq2care on 3 instances", len(rows))
	}
	for k, r := range rows {
		if r[results.FieldError] != nil {
			t.Errorf("%v: %v", k, r[results.FieldError])
		}
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
	worker := buildWorker(t)
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
	setStarterEnv(t, env...)
	spec := demoVariant(t, "{ name: 'killed', dataset+: { limit: 3 }, methods: super.methods[0:1], anchor:: null, "+
		"models: [super.models[0] + { price: { input: 2.5, output: 10 } }], limits+: { spend_usd: 0.06 } }")
	runs := t.TempDir()
	store := "file://" + filepath.ToSlash(t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	server, join := startCluster(ctx, t, worker, spec, runs, "killed", store, env, "--ext-str", "model=openai",
		"--quiet")
	first := startProc(t, "llm worker 1", machine(ctx, t, worker, runs, env, append(join, "--queues", "llm")...))
	for srv.InFlight() == 0 {
		select {
		case err := <-server.done:
			t.Fatalf("the starter ended before the first call: %v\n%s", err, server.out.String())
		case <-ctx.Done():
			t.Fatal("no call reached the endpoint")
		case <-time.After(100 * time.Millisecond):
		}
	}
	startProc(t, "llm worker 2", machine(ctx, t, worker, runs, env, append(join, "--queues", "llm")...))
	time.Sleep(5 * time.Second)
	if n := srv.Calls(); n != 1 {
		t.Errorf("%d calls while the first worker held the only reservation the cap allows, want 1", n)
	}
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-first.done
	killed := time.Now()
	select {
	case err := <-server.done:
		if err != nil {
			t.Fatalf("the sweep after the kill: %v\n%s", err, server.out.String())
		}
	case <-ctx.Done():
		t.Fatal("the sweep did not finish after the worker holding the reservation was killed")
	}
	t.Logf("finished %v after the kill, %d calls", time.Since(killed).Round(time.Second), srv.Calls())
	rows := readRows(t, filepath.Join(runs, "killed", "results.jsonl"))
	if len(rows) != 3 {
		t.Errorf("%d rows, want no_source on 3 instances", len(rows))
	}
	for k, r := range rows {
		if r[results.FieldError] != nil {
			t.Errorf("%v: %v", k, r[results.FieldError])
		}
	}
}
