package faulttest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protoreflect"

	"ctxlab/internal/cluster"
	"ctxlab/results"
	"ctxlab/runfolder"
	"ctxlab/runlog"
	"ctxlab/specs"
	"ctxlab/starter/embedded"
	"ctxlab/store/bucket"
	"ctxlab/testkit/e2e"
	"ctxlab/testkit/fakeopenai"
	"ctxlab/testkit/machines"
)

// key is the API key the starter gets; it must appear nowhere but in the requests to the fake endpoint.
const key = "sk-ctxlab-fault-DO-NOT-LEAK-5e2b91c7d04a83f6"

// seedEnv replays a test's kill points.
const seedEnv = "CTXLAB_FAULT_SEED"

// specOverrides make the demo spec an openai sweep small enough to kill ten times in a few minutes: three instances,
// the methods up to CQ2-CARE's ablations (the baselines' only model call is a patch, which these make too) and a
// price table, so rows carry costs.
const specOverrides = "{ name: 'fault', dataset+: { limit: 3 }, methods: super.methods[0:6], " +
	"models: [super.models[0] + { price: { input: 2.5, output: 10 } }] }"

// varyingFields are row fields that legitimately differ between two runs of the same spec, so the comparison of a
// killed sweep's rows with an uninterrupted sweep's skips them. The kinds' row fields (specs) and results/row.go
// define no other field that measures time, counts attempts or names a process:
//   - grade_seconds is the wall time the instance's tests took.
var varyingFields = []string{"grade_seconds"}

var (
	buildOnce             sync.Once
	starterBin, workerBin string
	buildErr              error
	tmpRoot               string // removed after the tests: the binaries and the shared baseline's runs folder
)

func TestMain(m *testing.M) {
	var err error
	tmpRoot, err = os.MkdirTemp("", "faulttest")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(tmpRoot)
	os.Exit(code)
}

// binaries builds the starter and the worker once per test binary (one go build, their links side by side): real
// processes to kill, the starter with its embedded Temporal server inside it.
func binaries(t *testing.T) (starter, worker string) {
	t.Helper()
	buildOnce.Do(func() {
		cmd := exec.Command("go", "build", "-o", tmpRoot+string(filepath.Separator), "./starter", "./worker")
		cmd.Dir = e2e.RepoRoot(t)
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("building the starter and the worker: %v\n%s", err, out)
		}
		starterBin, workerBin = filepath.Join(tmpRoot, "starter"), filepath.Join(tmpRoot, "worker")
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return starterBin, workerBin
}

// writeSpec writes the demo spec with specOverrides and extra overrides (a Jsonnet object) into dir.
func writeSpec(t *testing.T, dir, extra string) string {
	t.Helper()
	overrides := specOverrides
	if extra != "" {
		overrides += " + " + extra
	}
	return e2e.DemoVariant(t, filepath.Join(dir, "spec.jsonnet"), overrides)
}

// fake is a fake endpoint behind a real HTTP server, answering as goldAnswer does.
type fake struct {
	*fakeopenai.Server
	url string

	mu   sync.Mutex
	seen map[string]bool // requests counted by distinct
	read int             // requests looked at
}

// distinct is the number of different requests received: the sweep's progress through its model calls, which
// repeated calls do not advance.
func (f *fake) distinct() int { return len(f.requestSet()) }

// requestSet returns the different requests received, each as task, model, seed, temperature and prompt.
func (f *fake) requestSet() map[string]bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	reqs := f.Requests()
	for _, r := range reqs[f.read:] {
		f.seen[e2e.RequestKey(r)] = true
	}
	f.read = len(reqs)
	return f.seen
}

// sameRequests checks that a resumed sweep asked the model exactly what the uninterrupted one asked: no question
// lost, and none that a restart changed (a different prompt, seed or temperature would be paid for and change
// results).
func sameRequests(t *testing.T, f *fake, base *sweep) {
	t.Helper()
	got := f.requestSet()
	f.mu.Lock()
	defer f.mu.Unlock()
	for k := range base.requests {
		if !got[k] {
			t.Errorf("the resumed sweep never made the call %.200q", k)
		}
	}
	for k := range got {
		if !base.requests[k] {
			t.Errorf("the resumed sweep made a call the uninterrupted one did not: %.200q", k)
		}
	}
}

