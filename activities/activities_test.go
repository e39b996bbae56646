package activities

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"ctxlab/activities/api"
	"ctxlab/activities/api/errkind"
	"ctxlab/dataset/swebench"
	"ctxlab/results"
	"ctxlab/specs"
	"ctxlab/store/cas"
	"ctxlab/testkit/demorun"
)

// fixture is the demo's run folder (demorun) whose nodes run as their kinds' activities in a Temporal activity
// environment: through the adapter (memo, attempt log, checks, error classes).
type fixture struct {
	*demorun.Fixture
	a   *Activities
	env *testsuite.TestActivityEnvironment
}

func TestMain(m *testing.M) { os.Exit(demorun.Main(m)) }

func newFixture(t *testing.T) *fixture {
	t.Helper()
	shared, runs := demorun.New(t)
	var s testsuite.WorkflowTestSuite
	f := &fixture{Fixture: shared, a: New(runs, zerolog.Nop()), env: s.NewTestActivityEnvironment()}
	for name, fn := range f.a.Functions() {
		f.env.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name})
	}
	f.Exec = f.execute
	// The dataset loaded through the adapter holds the rows the fixture stored.
	refs, err := f.a.LoadDataset(context.Background(), api.LoadDatasetInput{Run: demorun.Run, Dataset: f.Dataset})
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) != len(f.Refs) {
		t.Fatalf("%d rows in the fixture, %d loaded", len(f.Refs), len(refs))
	}
	for _, r := range refs {
		if f.Refs[r.ID] != r {
			t.Fatalf("%s loaded as %v, stored as %v", r.ID, r, f.Refs[r.ID])
		}
	}
	return f
}

// useStore makes the run's steps read and write through s from now on (a wrapper that counts or fails reads).
func (f *fixture) useStore(s cas.Store) {
	f.a.mu.Lock()
	f.a.stores[demorun.Run] = s
	f.a.mu.Unlock()
}

func TestCheckoutUnknownCommitNamesInstance(t *testing.T) {
	f := newFixture(t)
	row := f.Rows[demorun.Instance]
	row.BaseCommit = strings.Repeat("0", 40)
	f.SetRow(row)
	_, err := f.Node("checkout", demorun.Instance, nil, nil)
	if !nonRetryable(err) || !strings.Contains(err.Error(), demorun.Instance) || !strings.Contains(err.Error(), "not found") {
		t.Errorf("err = %v; want a non-retryable error naming the instance and the missing commit", err)
	}
	// The machine's clone lacks the commit: the environment's failure, never the model's.
	wantStepKind(t, err, errkind.MissingCommit, row.BaseCommit)
}

