package steps

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"ctxlab/activities/api"
	"ctxlab/activities/rankings"
	"ctxlab/activities/repo"
	"ctxlab/jsonnet"
	"ctxlab/runfolder"
	"ctxlab/specs"
	"ctxlab/store/cas"
	"ctxlab/testkit/demorun"
)

// retrievePlan is the demo spec's plan cut to its retrieve nodes and the nodes they need (the anchor's CQ2-CARE
// steps), in plan order: no patch, measure or grade.
func retrievePlan(t *testing.T) (*specs.Plan, []specs.Node) {
	t.Helper()
	e, err := jsonnet.Compile(filepath.Join("..", "..", "specs", "demo.jsonnet"), jsonnet.Options{})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := specs.BuildPlan(e)
	if err != nil {
		t.Fatal(err)
	}
	byKey := map[string]specs.Node{}
	for _, n := range plan.Nodes {
		byKey[n.Key] = n
	}
	need := map[string]bool{}
	var mark func(key string)
	mark = func(key string) {
		if need[key] {
			return
		}
		need[key] = true
		for _, in := range byKey[key].Inputs {
			mark(in)
		}
	}
	var retrieves []specs.Node
	for _, n := range plan.Nodes {
		if n.Activity == specs.Retrieve.Name {
			mark(n.Key)
			retrieves = append(retrieves, n)
		}
	}
	cut := &specs.Plan{Format: plan.Format}
	for _, n := range plan.Nodes {
		if need[n.Key] {
			cut.Nodes = append(cut.Nodes, n)
		}
	}
	return cut, retrieves
}