func newFake(t *testing.T, runDir string, opts ...fakeopenai.Option) *fake {
	t.Helper()
	opts = append([]fakeopenai.Option{fakeopenai.WithKey(key), fakeopenai.WithAnswer(goldAnswer(runDir))}, opts...)
	s := fakeopenai.New(opts...)
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	return &fake{Server: s, url: hs.URL + "/v1", seen: map[string]bool{}}
}

// goldAnswer answers a patch call for the dataset's first instance with its gold patch when every line the patch
// removes is in the prompt (the context showed the code to change), and everything else as
// fakeopenai.DefaultAnswer does (an empty diff for other patches). So one instance's patches apply and are graded by
// running its tests, which puts grading among the kill points without making each sweep minutes long. The gold
// patch carries keyCheck's file, so those tests also check that the key did not reach them. The instance is read
// from the run folder's generated dataset at the first patch call.
func goldAnswer(runDir string) func(fakeopenai.ChatRequest) string {
	type instance struct {
		title, patch string
		removed      []string
	}
	var (
		once      sync.Once
		instances []instance
	)
	load := func() {
		f, err := os.Open(filepath.Join(runDir, "dataset", "demo.jsonl"))
		if err != nil {
			return // every patch gets the default (empty) answer; the rows comparison still holds
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<24)
		for sc.Scan() {
			var rec struct {
				Repo             string `json:"repo"`
				ProblemStatement string `json:"problem_statement"`
				Patch            string `json:"patch"`
			}
			if json.Unmarshal(sc.Bytes(), &rec) != nil {
				continue
			}
			check, err := keyCheck(filepath.Join(runDir, "dataset", "repos", rec.Repo), rec.Patch)
			if err != nil {
				return // no patch applies, so no row resolves and the tests' check of resolved rows fails
			}
			in := instance{title: strings.SplitN(rec.ProblemStatement, "\n", 2)[0], patch: rec.Patch + check}
			for line := range strings.SplitSeq(rec.Patch, "\n") {
				if strings.HasPrefix(line, "-") && !strings.HasPrefix(line, "---") && strings.TrimSpace(line[1:]) != "" {
					in.removed = append(in.removed, line[1:])
				}
			}
			instances = append(instances, in)
			return
		}
	}
	return func(req fakeopenai.ChatRequest) string {
		if req.Task() != "patch" {
			return fakeopenai.DefaultAnswer(req)
		}
		once.Do(load)
		prompt := req.Prompt()
		for _, in := range instances {
			if in.title == "" || !strings.Contains(prompt, in.title) || len(in.removed) == 0 {
				continue
			}
			shown := true
			for _, l := range in.removed {
				shown = shown && strings.Contains(prompt, l)
			}
			if shown {
				return "Here is the fix.\n\n```diff\n" + in.patch + "```\n"
			}
		}
		return fakeopenai.DefaultAnswer(req)
	}
}

// keyCheck returns a diff that adds a file to the package of the gold patch's first file whose init panics when
// OPENAI_API_KEY is set: appended to the gold patch, it makes the graded tests fail if the key reached them, so a
// resolved row shows that the tests ran without it. It names the variable only, never the key.
func keyCheck(repo, gold string) (string, error) {
	_, rest, ok := strings.Cut(gold, "diff --git a/")
	if !ok {
		return "", fmt.Errorf("gold patch without a file header")
	}
	file, _, _ := strings.Cut(rest, " ")
	src, err := os.ReadFile(filepath.Join(repo, file))
	if err != nil {
		return "", err
	}
	pkg := ""
	for line := range strings.SplitSeq(string(src), "\n") {
		if name, ok := strings.CutPrefix(line, "package "); ok {
			pkg = strings.TrimSpace(name)
			break
		}
	}
	if pkg == "" {
		return "", fmt.Errorf("%s has no package clause", file)
	}
	path := filepath.ToSlash(filepath.Join(filepath.Dir(file), "zz_keycheck_test.go"))
	lines := []string{"package " + pkg, "", `import "os"`, "", "func init() {",
		`	if os.Getenv("OPENAI_API_KEY") != "" {`, `		panic("the API key reached the graded tests")`, "	}", "}"}
	var b strings.Builder
	fmt.Fprintf(&b, "diff --git a/%s b/%s\nnew file mode 100644\n--- /dev/null\n+++ b/%s\n@@ -0,0 +1,%d @@\n",
		path, path, path, len(lines))
	for _, l := range lines {
		b.WriteString("+" + l + "\n")
	}
	return b.String(), nil
}

// run is one starter process.
type run struct{ *e2e.Proc }

