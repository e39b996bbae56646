package steps

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"

	"ctxlab/activities/api"
	"ctxlab/activities/limiter"
	"ctxlab/dataset/swebench"
	"ctxlab/demobench"
	"ctxlab/runfolder"
	"ctxlab/specs"
	"ctxlab/store/cas"
)

// inst is the demo instance the tests run on.
const inst = "acme__humanize-1"

// fixture is a run folder with the demo benchmark loaded into its content store; it runs steps as package
// activities' adapter does, without Temporal (and without the adapter's memo, attempt log and checks).
type fixture struct {
	t       *testing.T
	runDir  string
	store   cas.Store
	dataset specs.Dataset
	refs    map[string]api.InstanceRef
	rows    map[string]swebench.Instance
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	root := t.TempDir()
	res, err := demobench.Generate(filepath.Join(root, "dataset"))
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, runDir: filepath.Join(root, "runs", "t"),
		dataset: specs.Dataset{File: res.File, Repos: "{dataset_dir}/repos/{repo}"},
		refs:    map[string]api.InstanceRef{}, rows: map[string]swebench.Instance{}}
	if f.store, err = cas.NewDir(runfolder.CAS(f.runDir)); err != nil {
		t.Fatal(err)
	}
	rows, err := swebench.ReadFile(res.File)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		ref, err := cas.PutJSON(context.Background(), f.store, r)
		if err != nil {
			t.Fatal(err)
		}
		f.refs[r.InstanceID] = api.InstanceRef{ID: r.InstanceID, Ref: ref}
		f.rows[r.InstanceID] = r
	}
	return f
}

// run runs one attempt of a kind's step on a node input the caller built.
func (f *fixture) run(kind string, in api.NodeInput) (api.NodeOutput, error) {
	env := Env{Node: in, Store: f.store, RunDir: f.runDir, Log: zerolog.Nop()}
	return Run(context.Background(), kind, env, &Attempt{})
}

func (f *fixture) must(out api.NodeOutput, err error) api.NodeOutput {
	f.t.Helper()
	if err != nil {
		f.t.Fatal(err)
	}
	return out
}

// load decodes what ref points at in the run's store.
func (f *fixture) load(ref cas.Ref, v any) {
	f.t.Helper()
	if err := cas.GetJSON(context.Background(), f.store, ref, v); err != nil {
		f.t.Fatal(err)
	}
}

// localBudget is a run's budget in this process, as a worker's purse over the budget workflow is: a ledger
// (limiter.Local) behind a purse, with limits set as the starter sets them.
func localBudget(lim limiter.Limits) Budget {
	var l limiter.Local
	l.SetLimits(lim)
	return purseBudget{limiter.NewPurse(&l, "test")}
}

type purseBudget struct{ p *limiter.Purse }

func (b purseBudget) Admit(ctx context.Context, provider string, worst func() float64) (func(float64, bool), error) {
	return b.p.Admit(ctx, limiter.Attempt{Activity: "test"}, provider, worst)
}