func TestNodeOutputIsMemoized(t *testing.T) {
	f := newFixture(t)
	first := f.Must(f.Node("checkout", demorun.Instance, nil, nil))
	second := f.Must(f.Node("checkout", demorun.Instance, nil, nil))
	if first.Ref != second.Ref {
		t.Fatalf("memoized output differs: %s vs %s", first.Ref, second.Ref)
	}
	b, err := os.ReadFile(filepath.Join(f.RunDir, "attempts.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	log := string(b)
	if strings.Count(log, `"event":"start"`) != 1 || strings.Count(log, `"event":"memo"`) != 1 {
		t.Errorf("want one real run and one memo hit; attempts.jsonl:\n%s", log)
	}
}

func TestLoadDatasetSelects(t *testing.T) {
	f := newFixture(t)
	d := f.Dataset
	d.Instances = []string{"acme__semver-2", demorun.Instance}
	refs, err := f.a.LoadDataset(context.Background(), api.LoadDatasetInput{Run: "t", Dataset: d})
	if err != nil || len(refs) != 2 || refs[0].ID != "acme__semver-2" || refs[1].ID != demorun.Instance {
		t.Fatalf("refs = %v, %v", refs, err)
	}
	d.Instances = []string{"nope"}
	if _, err := f.a.LoadDataset(context.Background(), api.LoadDatasetInput{Run: "t", Dataset: d}); err == nil ||
		!strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("unknown instance: %v", err)
	}
}

func mustStore(t *testing.T, a *Activities) cas.Store {
	t.Helper()
	s, err := a.Store("t")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func nonRetryable(err error) bool {
	var app *temporal.ApplicationError
	return errors.As(err, &app) && app.NonRetryable()
}

// TestNodeMemoCoversItsInputs edits a dataset row between two runs of the same nodes: a memo keyed by the
// instance's id alone returned the old row's outputs (a gold patch still resolved after FAIL_TO_PASS named a test
// the test patch does not add). Every input a node reads must be in its memo's key: the row's content, the outputs
// of its inputs, its params; an unchanged node is still reused.
func TestNodeMemoCoversItsInputs(t *testing.T) {
	f := newFixture(t)
	store := mustStore(t, f.a)
	edit := func(change func(*swebench.Instance)) {
		t.Helper()
		row := f.Rows[demorun.Instance]
		change(&row)
		f.SetRow(row)
	}
	// node runs an activity under a fixed node key, as a plan's node keeps its key when the dataset changes, and
	// reports whether the activity ran (rather than returning its memo).
	node := func(activity string, params map[string]any, inputs map[string]api.NodeOutput) (api.NodeOutput, bool) {
		t.Helper()
		before := countEvents(t, f.RunDir, "start")
		in := api.NodeInput{Run: "t", Instance: f.Refs[demorun.Instance], Node: activity + "-fixedkey", Step: "m." + activity,
			Params: params, Inputs: inputs, Dataset: f.Dataset}
		v, err := f.env.ExecuteActivity(activity, in)
		if err != nil {
			t.Fatal(err)
		}
		var out api.NodeOutput
		if err := v.Get(&out); err != nil {
			t.Fatal(err)
		}
		return out, countEvents(t, f.RunDir, "start") > before
	}
	grading := map[string]any{"grading": map[string]any{"executor": "local", "timeout": "5m"}}
	gold, err := store.Put(context.Background(), []byte(f.Rows[demorun.Instance].Patch))
	if err != nil {
		t.Fatal(err)
	}
	co, ran := node("checkout", nil, nil)
	if !ran {
		t.Fatal("the first checkout did not run")
	}
	grade := func() (map[string]any, bool) {
		out, ran := node("grade", grading, map[string]api.NodeOutput{"checkout": co, "patch": {Ref: gold}})
		return out.Row, ran
	}
	if row, _ := grade(); row["resolved"] != true {
		t.Fatalf("gold patch of the dataset's row: %v", row)
	}
	if _, ran := grade(); ran {
		t.Error("an unchanged grade ran again")
	}

	edit(func(r *swebench.Instance) { r.FailToPass = append(r.FailToPass, "TestNotInTheTestPatch") })
	if row, ran := grade(); !ran || row["resolved"] != false {
		t.Errorf("after FAIL_TO_PASS named a test that does not exist: ran %v, row %v; want a new grade, unresolved",
			ran, row)
	}
	edit(func(r *swebench.Instance) { r.ProblemStatement += "\nAnd one more thing." })
	if _, ran := node("checkout", nil, nil); !ran {
		t.Error("a checkout of an edited row was taken from its memo")
	}
	ctx1, ran := node("no_source", nil, map[string]api.NodeOutput{"checkout": co})
	if !ran {
		t.Error("a context of an edited row was taken from its memo")
	}
	if _, ran := node("no_source", nil, map[string]api.NodeOutput{"checkout": co}); ran {
		t.Error("an unchanged context ran again")
	}
	// Another upstream output under the same node key (a checkout redone into another snapshot) is another input.
	other := co
	other.Ref = ctx1.Ref
	if _, ran := node("no_source", nil, map[string]api.NodeOutput{"checkout": other}); !ran {
		t.Error("a node whose input's output changed was taken from its memo")
	}
	// A new version of what the grader computes is in the grade step's key too.
	grade() // graded under the edited row
	if _, ran := grade(); ran {
		t.Error("an unchanged grade ran again")
	}
	info := specs.Catalog[specs.Grade.Name]
	defer func() { specs.Catalog[specs.Grade.Name] = info }()
	next := info
	next.CodeVersion += "-next"
	specs.Catalog[specs.Grade.Name] = next
	if _, ran := grade(); !ran {
		t.Error("a grade step's memo was reused after the grader's version changed")
	}
}

// countEvents counts the attempt log's events of a kind.
func countEvents(t *testing.T, runDir, event string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(runDir, "attempts.jsonl"))
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), `"event":"`+event+`"`)
}

// TestRecordIntoAFolderStops: results.jsonl (or summary.md) replaced by a folder made Record fail the same way on
// every retry, forever. It must fail once, not retryable, naming the path.
func TestRecordIntoAFolderStops(t *testing.T) {
	f := newFixture(t)
	dir := f.RunDir
	for _, name := range []string{"results.jsonl", "summary.md"} {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(path, 0o755); err != nil {
			t.Fatal(err)
		}
		_, rerr := f.env.ExecuteActivity(api.RecordName, api.RecordInput{Run: "t", Rows: []results.Row{
			{results.FieldInstance: demorun.Instance, results.FieldMethod: "m", results.FieldModel: "offline"}}})
		_, serr := f.env.ExecuteActivity(api.SummarizeName, api.SummarizeInput{Run: "t", Title: "t"})
		errs := map[string]error{api.SummarizeName: serr}
		if name == "results.jsonl" {
			errs[api.RecordName] = rerr
		} else if rerr != nil {
			t.Errorf("record with summary.md a folder: %v", rerr)
		}
		for activity, err := range errs {
			var app *temporal.ApplicationError
			if !errors.As(err, &app) || !app.NonRetryable() || app.Type() != ErrRunFolder ||
				!strings.Contains(err.Error(), path+" is a folder") {
				t.Errorf("%s with %s a folder: %v; want a non-retryable %s error naming it", activity, name, err,
					ErrRunFolder)
			}
		}
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
	}
}

// execute runs a kind's activity on the input given, in the fixture's Temporal activity environment.
func (f *fixture) execute(kind string, in api.NodeInput) (api.NodeOutput, error) {
	f.T.Helper()
	v, err := f.env.ExecuteActivity(kind, in)
	if err != nil {
		return api.NodeOutput{}, err
	}
	var out api.NodeOutput
	if err := v.Get(&out); err != nil {
		f.T.Fatal(err)
	}
	return out, nil
}