// start starts the starter on spec with the run folder under runs, its embedded server and workers in one process,
// pointed at the fake endpoint with the key in its environment only: the uninterrupted run. It runs in its own
// process group, so a kill takes the test commands grading runs with it, as a crash of the machine would.
func start(t *testing.T, spec, runs string, f *fake) *run {
	t.Helper()
	starter, _ := binaries(t)
	cmd := exec.Command(starter, "run", spec, "--runs", runs, "--ext-str", "model=openai", "--quiet")
	cmd.Env = append(e2e.EnvWithout("OPENAI_", "CTXLAB_"), "OPENAI_BASE_URL="+f.url, "OPENAI_API_KEY="+key)
	return &run{e2e.StartGroup(t, "starter", cmd)}
}

// deployment is a faulted sweep's machines (testkit/machines), sharing only the Temporal server and a file://
// store: the starter's, whose process holds the embedded server and writes the rows but runs no worker, and a worker
// machine for every queue, the only one with the API key, whose run folder is its own disk. Either is killed with
// SIGKILL (a kill takes the test commands grading runs with it, as a crash of the machine would) and started again;
// a worker starts on a fresh machine, its disk empty.
type deployment struct {
	t                   *testing.T
	f                   *fake
	spec, runs, workers string // the starter's run folders (kept visible to the test) and the workers'
	store, storeDir     string
	address             string // the embedded server's frontend, which a restarted starter serves again
	starter, worker     *run
	procs               []*run // every process started, for the key check of their output
}

func newDeployment(t *testing.T, dir, extra string, f func(runDir string) *fake) *deployment {
	t.Helper()
	machines.Require(t)
	d := &deployment{t: t, runs: filepath.Join(dir, "runs"), workers: filepath.Join(dir, "workers"),
		storeDir: filepath.Join(dir, "store")}
	for _, p := range []string{filepath.Join(dir, "spec"), d.runs, d.storeDir} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	d.spec = writeSpec(t, filepath.Join(dir, "spec"), extra)
	d.store = "file://" + d.storeDir
	d.f = f(d.runDir())
	return d
}

// runDir is the starter's run folder.
func (d *deployment) runDir() string { return filepath.Join(d.runs, "fault") }

// machine runs bin on a machine of its own named name, given the binaries, the spec and the checkout it imports
// (under /tmp in CI, which each machine has its own of), and sharing the store's folder.
func (d *deployment) machine(name string, env []string, bin string, args ...string) *run {
	starter, worker := binaries(d.t)
	m := machines.Machine{Name: name, Private: []string{d.workers},
		Shared: []string{starter, worker, filepath.Dir(d.spec), e2e.RepoRoot(d.t), d.storeDir}}
	if bin == starter {
		m.Shared = append(m.Shared, d.runs)
	}
	cmd := machines.Command(context.Background(), m, bin, args...)
	cmd.Env = append(e2e.EnvWithout("OPENAI_", "CTXLAB_", "TEMPORAL_"), env...)
	r := &run{e2e.StartGroup(d.t, name, cmd)}
	d.procs = append(d.procs, r)
	return r
}

// restart starts the starter and the worker, whichever is not running, and returns once the starter serves the
// embedded server (the ports of its last start: the worker's --address holds) or has exited.
func (d *deployment) restart() {
	t := d.t
	t.Helper()
	starter, worker := binaries(t)
	if d.starter == nil || d.starter.Exited() {
		d.starter = d.machine("starter", nil, starter, "run", d.spec, "--runs", d.runs, "--ext-str", "model=openai",
			"--quiet", "--no-worker", "--store", d.store)
		address := ""
		e2e.WaitFor(t, "the starter's embedded server", restartPatience, nil, func() bool {
			address = serving(d.runDir(), d.starter.Cmd.Process.Pid)
			return address != "" || d.starter.Exited()
		})
		if d.address != "" && address != "" && address != d.address {
			t.Fatalf("the restarted starter serves %s, not %s where the worker looks", address, d.address)
		}
		if address != "" {
			d.address = address
		}
	}
	if d.worker == nil || d.worker.Exited() {
		d.worker = d.machine("worker", []string{"OPENAI_BASE_URL=" + d.f.url, "OPENAI_API_KEY=" + key}, worker,
			"--address", d.address, "--runs", d.workers, "--spec", d.spec, "--store", d.store,
			"--queues", "workflow,cpu,grade,llm")
	}
}

