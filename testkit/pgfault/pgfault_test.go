package pgfault

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"ctxlab/internal/offlinetask"
	"ctxlab/runfolder"
	"ctxlab/runlog"
	"ctxlab/testkit/e2e"
	"ctxlab/testkit/fakeopenai"
	"ctxlab/testkit/machines"
	"ctxlab/testkit/pgtest"
	"ctxlab/testkit/s3server"
)

// key is the API key the llm workers get, from their environment only.
const key = "sk-ctxlab-pgfault-5b0c2e77a1d94f38"

// specOverrides make the demo an openai sweep of three instances and two methods: oracle_files (one patch call per
// issue) and cq2care, the budget anchor (localize, evidence and patch calls). One model call at a time per llm
// worker, so a kill of one finds it holding a known call.
const specOverrides = "{ name: 'pgfault', dataset+: { limit: 3 }, methods: super.methods[1:3], " +
	"models: [super.models[0] + { price: { input: 2.5, output: 10 } }], " +
	"limits+: { queues+: { llm+: { concurrency: 1 } } } }"

// callDelay is how long the fake takes per model call: long enough that kills land while calls are in flight and
// the sweep outlasts two server restarts.
const callDelay = 700 * time.Millisecond

// longOutage is how long the server stays down after its second kill: longer than the Temporal SDK waits for a
// workflow's result without an answer (65 s), after which `starter run --address` used to exit with "sweep failed:
// context deadline exceeded" while the sweep went on.
const longOutage = 75 * time.Second

// varyingFields are row fields that legitimately differ between two runs: grade_seconds is a wall time.
var varyingFields = []string{"grade_seconds"}

var tmpRoot string

func TestMain(m *testing.M) {
	var err error
	if tmpRoot, err = os.MkdirTemp("", "pgfault"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(tmpRoot)
	os.Exit(code)
}

// build builds ./starter and ./worker with one go build (one link step each, run side by side by the go command).
func build(root string) (starter, worker string, err error) {
	cmd := exec.Command("go", "build", "-o", tmpRoot+string(filepath.Separator), "./starter", "./worker")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("building ./starter and ./worker: %v\n%s", err, out)
	}
	return filepath.Join(tmpRoot, "starter"), filepath.Join(tmpRoot, "worker"), nil
}

// writeSpec writes the demo spec with specOverrides into dir.
func writeSpec(t *testing.T, dir string) string {
	t.Helper()
	return e2e.DemoVariant(t, filepath.Join(dir, "spec.jsonnet"), specOverrides)
}

// startProc starts one process in its own process group (a grade worker's test commands die with it); its output
// is logged when the test fails.
func startProc(t *testing.T, name string, env []string, cmd *exec.Cmd) *e2e.Proc {
	t.Helper()
	cmd.Env = env
	p := e2e.StartGroup(t, name, cmd)
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("--- %s output (last 4000 bytes):\n%s", p.Name, e2e.Tail(p.Out.String(), 4000))
		}
	})
	return p
}

// env is the environment without the host's OpenAI and ctxlab settings, plus extra.
func env(extra ...string) []string {
	return append(e2e.EnvWithout("OPENAI_", "CTXLAB_", "TEMPORAL_"), extra...)
}

// tracker stands in front of the fake endpoint and attributes each model call to the process that made it (through
// the socket's owner in /proc), so the test knows which worker holds which call.
type tracker struct {
	fake *fakeopenai.Server
	port int // the endpoint's port, set once it listens

	mu       sync.Mutex
	owners   map[int]string            // pid → process name, for the processes calls are attributed to
	inFlight map[string]map[string]int // process name → request → calls being answered
	asked    map[string][]string       // request → process names, one per call, in order
}

func newTracker(fake *fakeopenai.Server) *tracker {
	return &tracker{fake: fake, owners: map[int]string{}, inFlight: map[string]map[string]int{},
		asked: map[string][]string{}}
}

func (tr *tracker) own(pid int, name string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.owners[pid] = name
}

func (tr *tracker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		tr.fake.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return // a client killed while sending: no call
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	var req fakeopenai.ChatRequest
	if json.Unmarshal(body, &req) != nil {
		tr.fake.ServeHTTP(w, r)
		return
	}
	req.TaskName = r.Header.Get(offlinetask.TaskHeader)
	k := e2e.RequestKey(req)
	tr.mu.Lock()
	owner := socketOwner(r.RemoteAddr, tr.port, tr.owners)
	if tr.inFlight[owner] == nil {
		tr.inFlight[owner] = map[string]int{}
	}
	tr.inFlight[owner][k]++
	tr.asked[k] = append(tr.asked[k], owner)
	tr.mu.Unlock()
	defer func() {
		tr.mu.Lock()
		tr.inFlight[owner][k]--
		if tr.inFlight[owner][k] == 0 {
			delete(tr.inFlight[owner], k)
		}
		tr.mu.Unlock()
	}()
	tr.fake.ServeHTTP(w, r)
}

