package activities

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"ctxlab/activities/api/errkind"
	"ctxlab/activities/repo"
	"ctxlab/activities/steps"
	"ctxlab/dataset/swebench"
	"ctxlab/demobench"
	"ctxlab/patch/diff"
	"ctxlab/results"
	"ctxlab/specs"
	"ctxlab/store/cas"
)

// fixture is a run folder with the demo benchmark loaded, and a Temporal activity environment.
type fixture struct {
	t       *testing.T
	a       *Activities
	env     *testsuite.TestActivityEnvironment
	dataset specs.Dataset
	refs    map[string]InstanceRef
	rows    map[string]swebench.Instance
}

// demo is the demo benchmark, generated once per test binary (a couple of seconds on an idle machine, ten at a busy
// one's load, for each of some thirty fixtures before): the activities only read the dataset (its file, its git
// repositories, its module proxy folder), and each fixture has a run folder of its own.
var demo struct {
	once sync.Once
	dir  string
	res  *demobench.Result
	err  error
}

var startTempDir = os.TempDir()

func TestMain(m *testing.M) {
	if job := os.Getenv(rankerChildEnv); job != "" {
		os.Exit(rankerChild(job))
	}
	code := m.Run()
	if demo.dir != "" {
		os.RemoveAll(demo.dir)
	}
	os.Exit(code)
}

func demoDataset(t *testing.T) *demobench.Result {
	t.Helper()
	demo.once.Do(func() {
		// In the machine's temporary folder as the process started: a test may have pointed TMPDIR at its own.
		if demo.dir, demo.err = os.MkdirTemp(startTempDir, "ctxlab-activities-demo-"); demo.err == nil {
			demo.res, demo.err = demobench.Generate(filepath.Join(demo.dir, "dataset"))
		}
	})
	if demo.err != nil {
		t.Fatal(demo.err)
	}
	return demo.res
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	root := t.TempDir()
	res := demoDataset(t)
	var s testsuite.WorkflowTestSuite
	f := &fixture{t: t, a: New(filepath.Join(root, "runs"), zerolog.Nop()), env: s.NewTestActivityEnvironment(),
		dataset: specs.Dataset{File: res.File, Repos: "{dataset_dir}/repos/{repo}"},
		refs:    map[string]InstanceRef{}, rows: map[string]swebench.Instance{}}
	for name, fn := range f.a.Functions() {
		f.env.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name})
	}
	refs, err := f.a.LoadDataset(context.Background(), LoadDatasetInput{Run: "t", Dataset: f.dataset})
	if err != nil {
		t.Fatal(err)
	}
	// The fixture's own copy of the rows, read again from the file: tests edit them (their lists too) in place.
	rows, err := swebench.ReadFile(res.File)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(refs) {
		t.Fatalf("%d rows in %s, %d loaded", len(rows), res.File, len(refs))
	}
	for i, r := range refs {
		if rows[i].InstanceID != r.ID {
			t.Fatalf("row %d of %s is %s, loaded as %s", i, res.File, rows[i].InstanceID, r.ID)
		}
		f.refs[r.ID] = r
		f.rows[r.ID] = rows[i]
	}
	return f
}

// node runs one node activity of an instance.
func (f *fixture) node(activity, instance string, params map[string]any, inputs map[string]NodeOutput) (NodeOutput, error) {
	f.t.Helper()
	in := NodeInput{Run: "t", Instance: f.refs[instance], Node: activity + "-" + instance + "-" + keyOf(params, inputs),
		Step: "m." + activity, Params: params, Inputs: inputs, Dataset: f.dataset}
	return f.node2(activity, in)
}

func (f *fixture) must(out NodeOutput, err error) NodeOutput {
	f.t.Helper()
	if err != nil {
		f.t.Fatal(err)
	}
	return out
}