// serving is the address of the embedded server that the process pid published in the run folder dir, "" until it
// has.
func serving(dir string, pid int) string {
	b, err := os.ReadFile(runfolder.Server(dir))
	var sf struct {
		PID     int    `json:"pid"`
		Address string `json:"address"`
	}
	if err != nil || json.Unmarshal(b, &sf) != nil || sf.PID != pid {
		return ""
	}
	return sf.Address
}

// ledger gathers the run's call records from the store, where the worker stored them, into a file of the test's.
func (d *deployment) ledger() string {
	t := d.t
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	objs, err := bucket.OpenObjects(ctx, d.store, "fault", d.runDir())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), runfolder.CallsFile)
	if _, err := runlog.Gather(ctx, objs, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// wait waits for the starter to finish, failing the test on a timeout or an exit other than 0.
func (r *run) wait(t *testing.T, what string, timeout time.Duration) {
	t.Helper()
	select {
	case <-r.Done:
	case <-time.After(timeout):
		r.Kill()
		t.Fatalf("%s did not finish in %s\noutput:\n%s", what, timeout, r.Out.String())
	}
	if r.Err != nil {
		t.Fatalf("%s: %v\noutput:\n%s", what, r.Err, r.Out.String())
	}
}

// sweep is a finished run's facts.
type sweep struct {
	dir      string
	calls    int
	distinct int             // different requests among the calls
	requests map[string]bool // those requests (see fake.requestSet)
	perTask  map[string]int
	rows     map[results.Key]results.Row
	duration time.Duration
	err      error
}

var tasks = []string{"localize", "evidence", "patch", ""}

func countTasks(f *fake) map[string]int {
	out := map[string]int{}
	for _, task := range tasks {
		if n := f.CallsFor(task); n > 0 {
			out[task] = n
		}
	}
	return out
}

var (
	baselineMu  sync.Mutex
	baselineRun *sweep
)

// baseline is one uninterrupted run of the fault spec against its own fake, shared by the tests.
func baseline(t *testing.T) *sweep {
	t.Helper()
	baselineMu.Lock()
	defer baselineMu.Unlock()
	if baselineRun == nil {
		baselineRun = runBaseline(t)
	}
	if baselineRun.err != nil {
		t.Fatal(baselineRun.err)
	}
	return baselineRun
}

func runBaseline(t *testing.T) *sweep {
	dir, err := os.MkdirTemp(tmpRoot, "baseline")
	if err != nil {
		return &sweep{err: err}
	}
	spec := writeSpec(t, dir, "")
	runs := filepath.Join(dir, "runs")
	f := newFake(t, filepath.Join(runs, "fault"))
	began := time.Now()
	r := start(t, spec, runs, f)
	select {
	case <-r.Done:
	case <-time.After(5 * time.Minute):
		r.Kill()
		return &sweep{err: fmt.Errorf("the baseline run did not finish in 5 minutes\n%s", r.Out.String())}
	}
	if r.Err != nil {
		return &sweep{err: fmt.Errorf("the baseline run: %v\n%s", r.Err, r.Out.String())}
	}
	s := &sweep{dir: filepath.Join(runs, "fault"), calls: f.Calls(), distinct: f.distinct(), perTask: countTasks(f),
		duration: time.Since(began), requests: maps.Clone(f.requestSet())}
	s.rows, s.err = e2e.LoadRows(filepath.Join(s.dir, "results.jsonl"))
	if s.err == nil && len(s.rows) != 6*3 {
		s.err = fmt.Errorf("the baseline has %d rows, want 6 methods x 3 instances", len(s.rows))
	}
	resolved := 0
	for _, r := range s.rows {
		if ok, _ := r.Bool(specs.Resolved.Name); ok {
			resolved++
		}
	}
	if s.err == nil && resolved == 0 {
		s.err = fmt.Errorf("no row of the baseline resolves: the gold patches with their key check were not graded")
	}
	if s.err == nil && (s.calls == 0 || f.InFlight() != 0) {
		s.err = fmt.Errorf("the baseline made %d calls, %d still in flight", s.calls, f.InFlight())
	}
	t.Logf("baseline: %d paid calls (%d different) %v in %s; %d rows resolved, graded without the key", s.calls,
		s.distinct, s.perTask, s.duration.Round(time.Millisecond), resolved)
	return s
}

// seed is the kill points' seed: CTXLAB_FAULT_SEED when set, else the time.
func seed(t *testing.T) uint64 {
	t.Helper()
	s := uint64(time.Now().UnixNano())
	if v := os.Getenv(seedEnv); v != "" {
		var err error
		if s, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("%s=%q: %v", seedEnv, v, err)
		}
	}
	t.Logf("seed %d (replay with %s=%d)", s, seedEnv, s)
	return s
}