// TestRetrieveStepsShareOneIndexPerUnit runs the demo's ten retrieve steps of an instance (five chunk units: the
// function unit under four budgets, the file unit twice, SWE-bench's path+contents twice): each unit's BM25 index
// is built once, whatever the budget or method, and the snapshot is cut once per chunk unit (SWE-bench's documents
// are whole files too). Another worker process reads the stored rankings; stored rankings that are torn, of
// another key or chunk count, or not an order of the chunks are computed again; steps at once wait for one
// computation; without a text cache nothing is kept. Every way, each step's output is the one it has computed alone.
func TestRetrieveStepsShareOneIndexPerUnit(t *testing.T) {
	w := newWorker(repo.DefaultTextCacheBytes)
	f := newFixture(t, w.serve)
	plan, retrieves := retrievePlan(t)
	units := map[string]bool{}
	for _, n := range retrieves {
		units[n.Params["unit"].(string)] = true
	}
	if len(retrieves) != 10 || len(units) != 5 {
		t.Fatalf("the demo has %d retrieve nodes over units %v; this test expects 10 over 5", len(retrieves),
			slices.Sorted(maps.Keys(units)))
	}
	outs := f.RunPlan(plan, demorun.Instance, specs.Grade.Name)
	if st := w.rank.Stats(); st.Builds != int64(len(units)) || st.Chunkings != int64(len(units)-1) {
		t.Errorf("%d BM25 indexes built and %d snapshots chunked for %d retrieve steps over %d units; want one index "+
			"per unit, one chunking per chunk unit", st.Builds, st.Chunkings, len(retrieves), len(units))
	}
	rankDir := runfolder.Rankings(f.RunDir)

	// run runs the retrieve steps in a new worker process's activities (under new node keys, so that no node memo
	// answers), all at once or one by one, and checks their outputs against the first run's.
	run := func(name string, together bool, prepare func(), fileCache ...int64) *rankings.Memo {
		t.Helper()
		a := newWorker(repo.DefaultTextCacheBytes)
		if len(fileCache) > 0 {
			a = newWorker(fileCache[0])
		}
		var wg sync.WaitGroup
		for _, n := range retrieves {
			in := api.NodeInput{Run: "t", Instance: f.Refs[demorun.Instance], Node: n.Key + "-" + name, Step: n.Steps[0],
				Params: n.Params, Inputs: map[string]api.NodeOutput{}, Dataset: f.Dataset}
			for input, k := range n.Inputs {
				in.Inputs[input] = outs[k]
			}
			step := func() {
				out, err := a.run(f.Store, f.RunDir, n.Activity, in)
				if err != nil {
					t.Errorf("%s: %s: %v", name, n.Key, err)
				} else if got, want := mustJSON(t, out), mustJSON(t, outs[n.Key]); got != want {
					t.Errorf("%s: %s output\n%s\nwant the shared run's\n%s", name, n.Key, got, want)
				}
			}
			if together {
				wg.Go(step)
				continue
			}
			if prepare != nil {
				prepare()
			}
			step()
		}
		wg.Wait()
		return a.rank
	}
	// Steps at once of one unit may take the ranking another is reading (Shared): each ranking is read at least once.
	if st := run("stored", true, nil).Stats(); st.Builds != 0 || st.Stored+st.Shared != int64(len(retrieves)) ||
		st.Stored < int64(len(units)) {
		t.Errorf("a second process over the same run folder: %+v; want every step to read its ranking or share "+
			"another's read, each unit's read at least once, none built", st)
	}
	corruptRankings(t, rankDir)
	if st := run("hostile", false, nil).Stats(); st.Builds != int64(len(units)) || st.Stored != int64(len(retrieves)-len(units)) {
		t.Errorf("over corrupted rankings: %+v; want every ranking built again, then read by the steps after", st)
	}
	if err := os.RemoveAll(rankDir); err != nil {
		t.Fatal(err)
	}
	if st := run("together", true, nil).Stats(); st.Builds != int64(len(units)) ||
		st.Builds+st.Stored+st.Shared != int64(len(retrieves)) {
		t.Errorf("ten steps at once with no stored ranking: %+v; want one build per unit, the other steps reading "+
			"or sharing it", st)
	}
	alone := run("alone", false, func() { os.RemoveAll(rankDir) }).Stats()
	if alone.Builds != int64(len(retrieves)) {
		t.Errorf("each step with no stored ranking: %+v; want a build each", alone)
	}
	// Without a text cache no chunks are kept either: each step cuts the snapshot, with the text it read.
	if st := run("uncached", false, nil, -1).Stats(); st.Chunkings != int64(len(retrieves)) {
		t.Errorf("no text cache: %+v; want the snapshot cut by each step", st)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// corruptRankings spoils every stored ranking under dir, each another way: torn, another chunk count, a chunk
// twice, a chunk out of range, another key.
func corruptRankings(t *testing.T, dir string) {
	t.Helper()
	spoil := []func(b []byte) []byte{
		func(b []byte) []byte { return b[:len(b)/2] },
		func(b []byte) []byte {
			return edit(t, b, func(m map[string]any) { m["chunks"] = m["chunks"].(float64) + 1 })
		},
		func(b []byte) []byte {
			return edit(t, b, func(m map[string]any) { m["head"] = []any{0, 0} })
		},
		func(b []byte) []byte { return edit(t, b, func(m map[string]any) { m["head"] = []any{m["chunks"]} }) },
		func(b []byte) []byte {
			return edit(t, b, func(m map[string]any) { m["key"].(map[string]any)["unit"] = "window" })
		},
	}
	n := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".json" {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		n++
		return os.WriteFile(path, spoil[n%len(spoil)](b), 0o644)
	})
	if err != nil || n != len(spoil) {
		t.Fatalf("corrupted %d stored rankings (%v); want %d", n, err, len(spoil))
	}
}

func edit(t *testing.T, b []byte, change func(map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	change(m)
	return []byte(mustJSON(t, m))
}

// rankerChildEnv makes the test binary a worker process that runs retrieve steps (rankerChild) instead of tests.
const rankerChildEnv = "CTXLAB_STEPS_TEST_RANKER"

// rankerJob is a worker process's part: the run folder, the file whose appearance starts it, its steps.
type rankerJob struct {
	RunDir, Start string
	Kinds         []string
	Inputs        []api.NodeInput
}

// rankerResult is what a worker process did: its memo's counts, each step's output, and the errors.
type rankerResult struct {
	Stats   rankings.Stats
	Outputs map[string]api.NodeOutput
	Errors  []string
}

// rankerChild runs a rankerJob's steps all at once, as soon as its start file appears, and prints a rankerResult.
func rankerChild(jobText string) int {
	var job rankerJob
	if err := json.Unmarshal([]byte(jobText), &job); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	store, err := cas.NewDir(runfolder.CAS(job.RunDir))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	a := newWorker(repo.DefaultTextCacheBytes)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		if _, err := os.Stat(job.Start); err == nil {
			break
		} else if time.Now().After(deadline) {
			fmt.Fprintln(os.Stderr, "no start")
			return 2
		}
	}
	res := rankerResult{Outputs: map[string]api.NodeOutput{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, in := range job.Inputs {
		wg.Go(func() {
			out, err := a.run(store, job.RunDir, job.Kinds[i], in)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				res.Errors = append(res.Errors, in.Node+": "+err.Error())
				return
			}
			res.Outputs[in.Node] = out
		})
	}
	wg.Wait()
	res.Stats = a.rank.Stats()
	if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	return 0
}

// TestRankingsRaceAcrossProcesses (issue 39, not yet probed): two worker processes of one run folder start the same
// retrieve steps at the same moment, with no ranking stored. The rankings folder's lock files make one process build
// each unit's ranking and the other read it: across both, each unit's BM25 index is built once, every step's
// output is the one a single process computes, and every stored ranking is whole.
func TestRankingsRaceAcrossProcesses(t *testing.T) {
	w := newWorker(repo.DefaultTextCacheBytes)
	f := newFixture(t, w.serve)
	plan, retrieves := retrievePlan(t)
	units := map[string]bool{}
	for _, n := range retrieves {
		units[n.Params["unit"].(string)] = true
	}
	outs := f.RunPlan(plan, demorun.Instance, specs.Grade.Name)
	rankDir := runfolder.Rankings(f.RunDir)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for round := range 3 {
		if err := os.RemoveAll(rankDir); err != nil {
			t.Fatal(err)
		}
		start := filepath.Join(t.TempDir(), "start")
		type child struct {
			cmd    *exec.Cmd
			stdout strings.Builder
		}
		children := make([]*child, 2)
		for p := range children {
			job := rankerJob{RunDir: f.RunDir, Start: start}
			for _, n := range retrieves {
				in := api.NodeInput{Run: "t", Instance: f.Refs[demorun.Instance], Node: fmt.Sprintf("%s-r%dp%d", n.Key, round, p),
					Step: n.Steps[0], Params: n.Params, Inputs: map[string]api.NodeOutput{}, Dataset: f.Dataset}
				for input, k := range n.Inputs {
					in.Inputs[input] = outs[k]
				}
				job.Kinds, job.Inputs = append(job.Kinds, n.Activity), append(job.Inputs, in)
			}
			b, err := json.Marshal(job)
			if err != nil {
				t.Fatal(err)
			}
			c := &child{cmd: exec.Command(exe, "-test.run=^$")}
			c.cmd.Env = append(os.Environ(), rankerChildEnv+"="+string(b))
			c.cmd.Stdout, c.cmd.Stderr = &c.stdout, os.Stderr
			if err := c.cmd.Start(); err != nil {
				t.Fatal(err)
			}
			children[p] = c
		}
		time.Sleep(500 * time.Millisecond) // both processes up and polling
		if err := os.WriteFile(start, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		var builds int64
		for p, c := range children {
			if err := c.cmd.Wait(); err != nil {
				t.Fatalf("round %d, process %d: %v", round, p, err)
			}
			var res rankerResult
			if err := json.Unmarshal([]byte(c.stdout.String()), &res); err != nil {
				t.Fatalf("round %d, process %d: %v: %q", round, p, err, c.stdout.String())
			}
			if len(res.Errors) > 0 {
				t.Errorf("round %d, process %d: %v", round, p, res.Errors)
			}
			st := res.Stats
			if st.Builds+st.Stored+st.Shared != int64(len(retrieves)) {
				t.Errorf("round %d, process %d: %+v for %d steps", round, p, st, len(retrieves))
			}
			builds += st.Builds
			for _, n := range retrieves {
				node := fmt.Sprintf("%s-r%dp%d", n.Key, round, p)
				if got, want := mustJSON(t, res.Outputs[node]), mustJSON(t, outs[n.Key]); got != want {
					t.Errorf("round %d, process %d: %s output\n%s\nwant a single process's\n%s", round, p, n.Key, got, want)
				}
			}
			t.Logf("round %d, process %d: %+v", round, p, st)
		}
		if builds != int64(len(units)) {
			t.Errorf("round %d: %d BM25 indexes built by the two processes for %d units; want each built once", round,
				builds, len(units))
		}
		stored := 0
		err := filepath.WalkDir(rankDir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || filepath.Ext(path) != ".json" {
				return err
			}
			b, err := os.ReadFile(path)
			var v map[string]any
			if err == nil {
				err = json.Unmarshal(b, &v)
			}
			if err != nil {
				t.Errorf("round %d: stored ranking %s: %v", round, path, err)
			}
			stored++
			return nil
		})
		if err != nil || stored != len(units) {
			t.Errorf("round %d: %d stored rankings (%v); want one per unit, %d", round, stored, err, len(units))
		}
	}
}

// worker is what a worker process gives its steps (package activities' Activities.textCache and rankings): a text
// cache of textBytes (none when negative) and a rankings memo bounded by a quarter of it (keeping no chunks without
// a text cache).
type worker struct {
	text *repo.TextCache
	rank *rankings.Memo
}

func newWorker(textBytes int64) worker {
	var w worker
	var bound int64
	if textBytes >= 0 {
		w.text = repo.NewTextCache(textBytes)
		bound = w.text.Max() / 4
	}
	w.rank = rankings.NewMemo(bound, zerolog.Nop())
	return w
}

// serve makes a step's Env use the worker's text cache and rankings memo.
func (w worker) serve(e *Env) { e.Text, e.Rankings = w.text, w.rank }

// run runs one attempt of a kind's step as the worker, over the run folder's store, and returns its output as the
// workflow receives it.
func (w worker) run(store cas.Store, runDir, kind string, in api.NodeInput) (api.NodeOutput, error) {
	env := Env{Node: in, Store: store, RunDir: runDir, Log: zerolog.Nop()}
	w.serve(&env)
	out, err := Run(context.Background(), kind, env, &Attempt{})
	if err != nil {
		return out, err
	}
	return delivered(out)
}