// manifest reads the snapshot a checkout node made.
func (f *fixture) manifest(co NodeOutput) repo.Manifest {
	f.t.Helper()
	m, err := repo.LoadManifest(context.Background(), mustStore(f.t, f.a), co.Ref)
	if err != nil {
		f.t.Fatal(err)
	}
	return m
}

// useStore makes the run's steps read and write through s from now on (a wrapper that counts or fails reads).
func (f *fixture) useStore(s cas.Store) {
	f.a.mu.Lock()
	f.a.stores["t"] = s
	f.a.mu.Unlock()
}

// keyOf makes distinct memo keys for distinct parameters and inputs, as the plan's node keys do.
func keyOf(params map[string]any, inputs map[string]NodeOutput) string {
	b, _ := json.Marshal([]any{params, inputs})
	return string(cas.RefOf(b))[7:23]
}

const inst = "acme__humanize-1"

func TestCheckoutContextsAndMeasure(t *testing.T) {
	f := newFixture(t)
	co := f.must(f.node("checkout", inst, nil, nil))
	if n, _ := co.Row["repo_files"].(float64); n < 30 {
		t.Errorf("snapshot has %v files, want the demo repo's dozens", co.Row["repo_files"])
	}
	oracle := f.must(f.node("oracle_files", inst, nil, map[string]NodeOutput{"checkout": co}))
	none := f.must(f.node("no_source", inst, nil, map[string]NodeOutput{"checkout": co}))
	tok := map[string]any{"tokenizer": "o200k_base"}
	mo := f.must(f.node("measure", inst, tok, map[string]NodeOutput{"checkout": co, "context": oracle}))
	if mo.Row["rho"] != 1.0 || mo.Row["epsilon"] != 1.0 || mo.Row["context_tokens"].(float64) < 50 {
		t.Errorf("oracle metrics: %v", mo.Row)
	}
	// The gold files whole show every gold line and block verbatim, and nothing but gold files.
	if mo.Row["line_recall"] != 1.0 || mo.Row["block_recall"] != 1.0 || mo.Row["file_precision"] != 1.0 ||
		mo.Row["gold_lines"].(float64) < 1 || mo.Row["gold_block_lines"].(float64) < mo.Row["gold_lines"].(float64) {
		t.Errorf("oracle line truth: %v", mo.Row)
	}
	if lp := mo.Row["line_precision"].(float64); lp <= 0 || lp > mo.Row["block_precision"].(float64) {
		t.Errorf("oracle line precision %v, block precision %v", lp, mo.Row["block_precision"])
	}
	mn := f.must(f.node("measure", inst, tok, map[string]NodeOutput{"checkout": co, "context": none}))
	if mn.Row["rho"] != 0.0 || mn.Row["epsilon"] != nil || mn.Row["context_tokens"] != 0.0 {
		t.Errorf("no-source metrics: %v", mn.Row)
	}
	if mn.Row["line_recall"] != 0.0 || mn.Row["line_precision"] != nil || mn.Row["file_precision"] != nil {
		t.Errorf("no-source line truth: %v", mn.Row)
	}
	if _, err := f.node("measure", inst, map[string]any{"tokenizer": "nope"},
		map[string]NodeOutput{"checkout": co, "context": oracle}); !nonRetryable(err) {
		t.Errorf("unknown tokenizer should be a non-retryable failure, got %v", err)
	}
}

func TestCheckoutUnknownCommitNamesInstance(t *testing.T) {
	f := newFixture(t)
	row := f.rows[inst]
	row.BaseCommit = strings.Repeat("0", 40)
	ref, err := cas.PutJSON(context.Background(), mustStore(t, f.a), row)
	if err != nil {
		t.Fatal(err)
	}
	f.refs[inst] = InstanceRef{ID: inst, Ref: ref}
	_, err = f.node("checkout", inst, nil, nil)
	if !nonRetryable(err) || !strings.Contains(err.Error(), inst) || !strings.Contains(err.Error(), "not found") {
		t.Errorf("err = %v; want a non-retryable error naming the instance and the missing commit", err)
	}
	// The machine's clone lacks the commit: the environment's failure, never the model's.
	wantStepKind(t, err, errkind.MissingCommit, row.BaseCommit)
}

