// Package demorun is the fixture the steps' tests (package steps) and the adapter's tests (package activities)
// share: a run folder with the demo benchmark's rows in its content store, and nodes run on them. What runs a node is
// the caller's: package steps runs the kind's step directly, package activities the kind's activity in a Temporal
// test environment (memo, attempt log, checks). This package imports neither, so both may use it.
package demorun

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"ctxlab/activities/api"
	"ctxlab/activities/repo"
	"ctxlab/dataset/swebench"
	"ctxlab/demobench"
	"ctxlab/runfolder"
	"ctxlab/specs"
	"ctxlab/store/cas"
)

// Run is the name of the fixture's run: its folder is RunDir, under the folder New returns it in.
const Run = "t"

// Instance is the demo instance most tests run on.
const Instance = "acme__humanize-1"

// Fixture is a run folder with the demo benchmark's rows stored in its content store.
type Fixture struct {
	T *testing.T
	// RunDir is the run's folder; Store its content store (runfolder.CAS), holding every demo row.
	RunDir string
	Store  cas.Store
	// Dataset is the demo dataset as a spec names it; Refs and Rows its rows by instance id. Rows are the fixture's
	// own copies: a test may edit them (their lists too) and store one with SetRow.
	Dataset specs.Dataset
	Refs    map[string]api.InstanceRef
	Rows    map[string]swebench.Instance
	// Exec runs one node of a kind on the input given and returns its output as the workflow receives it.
	Exec func(kind string, in api.NodeInput) (api.NodeOutput, error)
}

// demo is the demo benchmark, generated once per test binary (seconds on a busy machine, for each of dozens of
// fixtures before): nodes only read the dataset (its file, its git repositories, its module proxy folder), and each
// fixture has a run folder of its own. Main removes it.
var demo struct {
	once sync.Once
	dir  string
	res  *demobench.Result
	err  error
}

// startTempDir is the machine's temporary folder as the process started: a test may point TMPDIR at its own.
var startTempDir = os.TempDir()

// Main runs the package's tests (a TestMain's m.Run) and removes the demo benchmark they generated; it returns the
// exit code.
func Main(m *testing.M) int {
	code := m.Run()
	if demo.dir != "" {
		os.RemoveAll(demo.dir)
	}
	return code
}

// Demo returns the demo benchmark, generated on the first call of the test binary (whose TestMain calls Main).
func Demo(t *testing.T) *demobench.Result {
	t.Helper()
	demo.once.Do(func() {
		if demo.dir, demo.err = os.MkdirTemp(startTempDir, "ctxlab-demorun-"); demo.err == nil {
			demo.res, demo.err = demobench.Generate(filepath.Join(demo.dir, "dataset"))
		}
	})
	if demo.err != nil {
		t.Fatal(demo.err)
	}
	return demo.res
}

// New makes the run folder Run in a new folder of its own, which it returns as runs, and stores the demo rows in
// its content store. The caller sets Exec.
func New(t *testing.T) (f *Fixture, runs string) {
	t.Helper()
	res := Demo(t)
	runs = filepath.Join(t.TempDir(), "runs")
	f = &Fixture{T: t, RunDir: filepath.Join(runs, Run),
		Dataset: specs.Dataset{File: res.File, Repos: "{dataset_dir}/repos/{repo}"},
		Refs:    map[string]api.InstanceRef{}, Rows: map[string]swebench.Instance{}}
	var err error
	if f.Store, err = cas.NewDir(runfolder.CAS(f.RunDir)); err != nil {
		t.Fatal(err)
	}
	rows, err := swebench.ReadFile(res.File)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		f.SetRow(r)
	}
	return f, runs
}

// SetRow stores row and makes it its instance's row from now on.
func (f *Fixture) SetRow(row swebench.Instance) {
	f.T.Helper()
	ref, err := cas.PutJSON(context.Background(), f.Store, row)
	if err != nil {
		f.T.Fatal(err)
	}
	f.Refs[row.InstanceID] = api.InstanceRef{ID: row.InstanceID, Ref: ref}
	f.Rows[row.InstanceID] = row
}

// Input is the input of a node of kind on an instance, under the step label "m.KIND" and a node key of its own for
// each params and inputs, as the plan's node keys are.
func (f *Fixture) Input(kind, instance string, params map[string]any, inputs map[string]api.NodeOutput) api.NodeInput {
	b, _ := json.Marshal([]any{params, inputs})
	key := string(cas.RefOf(b))[7:23]
	return api.NodeInput{Run: Run, Instance: f.Refs[instance], Node: kind + "-" + instance + "-" + key,
		Step: "m." + kind, Params: params, Inputs: inputs, Dataset: f.Dataset}
}

// Node runs a node of kind on an instance (Input).
func (f *Fixture) Node(kind, instance string, params map[string]any, inputs map[string]api.NodeOutput) (api.NodeOutput, error) {
	f.T.Helper()
	return f.Exec(kind, f.Input(kind, instance, params, inputs))
}

// Must returns out, failing the test on err.
func (f *Fixture) Must(out api.NodeOutput, err error) api.NodeOutput {
	f.T.Helper()
	if err != nil {
		f.T.Fatal(err)
	}
	return out
}

// RunPlan runs the plan's nodes on an instance in plan order, as the Issue workflow does, but those of the kinds
// skip names, and returns the outputs by node key.
func (f *Fixture) RunPlan(plan *specs.Plan, instance string, skip ...string) map[string]api.NodeOutput {
	f.T.Helper()
	outs := map[string]api.NodeOutput{}
	for _, n := range plan.Nodes {
		if slices.Contains(skip, n.Activity) {
			continue
		}
		inputs := map[string]api.NodeOutput{}
		for name, k := range n.Inputs {
			inputs[name] = outs[k]
		}
		in := api.NodeInput{Run: Run, Instance: f.Refs[instance], Node: n.Key, Step: n.Steps[0], Params: n.Params,
			Inputs: inputs, Dataset: f.Dataset}
		out, err := f.Exec(n.Activity, in)
		if err != nil {
			f.T.Fatalf("%s on %s: %v", n.Steps[0], instance, err)
		}
		outs[n.Key] = out
	}
	return outs
}

// Put stores text (a patch) as a node's output.
func (f *Fixture) Put(text string) api.NodeOutput {
	f.T.Helper()
	ref, err := f.Store.Put(context.Background(), []byte(text))
	if err != nil {
		f.T.Fatal(err)
	}
	return api.NodeOutput{Ref: ref}
}

// Load decodes what ref points at in the run's store.
func (f *Fixture) Load(ref cas.Ref, v any) {
	f.T.Helper()
	if err := cas.GetJSON(context.Background(), f.Store, ref, v); err != nil {
		f.T.Fatal(err)
	}
}

// Manifest reads the snapshot a checkout node made.
func (f *Fixture) Manifest(co api.NodeOutput) repo.Manifest {
	f.T.Helper()
	m, err := repo.LoadManifest(context.Background(), f.Store, co.Ref)
	if err != nil {
		f.T.Fatal(err)
	}
	return m
}