// running lists the node activities that started at or after since and had not ended when the attempts file was
// read: where a kill landed.
func running(dir string, since time.Time) []string {
	as, _, _ := runlog.Read[runlog.Attempt](filepath.Join(dir, runfolder.AttemptsFile))
	open := map[string]string{}
	for _, a := range as {
		if a.Time.Before(since) {
			continue
		}
		id := a.Workflow + "|" + a.Node + "|" + strconv.Itoa(int(a.Attempt))
		switch a.Event {
		case runlog.EventStart:
			open[id] = a.Instance + ":" + a.Step
		case runlog.EventDone, runlog.EventFail:
			delete(open, id)
		}
	}
	out := make([]string, 0, len(open))
	for _, s := range open {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// killPoint is where one kill landed.
type killPoint struct {
	trigger  string
	victim   string        // whose machine was killed
	after    time.Duration // since the restart
	calls    int           // the fake's calls at the kill
	inFlight int           // calls in flight at the kill (see TestKilledSweepResumes)
	// serverInFlight counts the calls the fake was answering at the kill.
	serverInFlight int
	running        []string
}

// restartPatience bounds the wait for a restarted sweep's next model call. A resumed activity waits for the
// heartbeat timeout of the attempt the kill cut off (15 s) and the workflows for their task timeouts, so a minute
// is slack; a longer wait means the restart is stuck.
const restartPatience = 2 * time.Minute

// callDelay is how long the fake takes to answer a model call in TestKilledSweepResumes.
const callDelay = 100 * time.Millisecond

// dbWithoutKey checks Temporal's database files in the run folder for the key (a kill in the first start may come
// before they exist; noKey requires them at the end).
func dbWithoutKey(t *testing.T, runDir string) {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(runDir, "temporal.db*"))
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(key)) {
			t.Errorf("the API key is in %s", p)
		}
	}
}