func TestGradeOutcomes(t *testing.T) {
	f := newFixture(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // graders' worktrees go here, so escapes are visible
	co := f.must(f.node("checkout", inst, nil, nil))
	store := mustStore(t, f.a)
	patch := func(text string) NodeOutput {
		ref, err := store.Put(context.Background(), []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		return NodeOutput{Ref: ref}
	}
	grading := map[string]any{"grading": map[string]any{"executor": "local", "timeout": "5m"}}
	grade := func(p NodeOutput, params map[string]any) map[string]any {
		t.Helper()
		return f.must(f.node("grade", inst, params, map[string]NodeOutput{"checkout": co, "patch": p})).Row
	}

	if r := grade(patch(f.rows[inst].Patch), grading); r["resolved"] != true || r["grade_status"] != steps.GradeResolved {
		t.Errorf("gold patch: %v", r)
	}
	if r := grade(patch(""), grading); r["resolved"] != false || r["grade_status"] != steps.GradeEmptyPatch {
		t.Errorf("empty patch: %v", r)
	}
	escape := diff.Unified("../outside.txt", nil, []byte("pwned\n"))
	if r := grade(patch(escape), grading); r["resolved"] != false || r["grade_status"] != steps.GradePatchFailed {
		t.Errorf("escaping patch: %v", r)
	}
	if _, err := os.Stat(filepath.Join(tmp, "outside.txt")); err == nil {
		t.Error("a patch wrote outside its worktree")
	}
	if r := grade(patch("this is not a diff\n"), grading); r["resolved"] != false {
		t.Errorf("garbage patch resolved: %v", r)
	}
	left, _ := os.ReadDir(tmp)
	if len(left) != 0 {
		t.Errorf("grading left %d entries in its temporary folder", len(left))
	}
}

func TestGradeKillsHangingTests(t *testing.T) {
	f := newFixture(t)
	row := f.rows[inst]
	row.TestPatch += diff.Unified("hang/hang_test.go", nil, []byte(
		"package hang\n\nimport (\n\t\"testing\"\n\t\"time\"\n)\n\nfunc TestHang(t *testing.T) { time.Sleep(time.Hour) }\n"))
	row.FailToPass = append(row.FailToPass, "TestHang")
	ref, err := cas.PutJSON(context.Background(), mustStore(t, f.a), row)
	if err != nil {
		t.Fatal(err)
	}
	f.refs[inst] = InstanceRef{ID: inst, Ref: ref}
	co := f.must(f.node("checkout", inst, nil, nil))
	gold, _ := mustStore(t, f.a).Put(context.Background(), []byte(row.Patch))
	start := time.Now()
	out := f.must(f.node("grade", inst, map[string]any{"grading": map[string]any{"timeout": "4s"}},
		map[string]NodeOutput{"checkout": co, "patch": {Ref: gold}}))
	if out.Row["grade_status"] != steps.GradeTimeout || out.Row["resolved"] != false {
		t.Errorf("hanging tests: %v", out.Row)
	}
	if d := time.Since(start); d > 2*time.Minute {
		t.Errorf("grading took %s despite a 4s timeout", d)
	}
	if out.Ref == "" {
		t.Error("no test log stored for a timed-out run")
	}
}

func TestNodeOutputIsMemoized(t *testing.T) {
	f := newFixture(t)
	first := f.must(f.node("checkout", inst, nil, nil))
	second := f.must(f.node("checkout", inst, nil, nil))
	if first.Ref != second.Ref {
		t.Fatalf("memoized output differs: %s vs %s", first.Ref, second.Ref)
	}
	b, err := os.ReadFile(filepath.Join(f.a.RunDir("t"), "attempts.jsonl"))
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
	d := f.dataset
	d.Instances = []string{"acme__semver-2", inst}
	refs, err := f.a.LoadDataset(context.Background(), LoadDatasetInput{Run: "t", Dataset: d})
	if err != nil || len(refs) != 2 || refs[0].ID != "acme__semver-2" || refs[1].ID != inst {
		t.Fatalf("refs = %v, %v", refs, err)
	}
	d.Instances = []string{"nope"}
	if _, err := f.a.LoadDataset(context.Background(), LoadDatasetInput{Run: "t", Dataset: d}); err == nil ||
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
		row := f.rows[inst]
		change(&row)
		ref, err := cas.PutJSON(context.Background(), store, row)
		if err != nil {
			t.Fatal(err)
		}
		f.refs[inst] = InstanceRef{ID: inst, Ref: ref}
	}
	// node runs an activity under a fixed node key, as a plan's node keeps its key when the dataset changes, and
	// reports whether the activity ran (rather than returning its memo).
	node := func(activity string, params map[string]any, inputs map[string]NodeOutput) (NodeOutput, bool) {
		t.Helper()
		before := countEvents(t, f.a.RunDir("t"), "start")
		in := NodeInput{Run: "t", Instance: f.refs[inst], Node: activity + "-fixedkey", Step: "m." + activity,
			Params: params, Inputs: inputs, Dataset: f.dataset}
		v, err := f.env.ExecuteActivity(activity, in)
		if err != nil {
			t.Fatal(err)
		}
		var out NodeOutput
		if err := v.Get(&out); err != nil {
			t.Fatal(err)
		}
		return out, countEvents(t, f.a.RunDir("t"), "start") > before
	}
	grading := map[string]any{"grading": map[string]any{"executor": "local", "timeout": "5m"}}
	gold, err := store.Put(context.Background(), []byte(f.rows[inst].Patch))
	if err != nil {
		t.Fatal(err)
	}
	co, ran := node("checkout", nil, nil)
	if !ran {
		t.Fatal("the first checkout did not run")
	}
	grade := func() (map[string]any, bool) {
		out, ran := node("grade", grading, map[string]NodeOutput{"checkout": co, "patch": {Ref: gold}})
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
	ctx1, ran := node("no_source", nil, map[string]NodeOutput{"checkout": co})
	if !ran {
		t.Error("a context of an edited row was taken from its memo")
	}
	if _, ran := node("no_source", nil, map[string]NodeOutput{"checkout": co}); ran {
		t.Error("an unchanged context ran again")
	}
	// Another upstream output under the same node key (a checkout redone into another snapshot) is another input.
	other := co
	other.Ref = ctx1.Ref
	if _, ran := node("no_source", nil, map[string]NodeOutput{"checkout": other}); !ran {
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
	dir := f.a.RunDir("t")
	for _, name := range []string{"results.jsonl", "summary.md"} {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(path, 0o755); err != nil {
			t.Fatal(err)
		}
		_, rerr := f.env.ExecuteActivity(RecordName, RecordInput{Run: "t", Rows: []results.Row{
			{results.FieldInstance: inst, results.FieldMethod: "m", results.FieldModel: "offline"}}})
		_, serr := f.env.ExecuteActivity(SummarizeName, SummarizeInput{Run: "t", Title: "t"})
		errs := map[string]error{SummarizeName: serr}
		if name == "results.jsonl" {
			errs[RecordName] = rerr
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

// node2 runs one node activity with a NodeInput the caller built.
func (f *fixture) node2(activity string, in NodeInput) (NodeOutput, error) {
	f.t.Helper()
	v, err := f.env.ExecuteActivity(activity, in)
	if err != nil {
		return NodeOutput{}, err
	}
	var out NodeOutput
	if err := v.Get(&out); err != nil {
		f.t.Fatal(err)
	}
	return out, nil
}

func mustLoad(t *testing.T, f *fixture, ref cas.Ref, v any) {
	t.Helper()
	if err := cas.GetJSON(context.Background(), mustStore(t, f.a), ref, v); err != nil {
		t.Fatal(err)
	}
}