// holding returns the requests a process has in flight.
func (tr *tracker) holding(name string) []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var out []string
	for k := range tr.inFlight[name] {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// askers returns who asked each request, one entry per call.
func (tr *tracker) askers() map[string][]string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	out := make(map[string][]string, len(tr.asked))
	for k, v := range tr.asked {
		out[k] = append([]string(nil), v...)
	}
	return out
}

// distinct is the number of different requests received so far: the sweep's progress through its model calls.
func (tr *tracker) distinct() int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return len(tr.asked)
}

// socketOwner names the process among owners that holds the client end of the connection from remote to the
// endpoint's port: the socket's inode from /proc/net/tcp, then the process whose descriptors include it. "" when
// none does (a process not registered, such as an embedded starter's).
func socketOwner(remote string, serverPort int, owners map[int]string) string {
	_, portText, err := net.SplitHostPort(remote)
	if err != nil {
		return ""
	}
	clientPort, _ := strconv.Atoi(portText)
	inode := ""
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() && inode == "" {
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || hexPort(fields[1]) != clientPort || hexPort(fields[2]) != serverPort {
				continue
			}
			inode = fields[9]
		}
		f.Close()
	}
	if inode == "" {
		return ""
	}
	want := "socket:[" + inode + "]"
	for pid, name := range owners {
		fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		for _, fd := range fds {
			if link, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); link == want {
				return name
			}
		}
	}
	return ""
}

// hexPort reads the port of a /proc/net/tcp address (ADDR:PORT in hex).
func hexPort(addr string) int {
	i := strings.LastIndexByte(addr, ':')
	if i < 0 {
		return -1
	}
	p, err := strconv.ParseInt(addr[i+1:], 16, 32)
	if err != nil {
		return -1
	}
	return int(p)
}

// endpoint starts the fake behind a tracker.
func endpoint(t *testing.T) (*tracker, string) {
	t.Helper()
	fake := fakeopenai.New(fakeopenai.WithKey(key), fakeopenai.WithDelay("localize", callDelay),
		fakeopenai.WithDelay("evidence", callDelay), fakeopenai.WithDelay("patch", callDelay))
	tr := newTracker(fake)
	hs := httptest.NewServer(tr)
	t.Cleanup(hs.Close)
	tr.port = hs.Listener.Addr().(*net.TCPAddr).Port
	return tr, hs.URL + "/v1"
}