// TestKilledSweepResumes kills the machines of an openai demo sweep with SIGKILL at 10 random points, each time
// the starter's (its embedded Temporal server with it), the worker's (every model call, step and grade in flight with
// it), or both, and starts again what was killed, the worker on a fresh machine; after the 10th kill the sweep runs
// to completion. The final rows equal an uninterrupted single-process run's, row by row, the paid calls exceed that
// run's by at most the calls in flight at the kills (sent, and their answers not yet stored), no answer once stored
// was paid for again, and the key is nowhere in the starter's run folder, the store or the workflow histories.
//
// Kill points: ten call counts drawn from [0, N-3] (N: the uninterrupted run's different calls), sorted; each
// restart waits for the fake to have received that many different calls (repeats are no progress) and kills
// 0-400 ms later, landing in a model call, in the parsing and storing after it, or in the CPU and grading steps
// running beside it. A count already reached at the restart (calls come in bursts) either moves on to 1-3 calls
// past the count reached, or kills 0.5-2 s after the restart: in the embedded server's start, the worker's start, or
// the resumption of the killed activities (a quarter of that when all but the last two calls were made, since what
// is left can then finish that fast). Counts below N-2 leave the sweep unfinished at every kill.
func TestKilledSweepResumes(t *testing.T) {
	t.Parallel() // beside TestKilledDuringPatchCall: own machines, store, fake endpoint and processes
	base := baseline(t)
	rng := rand.New(rand.NewPCG(seed(t), 0x5eed))
	// Every random number is drawn here, before any timing can change how many are drawn, so a seed replays them.
	limit := max(base.distinct-2, 1) // counts below this leave the sweep unfinished
	type draw struct {
		startup    bool          // a count already reached kills in the restart rather than moving on
		step       int           // how far past the count reached at the restart a moved-on kill waits
		startDelay time.Duration // after the restart, for a kill in it
		callDelay  time.Duration // after the count is reached
		victim     int           // 0: the starter's machine, 1: the worker's, 2: both
	}
	thresholds, draws := make([]int, 10), make([]draw, 10)
	for i := range thresholds {
		thresholds[i] = rng.IntN(limit)
		draws[i] = draw{startup: rng.IntN(2) == 0, step: 1 + rng.IntN(3),
			startDelay: 500*time.Millisecond + time.Duration(rng.Int64N(int64(1500*time.Millisecond))),
			callDelay:  time.Duration(rng.Int64N(int64(400 * time.Millisecond))), victim: rng.IntN(3)}
	}
	sort.Ints(thresholds)

	// Answers take 100 ms, as a real endpoint's take longer still, so some kills land while a call is answered.
	d := newDeployment(t, t.TempDir(), "", func(runDir string) *fake {
		return newFake(t, runDir, fakeopenai.WithDelay("localize", callDelay),
			fakeopenai.WithDelay("evidence", callDelay), fakeopenai.WithDelay("patch", callDelay))
	})
	f, runDir := d.f, d.runDir()
	var points []killPoint
	lost := 0 // calls paid for whose answers no process stored, so far
	began := time.Now()
	for i, threshold := range thresholds {
		restarted := time.Now()
		d.restart()
		kp, dr := killPoint{}, draws[i]
		var delay time.Duration
		reached := f.distinct()
		if threshold <= reached && !dr.startup && reached+dr.step < limit {
			threshold = reached + dr.step
		}
		if f.distinct() >= threshold {
			delay = dr.startDelay
			if reached >= limit {
				// Every call but the last two made: what is left (the last calls, answered from the ledger, and
				// the grades) can finish within a second or two of a restart, so the kill lands in the start.
				delay /= 4
			}
			kp.trigger = fmt.Sprintf("%s after the restart", delay.Round(time.Millisecond))
		} else {
			deadline := restarted.Add(restartPatience)
			for f.distinct() < threshold && !d.starter.Exited() && !d.worker.Exited() {
				if time.Now().After(deadline) {
					t.Fatalf("restart %d reached no distinct call %d in %s (running %v)\nstarter output:\n%s", i,
						threshold, restartPatience, running(runDir, restarted), d.starter.Out.String())
				}
				time.Sleep(2 * time.Millisecond)
			}
			delay = dr.callDelay
			kp.trigger = fmt.Sprintf("distinct call %d + %s", threshold, delay.Round(time.Millisecond))
		}
		select {
		case <-d.starter.Done:
		case <-d.worker.Done:
		case <-time.After(delay):
		}
		for _, r := range []*run{d.starter, d.worker} {
			if r.Exited() && r.Err != nil {
				t.Fatalf("the %s failed before kill %d: %v\noutput:\n%s", r.Name, i+1, r.Err, r.Out.String())
			}
		}
		if d.starter.Exited() {
			t.Fatalf("the sweep finished before kill %d (%s); the kill points assume it cannot\noutput:\n%s",
				i+1, kp.trigger, d.starter.Out.String())
		}
		// Calls in flight at the kill, seen from the server: those being answered just before it, and those that
		// arrived between that sample and the kill (counted once the process is gone and no call can arrive).
		before, inFlight := f.Calls(), f.InFlight()
		kp.running = running(runDir, restarted)
		kp.victim = []string{"starter", "worker", "starter and worker"}[dr.victim]
		if dr.victim != 1 {
			d.starter.Kill()
		}
		if dr.victim != 0 {
			d.worker.Kill()
		}
		kp.calls = f.Calls()
		kp.serverInFlight = inFlight + kp.calls - before
		// Seen from the run: calls the server received whose answers no process had stored yet in the ledger. On a
		// loaded machine an answer can leave the server some milliseconds before the worker stores it; such a
		// call was in flight for the run although the server had finished it. A worker that lives on may still
		// store it: the bound only grows.
		unstored := kp.calls - ledgerPaid(t, d.ledger())
		kp.inFlight = max(unstored-lost, kp.serverInFlight)
		lost = max(unstored, lost)
		kp.after = time.Since(restarted)
		points = append(points, kp)
		dbWithoutKey(t, runDir) // as the crash left it, write-ahead log included
		t.Logf("kill %2d of the %s at %6s after the restart (%s): %3d calls, %d in flight (%d being answered), "+
			"running %v", i+1, kp.victim, kp.after.Round(time.Millisecond), kp.trigger, kp.calls, kp.inFlight,
			kp.serverInFlight, kp.running)
	}
	d.restart()
	(&run{d.starter.Proc}).wait(t, "the run after the last kill", 5*time.Minute)
	t.Logf("faulted run: 10 kills and %d processes in %s (the uninterrupted run: %s)", len(d.procs),
		time.Since(began).Round(time.Millisecond), base.duration.Round(time.Millisecond))

	rows, err := e2e.LoadRows(filepath.Join(runDir, "results.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	e2e.SameRows(t, rows, base.rows, varyingFields...)

	inFlight := 0
	for _, p := range points {
		inFlight += p.inFlight
	}
	calls := f.Calls()
	t.Logf("paid calls: uninterrupted %d %v; killed and resumed %d %v; in flight at the kills %d; repeated %d",
		base.calls, base.perTask, calls, countTasks(f), inFlight, calls-base.calls)
	if calls > base.calls+inFlight {
		t.Errorf("%d paid calls, more than the uninterrupted run's %d plus the %d in flight at the kills",
			calls, base.calls, inFlight)
	}
	sameRequests(t, f, base)
	noAnswerPaidTwice(t, filepath.Join(runDir, runfolder.CallsFile))
	if !f.LastAuthorizedWith(key) {
		t.Error("the fake never received the key, so its absence below proves nothing")
	}
	noKey(t, d)
}

// TestKilledDuringPatchCall kills the worker's machine while the fake holds a patch call's answer, with one model
// call at a time (the llm queue's concurrency is 1), so exactly that call is in flight; with a worker on a fresh
// machine the sweep completes with the uninterrupted run's rows and at most one paid call more than it.
func TestKilledDuringPatchCall(t *testing.T) {
	t.Parallel()
	base := baseline(t)
	rng := rand.New(rand.NewPCG(seed(t), 0xca11))
	nth := 1 + rng.IntN(max(base.perTask["patch"], 1))
	t.Logf("killing during patch call %d of %d", nth, base.perTask["patch"])

	d := newDeployment(t, t.TempDir(), "{ limits+: { queues+: { llm+: { concurrency: 1 } } } }",
		func(runDir string) *fake {
			return newFake(t, runDir, fakeopenai.WithDelay("patch", 400*time.Millisecond))
		})
	f, runDir := d.f, d.runDir()
	d.restart()
	deadline := time.Now().Add(3 * time.Minute)
	for f.CallsFor("patch") < nth || f.InFlightFor("patch") == 0 {
		if d.starter.Exited() || d.worker.Exited() {
			t.Fatalf("the starter or the worker exited before patch call %d was in flight: %v, %v\n%s\n%s", nth,
				d.starter.Err, d.worker.Err, d.starter.Out.String(), d.worker.Out.String())
		}
		if time.Now().After(deadline) {
			t.Fatalf("patch call %d never came", nth)
		}
		time.Sleep(2 * time.Millisecond)
	}
	before, inFlight, patchInFlight := f.Calls(), f.InFlight(), f.InFlightFor("patch")
	d.worker.Kill()
	inFlight += f.Calls() - before // calls that arrived between the sample and the kill
	t.Logf("worker killed with %d calls made, %d in flight (%d patch)", f.Calls(), inFlight, patchInFlight)
	if inFlight != 1 || patchInFlight != 1 {
		t.Errorf("%d calls in flight at the kill (%d patch), want exactly the patch call", inFlight, patchInFlight)
	}
	f.SetDelay("patch", 0) // the restart need not wait

	d.restart()
	(&run{d.starter.Proc}).wait(t, "the sweep after the worker's restart", 5*time.Minute)
	rows, err := e2e.LoadRows(filepath.Join(runDir, "results.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	e2e.SameRows(t, rows, base.rows, varyingFields...)
	calls := f.Calls()
	t.Logf("paid calls: uninterrupted %d %v; worker killed during a patch call and replaced %d %v",
		base.calls, base.perTask, calls, countTasks(f))
	if calls > base.calls+1 {
		t.Errorf("%d paid calls, want the uninterrupted run's %d plus at most the one in flight", calls, base.calls)
	}
	sameRequests(t, f, base)
	noKey(t, d)
}

// noKey checks that the key is in no file of the starter's run folder (Temporal's SQLite database and its write-ahead
// log, logs, node outputs, attempt and call records) nor of the store (the content store, memos, the records the
// worker shipped), in no output of the starter or the worker, and in no event of any workflow history, read back
// through the embedded server started on the run's database.
func noKey(t *testing.T, d *deployment) {
	t.Helper()
	runDir := d.runDir()
	for i, r := range d.procs {
		if strings.Contains(r.Out.String(), key) {
			t.Errorf("process %d (the %s) printed the key", i+1, r.Name)
		}
	}
	checked, names := 0, map[string]bool{}
	for _, dir := range []string{runDir, d.storeDir} {
		e2e.EachFile(t, dir, func(path string, b []byte) {
			checked++
			names[filepath.Base(path)] = true
			if bytes.Contains(b, []byte(key)) {
				t.Errorf("the API key is in %s", path)
			}
		})
	}
	for _, want := range []string{"temporal.db", "results.jsonl", runfolder.AttemptsFile, "ctxlab.log", "temporal.log"} {
		if !names[want] {
			t.Errorf("the run folder has no %s, so it was not checked", want)
		}
	}
	if checked < 50 {
		t.Errorf("only %d files checked for the key", checked)
	}

	workflows, events := historiesWithoutKey(t, runDir)
	t.Logf("key absent from %d files of the run folder and %d events of %d workflow histories", checked, events, workflows)
	if workflows < 4 || events < 100 {
		t.Errorf("only %d workflows with %d events read back: the history check saw too little", workflows, events)
	}
}

// historiesWithoutKey starts the embedded server on the run folder's database and reads every workflow's history:
// each event as protojson and every string and bytes field (payloads are bytes, base64 in JSON) are searched.
func historiesWithoutKey(t *testing.T, runDir string) (workflows, events int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := embedded.Start(ctx, embedded.Options{
		DBFile:  filepath.Join(runDir, "temporal.db"),
		LogFile: filepath.Join(t.TempDir(), "temporal.log"),
	})
	if err != nil {
		t.Fatalf("restarting the embedded server on the run's database: %v", err)
	}
	defer func() { _ = srv.Stop() }()
	c, err := cluster.Dial(ctx, cluster.Options{Address: srv.HostPort(), Namespace: srv.Namespace()}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	var token []byte
	for {
		page, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: srv.Namespace(), PageSize: 100, NextPageToken: token})
		if err != nil {
			t.Fatalf("listing workflows: %v", err)
		}
		for _, ex := range page.Executions {
			workflows++
			id, runID := ex.Execution.WorkflowId, ex.Execution.RunId
			it := c.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
			for it.HasNext() {
				ev, err := it.Next()
				if err != nil {
					t.Fatalf("history of %s/%s: %v", id, runID, err)
				}
				events++
				js, err := protojson.Marshal(ev)
				if err != nil {
					t.Fatal(err)
				}
				leaked := bytes.Contains(js, []byte(key))
				visitText(ev.ProtoReflect(), func(b []byte) { leaked = leaked || bytes.Contains(b, []byte(key)) })
				if leaked {
					t.Errorf("the API key is in event %d (%s) of workflow %s run %s", ev.EventId, ev.EventType, id, runID)
				}
			}
		}
		if token = page.NextPageToken; len(token) == 0 {
			return workflows, events
		}
	}
}

// visitText calls visit with every string and bytes field of a message, nested messages, lists and maps included.
func visitText(m protoreflect.Message, visit func([]byte)) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList():
			l := v.List()
			for i := range l.Len() {
				visitValue(fd, l.Get(i), visit)
			}
		case fd.IsMap():
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				visit([]byte(k.String()))
				visitValue(fd.MapValue(), mv, visit)
				return true
			})
		default:
			visitValue(fd, v, visit)
		}
		return true
	})
}

