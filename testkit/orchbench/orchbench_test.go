package orchbench

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/client"

	"ctxlab/activities"
	"ctxlab/activities/api"
	"ctxlab/activities/limiter"
	"ctxlab/demobench"
	"ctxlab/internal/logs"
	"ctxlab/jsonnet"
	"ctxlab/results"
	"ctxlab/runfolder"
	"ctxlab/runlog"
	"ctxlab/specs"
	"ctxlab/starter/embedded"
	"ctxlab/store/bucket"
	"ctxlab/store/cas"
	"ctxlab/testkit/fakeopenai"
	"ctxlab/wiring"
	"ctxlab/workflows"
)

var (
	issues  = flag.Int("orch.issues", 300, "issues in the benchmark's sweep")
	methods = flag.Int("orch.methods", 12, "methods in the benchmark's sweep")
	wayList = flag.String("orch.ways", "now,before", "comma-separated ways to run the Temporal side: "+
		"now, before, and one lever of now's taken back each: remote (every node on its queue), rollback (the old "+
		"SQLite journal)")
	paid = flag.Bool("orch.paid", false, "give the methods an openai model answered by an in-process fake "+
		"endpoint, with no response cache and a spend cap, so that every patch is a paid call the run's budget "+
		"admits and settles")
)

// paidCap is the spend cap of a -orch.paid sweep: far above what it spends, so that every call asks and none waits.
const paidCap = 1e6

// way is how the Temporal side runs a sweep.
type way struct {
	name       string
	remoteOnly bool             // every node on its kind's task queue
	journal    embedded.Journal // how the embedded server's SQLite commits
}

var (
	// before is how ctxlab ran sweeps until cheap nodes ran locally: every node a task-queue round trip, and the
	// server's SQLite on its rollback journal synced at every commit.
	before = way{name: "before", remoteOnly: true, journal: embedded.JournalRollback}
	// now is how it runs them: cheap nodes as local activities in the workflow worker, SQLite in WAL mode.
	now = way{name: "now"}
	// ways by name, now's levers among them, each taken back alone.
	ways = map[string]way{"now": now, "before": before,
		"remote":   {name: "remote", remoteOnly: true},
		"rollback": {name: "rollback", journal: embedded.JournalRollback},
	}
)

// chosenWays are the ways -orch.ways names.
func chosenWays(t testing.TB) []way {
	var out []way
	for name := range strings.SplitSeq(*wayList, ",") {
		w, ok := ways[name]
		if !ok {
			t.Fatalf("-orch.ways: no way %q", name)
		}
		out = append(out, w)
	}
	return out
}

// sweep is a generated experiment and its plan.
type sweep struct {
	e    *specs.Experiment
	plan *specs.Plan
}