// TestServerKilledMidSweep is the cluster deployment's fault test; see the package comment. Kill points: the server
// after 1/4 of the uninterrupted run's different calls (started again at once, as a supervisor would), llm worker A
// while it holds a call once 2/5 are made, and the server again at 3/5, this time down for longOutage.
func TestServerKilledMidSweep(t *testing.T) {
	machines.Require(t)
	testBegan := time.Now()
	// The binaries build while PostgreSQL and the S3 server start; the uninterrupted run goes on while the
	// deployment starts.
	type binaries struct {
		starter, worker string
		err             error
	}
	built, root := make(chan binaries, 1), e2e.RepoRoot(t)
	go func() {
		var b binaries
		b.starter, b.worker, b.err = build(root)
		built <- b
	}()
	pg := pgtest.Start(t)
	s3 := s3server.Start(t)
	bins := <-built
	if bins.err != nil {
		t.Fatal(bins.err)
	}
	starterBin, workerBin := bins.starter, bins.worker
	t.Logf("binaries built, PostgreSQL and the S3 server started in %s", time.Since(testBegan).Round(time.Second))
	dir := t.TempDir()
	specDir := filepath.Join(dir, "spec")
	if err := os.Mkdir(specDir, 0o755); err != nil {
		t.Fatal(err)
	}
	spec := writeSpec(t, specDir)

	// The uninterrupted run: one starter with its embedded server and workers, on this machine.
	baseFake, baseURL := endpoint(t)
	baseRuns := filepath.Join(dir, "base")
	began := time.Now()
	base := startProc(t, "baseline starter", env("OPENAI_BASE_URL="+baseURL, "OPENAI_API_KEY="+key),
		exec.Command(starterBin, "run", spec, "--runs", baseRuns, "--ext-str", "model=openai", "--quiet"))

	// The deployment: the server and three workers now, each a machine of its own sharing only the Temporal server
	// (on the host's PostgreSQL) and the S3 store; the submitting starter once the uninterrupted run has given the
	// kill points. Every worker's run folder is its own disk at the same path; the starter's is kept visible to the
	// test, which reads its results.jsonl as an operator on that machine would.
	tr, url := endpoint(t)
	runs, starterRuns, logs := filepath.Join(dir, "runs"), filepath.Join(dir, "starter"), filepath.Join(dir, "logs")
	for _, d := range []string{starterRuns, logs} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	runDir := filepath.Join(starterRuns, "pgfault")
	// What every machine is given: the binaries, the spec and the checkout it imports (under /tmp in CI, which each
	// machine has its own of).
	given := []string{starterBin, workerBin, specDir, root}
	machine := func(name string, shared ...string) machines.Machine {
		return machines.Machine{Name: name, Private: []string{runs}, Shared: append(slices.Clone(given), shared...)}
	}
	frontend, err := e2e.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	address := net.JoinHostPort("127.0.0.1", strconv.Itoa(frontend))
	serverLog := filepath.Join(logs, "temporal-server.log")
	startServer := func(n int) *e2e.Proc {
		t.Helper()
		p := startProc(t, fmt.Sprintf("server (start %d)", n), env(), machines.Command(context.Background(),
			machine("temporal", logs), starterBin, "server", "--db", pg.URL("temporal"), "--address", address,
			"--log", serverLog))
		e2e.WaitFor(t, fmt.Sprintf("server start %d", n), 2*time.Minute, nil, func() bool {
			if p.Exited() {
				t.Fatalf("server start %d exited: %v\n%s", n, p.Err, p.Out.String())
			}
			return strings.Contains(p.Out.String(), "Temporal server at "+address)
		})
		return p
	}
	server := startServer(1)

	workerEnv := env(append(s3.Env(), "OPENAI_BASE_URL="+url, "OPENAI_API_KEY="+key)...)
	worker := func(name, queues string) *e2e.Proc {
		return startProc(t, "worker "+name, workerEnv, machines.Command(context.Background(), machine(name),
			workerBin, "--address", address, "--runs", runs, "--spec", spec, "--store", s3.URL(), "--queues", queues))
	}
	worker("workflow-cpu-grade", "workflow,cpu,grade")
	llmA, llmB := worker("llm-a", "llm"), worker("llm-b", "llm")
	tr.own(llmA.Cmd.Process.Pid, "A")
	tr.own(llmB.Cmd.Process.Pid, "B")

	select {
	case <-base.Done:
	case <-time.After(4 * time.Minute):
		t.Fatal("the uninterrupted run did not finish in 4 minutes")
	}
	if base.Err != nil {
		t.Fatalf("the uninterrupted run: %v\n%s", base.Err, base.Out.String())
	}
	want := e2e.ReadRows(t, filepath.Join(baseRuns, "pgfault", "results.jsonl"))
	baseAsked := baseFake.askers()
	baseCalls := baseFake.fake.Calls()
	if len(want) != 2*3 || len(baseAsked) < 8 {
		t.Fatalf("the uninterrupted run has %d rows and %d different calls; want 6 rows and at least 8 calls",
			len(want), len(baseAsked))
	}
	if baseCalls != len(baseAsked) {
		t.Fatalf("the uninterrupted run paid %d calls for %d different requests", baseCalls, len(baseAsked))
	}
	t.Logf("uninterrupted run: %d rows, %d calls in %s", len(want), baseCalls, time.Since(began).Round(time.Second))
	if tr.fake.Calls() != 0 {
		t.Fatalf("the deployment's workers made %d calls before any sweep was submitted", tr.fake.Calls())
	}

	starter := startProc(t, "starter", env(s3.Env()...), machines.Command(context.Background(),
		machine("starter", starterRuns), starterBin, "run", spec, "--runs", starterRuns, "--address", address,
		"--no-worker", "--quiet", "--ext-str", "model=openai", "--store", s3.URL()))
	sweepBegan := time.Now()

	n := len(baseAsked)
	killServer := func(i, at int, down time.Duration) {
		t.Helper()
		e2e.WaitFor(t, fmt.Sprintf("different call %d of %d", at, n), 3*time.Minute, starter,
			func() bool { return tr.distinct() >= at })
		server.Kill()
		rows := e2e.RowCount(filepath.Join(runDir, "results.jsonl"))
		t.Logf("server kill %d at %s: %d of %d different calls made, %d of %d rows written", i,
			time.Since(sweepBegan).Round(time.Millisecond), tr.distinct(), n, rows, len(want))
		if rows >= len(want) {
			t.Fatalf("server kill %d came after every row was written", i)
		}
		if down > 0 {
			t.Logf("the server stays down %s", down)
			time.Sleep(down)
		}
		server = startServer(i + 1)
		t.Logf("server back %s after kill %d", time.Since(sweepBegan).Round(time.Millisecond), i)
	}

	killServer(1, n/4, 0)

	// Worker A dies for good while it holds a model call.
	e2e.WaitFor(t, "a call held by llm worker A", 3*time.Minute, starter, func() bool {
		return tr.distinct() >= 2*n/5 && len(tr.holding("A")) > 0
	})
	held := tr.holding("A")
	llmA.Kill()
	t.Logf("llm worker A killed at %s holding %d call(s); %d of %d different calls made",
		time.Since(sweepBegan).Round(time.Millisecond), len(held), tr.distinct(), n)

	killServer(2, min(max(3*n/5, tr.distinct()+1), n), longOutage)

	select {
	case <-starter.Done:
	case <-time.After(4 * time.Minute):
		t.Fatal("the sweep did not complete in 4 minutes after the last kill")
	}
	if starter.Err != nil {
		t.Fatalf("starter run --address: %v\n%s", starter.Err, starter.Out.String())
	}
	t.Logf("faulted sweep finished in %s", time.Since(sweepBegan).Round(time.Second))
	// The long outage outlasted the SDK's own result wait: the starter saw the server lost, and waited on.
	if !strings.Contains(starter.Out.String(), "lost the Temporal server") {
		t.Errorf("the starter never reported the lost server, so the outage did not outlast its result wait:\n%s",
			starter.Out.String())
	}

	e2e.SameRows(t, e2e.ReadRows(t, filepath.Join(runDir, "results.jsonl")), want, varyingFields...)
	// Nothing of the run reached a disk but the starter's and the store: the workers' run folders were their own.
	if _, err := os.Stat(filepath.Join(runs, "pgfault")); err == nil {
		t.Errorf("a worker's run folder is on the host: %s", filepath.Join(runs, "pgfault"))
	}

	// Every request of the uninterrupted run, no other, each paid once but those worker A held when it died: each of
	// them paid once more, by the survivor.
	asked := tr.askers()
	heldSet := map[string]bool{}
	for _, k := range held {
		heldSet[k] = true
	}
	for k := range baseAsked {
		if len(asked[k]) == 0 {
			t.Errorf("the faulted sweep never made the call %.120q", k)
		}
	}
	calls := 0
	for k, who := range asked {
		calls += len(who)
		switch {
		case len(baseAsked[k]) == 0:
			t.Errorf("the faulted sweep made a call the uninterrupted one did not: %.120q", k)
		case heldSet[k]:
			if len(who) != 2 || who[0] != "A" || who[1] != "B" {
				t.Errorf("the call worker A held when it died was asked by %v, want A then B: %.120q", who, k)
			}
		case len(who) != 1:
			t.Errorf("call paid %d times (by %v): %.120q", len(who), who, k)
		}
		for _, w := range who {
			if w != "A" && w != "B" {
				t.Errorf("a call came from %q, not from an llm worker: %.120q", w, k)
			}
		}
	}
	if want := n + len(held); calls != want || tr.fake.Calls() != want {
		t.Errorf("%d calls paid (the endpoint counted %d), want the uninterrupted run's %d plus the %d worker A "+
			"held when it died", calls, tr.fake.Calls(), n, len(held))
	}
	// The ledger the starter gathered from the store holds every answered call once: those of worker A before it
	// died too (it was killed a moment after its previous call was answered), but not the call it held.
	ledger, _, err := runlog.Read[runlog.Call](filepath.Join(runDir, runfolder.CallsFile))
	if err != nil {
		t.Fatal(err)
	}
	paid := 0
	for _, c := range ledger {
		if c.Paid() && c.Error == "" {
			paid++
		}
	}
	if paid != n {
		t.Errorf("the ledger records %d paid calls, want the %d answered", paid, n)
	}
	afterKill := 0
	for _, who := range asked {
		for _, w := range who {
			if w == "B" {
				afterKill++
			}
		}
	}
	t.Logf("calls: %d (uninterrupted %d); %d by worker B, %d by worker A before it died", calls, n, afterKill,
		calls-afterKill)
}