func visitValue(fd protoreflect.FieldDescriptor, v protoreflect.Value, visit func([]byte)) {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		visitText(v.Message(), visit)
	case protoreflect.BytesKind:
		visit(v.Bytes())
	case protoreflect.StringKind:
		visit([]byte(v.String()))
	}
}

// ledgerPaid counts the paid calls the ledger (a calls file) records: calls whose answers a process stored.
func ledgerPaid(t *testing.T, ledger string) int {
	t.Helper()
	calls, _, err := runlog.Read[runlog.Call](ledger)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range calls {
		if c.Paid() && c.Error == "" {
			n++
		}
	}
	return n
}

// noAnswerPaidTwice checks the ledger: once an answer was stored, the same request was never paid for again, across
// every kill and restart (later askers were served from the response cache).
func noAnswerPaidTwice(t *testing.T, ledger string) {
	t.Helper()
	calls, _, err := runlog.Read[runlog.Call](ledger)
	if err != nil {
		t.Fatal(err)
	}
	paid, cached := map[string][]runlog.Call{}, 0
	for _, c := range calls {
		switch {
		case c.Cached:
			cached++
		case c.Error == "":
			paid[c.Key] = append(paid[c.Key], c)
		}
	}
	for k, cs := range paid {
		if len(cs) > 1 {
			t.Errorf("request %s was paid %d times after its answer was stored: %+v", k[:12], len(cs), cs)
		}
	}
	t.Logf("ledger: %d different answers paid, %d served from the response cache after restarts", len(paid), cached)
}