// libraryPatchParams returns the parameters (prompt, edit format) ctxlab.libsonnet gives every method's patch step.
func libraryPatchParams(t testing.TB) map[string]any {
	t.Helper()
	e, err := jsonnet.Compile(filepath.Join("..", "..", "specs", "demo.jsonnet"), jsonnet.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range e.Methods[0].Steps {
		if s.Activity == "patch" {
			return s.Params
		}
	}
	t.Fatal("the demo's first method has no patch step")
	return nil
}

// generate builds a dataset of n issues by repeating the demo benchmark's instances under new ids (their
// repositories are shared, so checkout is cheap after the first), and m methods: no_source and oracle_files
// alternately, each with its own replica param (declared for this) so that no two methods share a node but
// checkout, each ending in patch and measure (no grading: the benchmark measures orchestration, not test runs).
func generate(t testing.TB, dir string, n, m int) sweep {
	t.Helper()
	res, err := demobench.Generate(filepath.Join(dir, "dataset"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(res.DatasetDir, "bench.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	for i := range n {
		in := res.Instances[i%len(res.Instances)]
		in.InstanceID = fmt.Sprintf("%s-b%03d", in.InstanceID, i)
		b, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(append(b, '\n'))
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()

	e := &specs.Experiment{
		Name:    "orchbench",
		Dataset: specs.Dataset{File: f.Name(), Repos: "{dataset_dir}/repos/{repo}"},
		Models:  []specs.Model{{Name: "offline", Provider: "offline"}},
		Limits:  specs.Limits{Concurrency: 16},
	}
	if *paid {
		fake := httptest.NewServer(fakeopenai.New(fakeopenai.WithUsage(100, 50)))
		t.Cleanup(fake.Close)
		t.Setenv(specs.OpenAI.Env.BaseURL, fake.URL+"/v1")
		t.Setenv(specs.OpenAI.Env.Key, "")
		e.Models = []specs.Model{{Name: "gpt", Provider: "openai", ID: "gpt",
			Price: specs.Price{Input: 2.5, Output: 10}}}
		e.Limits.SpendUSD = paidCap
	}
	patch := libraryPatchParams(t)
	for i := range m {
		ctxAct := []string{"no_source", "oracle_files"}[i%2]
		e.Methods = append(e.Methods, specs.Method{Name: fmt.Sprintf("m%02d_%s", i, ctxAct), Steps: []specs.Step{
			{ID: "checkout", Activity: "checkout"},
			{ID: "context", Activity: ctxAct, Params: map[string]any{"replica": i},
				Inputs: map[string]string{"checkout": "checkout"}},
			{ID: "patch", Activity: "patch", Params: patch,
				Inputs: map[string]string{"checkout": "checkout", "context": "context"}},
			{ID: "measure", Activity: "measure",
				Inputs: map[string]string{"checkout": "checkout", "context": "context", "patch": "patch"}},
		}})
	}
	e.SetDefaults()
	if errs := specs.Validate(e); len(errs) > 0 {
		t.Fatalf("generated spec: %v", errs)
	}
	plan, err := specs.BuildPlan(e)
	if err != nil {
		t.Fatal(err)
	}
	// One shared checkout, and a context, patch and measure node per method: the benchmark's numbers stay
	// comparable only while no two methods share a node.
	if want := 1 + 3*m; len(plan.Nodes) != want {
		t.Fatalf("plan has %d nodes, want %d", len(plan.Nodes), want)
	}
	return sweep{e: e, plan: plan}
}

// peak samples the Go heap in use until stopped, and returns its maximum in MiB.
func peak() (stop func() float64) {
	runtime.GC()
	var maxHeap atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		var ms runtime.MemStats
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > maxHeap.Load() {
				maxHeap.Store(ms.HeapInuse)
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	})
	return func() float64 {
		close(done)
		wg.Wait()
		return float64(maxHeap.Load()) / (1 << 20)
	}
}

// outcome is one way of running the sweep.
type outcome struct {
	wall       time.Duration
	activities int // node and bookkeeping activities that ran
	rows       int
	peakMiB    float64
}

func (o outcome) perSecond() float64 { return float64(o.activities) / o.wall.Seconds() }

// nodeFunc is the signature every DAG node activity has.
type nodeFunc = func(context.Context, api.NodeInput) (api.NodeOutput, error)

// runPlain runs the sweep's DAGs as goroutines calling the activity methods directly: the same issue concurrency,
// the same per-kind slots as the workers, nodes started as soon as their inputs are done, rows recorded per issue.
func runPlain(t testing.TB, s sweep, runs string) outcome {
	t.Helper()
	ctx := context.Background()
	a := activities.New(runs, zerolog.Nop())
	a.NoCache = *paid
	markRun(t, a, s.e.Name)
	stopPeak := peak()
	start := time.Now()
	var count atomic.Int64
	refs, err := a.LoadDataset(ctx, api.LoadDatasetInput{Run: s.e.Name, Dataset: s.e.Dataset})
	if err != nil {
		t.Fatal(err)
	}
	count.Add(1)
	fns := a.Functions()
	slots := map[string]chan struct{}{}
	for _, kind := range []string{specs.QueueLLM, specs.QueueCPU, specs.QueueGrade} {
		slots[kind] = make(chan struct{}, wiring.DefaultSlots(kind))
	}
	issueSem := make(chan struct{}, s.e.Limits.Concurrency)
	var wg sync.WaitGroup
	var failed atomic.Int64
	for _, ref := range refs {
		issueSem <- struct{}{}
		wg.Go(func() {
			defer func() { <-issueSem }()
			outputs := map[string]api.NodeOutput{}
			var mu sync.Mutex
			done := map[string]chan struct{}{}
			for _, n := range s.plan.Nodes {
				done[n.Key] = make(chan struct{})
			}
			var nodes sync.WaitGroup
			for _, n := range s.plan.Nodes {
				nodes.Go(func() {
					defer close(done[n.Key])
					in := api.NodeInput{Run: s.e.Name, Instance: ref, Node: n.Key, Step: n.Steps[0],
						Params: n.Params, Inputs: map[string]api.NodeOutput{}, Dataset: s.e.Dataset}
					for _, name := range slices.Sorted(maps.Keys(n.Inputs)) {
						<-done[n.Inputs[name]]
						mu.Lock()
						in.Inputs[name] = outputs[n.Inputs[name]]
						mu.Unlock()
					}
					slot := slots[specs.Catalog[n.Activity].Queue]
					slot <- struct{}{}
					out, err := fns[n.Activity].(nodeFunc)(ctx, in)
					<-slot
					count.Add(1)
					if err != nil {
						failed.Add(1)
						t.Errorf("%s %s: %v", ref.ID, n.Key, err)
						return
					}
					mu.Lock()
					outputs[n.Key] = out
					mu.Unlock()
				})
			}
			nodes.Wait()
			rows := make([]results.Row, 0, len(s.plan.Arms))
			for _, arm := range s.plan.Arms {
				row := results.Row{results.FieldInstance: ref.ID, results.FieldMethod: arm.Method,
					results.FieldModel: arm.Model}
				for _, st := range arm.Steps {
					maps.Copy(row, outputs[st.Key].Row)
				}
				rows = append(rows, row)
			}
			if _, err := a.Record(ctx, api.RecordInput{Run: s.e.Name, Rows: rows}); err != nil {
				t.Error(err)
			}
			count.Add(1)
		})
	}
	wg.Wait()
	wall := time.Since(start)
	return outcome{wall: wall, activities: int(count.Load()), rows: countRows(t, runs, s), peakMiB: stopPeak()}
}

// runTemporal runs the sweep as ctxlab does, the way w says: the Sweep workflow on the embedded server, with
// in-process workers.
func runTemporal(t testing.TB, s sweep, dir string, w way) outcome {
	t.Helper()
	ctx := context.Background()
	srv, err := embedded.Start(ctx, embedded.Options{DBFile: filepath.Join(dir, "temporal.db"),
		LogFile: filepath.Join(dir, "temporal.log"), Namespace: "default", Journal: w.journal})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	c, err := client.Dial(client.Options{HostPort: srv.HostPort(), Namespace: "default",
		Logger: logs.Temporal{L: zerolog.Nop()}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	runs := filepath.Join(dir, "runs")
	a := activities.New(runs, zerolog.Nop())
	a.NoCache = *paid
	markRun(t, a, s.e.Name)
	stopWorkers, err := wiring.Start(c, a, wiring.Options{Kinds: wiring.AllKinds, Limits: s.e.Limits.Queues})
	if err != nil {
		t.Fatal(err)
	}
	defer stopWorkers()
	if s.e.Limits.SpendUSD > 0 { // as starter run sets it
		id := api.BudgetWorkflowID(s.e.Name)
		if _, err := c.SignalWithStartWorkflow(ctx, id, api.BudgetLimitsSignal,
			limiter.Limits{SpendUSD: s.e.Limits.SpendUSD}, client.StartWorkflowOptions{ID: id,
				TaskQueue: workflows.DefaultQueues.Workflow}, workflows.BudgetName,
			workflows.BudgetInput{Run: s.e.Name}); err != nil {
			t.Fatal(err)
		}
	}
	store, err := a.Store(s.e.Name)
	if err != nil {
		t.Fatal(err)
	}
	planRef, err := cas.PutJSON(ctx, store, s.plan)
	if err != nil {
		t.Fatal(err)
	}
	in := workflows.SweepInput{Run: s.e.Name, Title: "ctxlab: " + s.e.Name, Plan: planRef, Dataset: s.e.Dataset,
		Grading: s.e.Grading, Concurrency: s.e.Limits.Concurrency, Retries: s.e.Limits.Retries, Debug: s.e.Debug,
		Queues: workflows.DefaultQueues, RemoteOnly: w.remoteOnly}
	for _, arm := range s.plan.Arms {
		in.Order = append(in.Order, results.Key{Method: arm.Method, Model: arm.Model})
	}
	stopPeak := peak()
	start := time.Now()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "sweep/" + s.e.Name,
		TaskQueue: workflows.DefaultQueues.Workflow}, workflows.SweepName, in)
	if err != nil {
		t.Fatal(err)
	}
	var res workflows.SweepResult
	if err := run.Get(ctx, &res); err != nil {
		t.Fatal(err)
	}
	writeRows(t, a, s.e.Name, res) // the starter's part: the rows the issues stored, and with a store the records
	wall := time.Since(start)
	if len(res.Failed) > 0 {
		t.Fatalf("issues failed: %v", res.Failed)
	}
	// Node activities from the attempt log; bookkeeping: the dataset, then per issue the plan and its rows.
	nodes := countEvents(t, filepath.Join(runs, s.e.Name, "attempts.jsonl"), "start")
	n := nodes + 1 + 2*res.Issues
	return outcome{wall: wall, activities: n, rows: countRows(t, runs, s), peakMiB: stopPeak()}
}

// markRun writes the run's marker in a shared store ($CTXLAB_STORE), as the starter does, for the workers to find.
func markRun(t testing.TB, a *activities.Activities, run string) {
	t.Helper()
	if !bucket.Shared(a.StoreURL) {
		return
	}
	objs, err := bucket.OpenObjects(context.Background(), a.StoreURL, run, a.RunDir(run))
	if err == nil {
		err = objs.Put(context.Background(), runfolder.RunMarkerKey, []byte(`{"run":"`+run+`"}`))
	}
	if err != nil {
		t.Fatal(err)
	}
}

// writeRows does what the starter does when a sweep ends: it appends the rows every issue stored to results.jsonl
// and, with a shared store ($CTXLAB_STORE), gathers the workers' records into the run folder.
func writeRows(t testing.TB, a *activities.Activities, run string, res workflows.SweepResult) {
	t.Helper()
	ctx := context.Background()
	if err := a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	store, err := a.Store(run)
	if err != nil {
		t.Fatal(err)
	}
	rows := results.Store{Path: filepath.Join(a.RunDir(run), "results.jsonl")}
	for _, st := range res.Rows {
		var rs []results.Row
		if err := cas.GetJSON(ctx, store, st.Rows, &rs); err != nil {
			t.Fatal(err)
		}
		if _, err := rows.Append(rs); err != nil {
			t.Fatal(err)
		}
	}
	if bucket.Shared(a.StoreURL) {
		objs, err := a.Objects(run)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := runlog.Gather(ctx, objs, filepath.Join(a.RunDir(run), "attempts.jsonl")); err != nil {
			t.Fatal(err)
		}
	}
}

func countEvents(t testing.TB, path, event string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), `"event":"`+event+`"`)
}

func countRows(t testing.TB, runs string, s sweep) int {
	t.Helper()
	rows, bad, err := results.ReadFile(filepath.Join(runs, s.e.Name, "results.jsonl"))
	if err != nil || len(bad) > 0 {
		t.Fatalf("results: %v %v", err, bad)
	}
	return len(rows)
}

// compare runs the sweep on plain goroutines and then each way on Temporal, and checks that they all did the same
// work: every row, every node exactly once.
func compare(t testing.TB, n, m int, ways ...way) (plain outcome, temporal []outcome) {
	dir := t.TempDir()
	s := generate(t, dir, n, m)
	plain = runPlain(t, s, filepath.Join(dir, "plain"))
	want := n * m
	nodes := n * len(s.plan.Nodes)
	if plain.rows != want {
		t.Fatalf("rows: plain %d, want %d", plain.rows, want)
	}
	if got := plain.activities - 1 - n; got != nodes {
		t.Errorf("plain ran %d node activities, want %d", got, nodes)
	}
	for i, w := range ways {
		o := runTemporal(t, s, filepath.Join(dir, fmt.Sprintf("%d-%s", i, w.name)), w)
		if o.rows != want {
			t.Fatalf("rows: temporal (%s) %d, want %d", w.name, o.rows, want)
		}
		if got := o.activities - 1 - 2*n; got != nodes {
			t.Errorf("temporal (%s) ran %d node activities, want %d (every node once)", w.name, got, nodes)
		}
		temporal = append(temporal, o)
	}
	return plain, temporal
}

// TestSmallSweepBothWays keeps the benchmark's code honest in every `go test ./...` at a small size, both the way
// ctxlab runs sweeps and the way it ran them before.
func TestSmallSweepBothWays(t *testing.T) {
	plain, temporal := compare(t, 4, 3, now, before)
	t.Logf("plain %+v, temporal now %+v, before %+v", plain, temporal[0], temporal[1])
}

// BenchmarkOrchestration runs the generated sweep (-orch.issues × -orch.methods, 300 × 12 by default) on plain
// goroutines, then on Temporal the way ctxlab runs it now and the way it ran it before.
// Run it once: go test ./testkit/orchbench/ -run '^$' -bench Orchestration -benchtime 1x
func BenchmarkOrchestration(b *testing.B) {
	for range b.N {
		chosen := chosenWays(b)
		plain, temporal := compare(b, *issues, *methods, chosen...)
		b.ReportMetric(plain.perSecond(), "plain-act/s")
		b.ReportMetric(plain.peakMiB, "plain-peak-heap-MiB")
		b.Logf("%d issues × %d methods: plain goroutines %d activities in %s (%.1f/s, peak heap %.0f MiB)",
			*issues, *methods, plain.activities, plain.wall.Round(time.Millisecond), plain.perSecond(), plain.peakMiB)
		for i, w := range chosen {
			o := temporal[i]
			overhead := (o.wall - plain.wall).Seconds() / float64(o.activities)
			b.ReportMetric(o.perSecond(), w.name+"-act/s")
			b.ReportMetric(o.wall.Seconds()/plain.wall.Seconds(), w.name+"/plain")
			b.ReportMetric(overhead*1e3, w.name+"-overhead-ms/act")
			b.ReportMetric(o.peakMiB, w.name+"-peak-heap-MiB")
			b.Logf("temporal (%s): %d activities in %s (%.1f/s, peak heap %.0f MiB); %.1fx plain; overhead %.2f ms "+
				"per activity", w.name, o.activities, o.wall.Round(time.Millisecond), o.perSecond(), o.peakMiB,
				o.wall.Seconds()/plain.wall.Seconds(), overhead*1e3)
		}
		for i, w := range chosen[1:] {
			b.Logf("%s takes %.2fx as long as %s", w.name, temporal[i+1].wall.Seconds()/temporal[0].wall.Seconds(),
				chosen[0].name)
		}
	}
}

// demoSweep is specs/demo.jsonnet with its generated dataset built under dir, as `starter run` builds it.
func demoSweep(t testing.TB, dir string) (sweep, int) {
	t.Helper()
	e, err := jsonnet.Compile(filepath.Join("..", "..", "specs", "demo.jsonnet"), jsonnet.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := demobench.Generate(filepath.Join(dir, "dataset"))
	if err != nil {
		t.Fatal(err)
	}
	e.Dataset.File, err = filepath.Abs(res.File)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := specs.BuildPlan(e)
	if err != nil {
		t.Fatal(err)
	}
	return sweep{e: e, plan: plan}, len(res.Instances)
}

// BenchmarkDemo runs the demo sweep (specs/demo.jsonnet: every method, graded) on the embedded server the way
// ctxlab runs it now and the way it ran it before, each in a fresh folder, in the same process:
// go test ./testkit/orchbench/ -run '^$' -bench Demo -benchtime 1x
// The Go build cache is shared, but each run grades in its own copies of the repositories, so neither way starts
// warmer than the other; "now" runs first.
func BenchmarkDemo(b *testing.B) {
	for range b.N {
		dir := b.TempDir()
		s, n := demoSweep(b, dir)
		var walls []time.Duration
		chosen := chosenWays(b)
		for i, w := range chosen {
			o := runTemporal(b, s, filepath.Join(dir, fmt.Sprintf("%d-%s", i, w.name)), w)
			if want := n * len(s.plan.Arms); o.rows != want {
				b.Fatalf("%s: %d rows, want %d", w.name, o.rows, want)
			}
			b.ReportMetric(o.wall.Seconds(), w.name+"-s")
			b.Logf("demo (%s): %d rows, %d activities in %s", w.name, o.rows, o.activities,
				o.wall.Round(time.Millisecond))
			walls = append(walls, o.wall)
		}
		for i, w := range chosen[1:] {
			b.ReportMetric(walls[i+1].Seconds()/walls[0].Seconds(), w.name+"/"+chosen[0].name)
			b.Logf("the demo %s takes %.2fx as long as %s", w.name, walls[i+1].Seconds()/walls[0].Seconds(),
				chosen[0].name)
		}
	}
}
