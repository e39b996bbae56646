package activities

import (
	"context"
	"path/filepath"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"ctxlab/activities/api"
	"ctxlab/grading/executor"
	"ctxlab/runfolder"
	"ctxlab/runlog"
	"ctxlab/testkit/demorun"
)

// countingExecutor runs the real executor and counts its runs; delay holds each run so graders overlap.
type countingExecutor struct {
	inner executor.Executor
	runs  *atomic.Int32
	delay time.Duration
}

func (c countingExecutor) Run(ctx context.Context, r executor.Request) (executor.Result, error) {
	c.runs.Add(1)
	time.Sleep(c.delay)
	return c.inner.Run(ctx, r)
}

// countRuns makes every grade a runs go through a countingExecutor.
func countRuns(a *Activities, delay time.Duration) *atomic.Int32 {
	var runs atomic.Int32
	a.newExecutor = func(name string) (executor.Executor, error) {
		inner, err := executor.New(name)
		return countingExecutor{inner: inner, runs: &runs, delay: delay}, err
	}
	return &runs
}

// TestGradeDedupe: two methods whose patches are byte-identical (separate patch nodes, so separate grade nodes)
// run the tests once and carry the same grade fields; other grading settings or another patch grade again. The
// reuse is in attempts.jsonl, not on the row.
func TestGradeDedupe(t *testing.T) {
	f := newFixture(t)
	runs := countRuns(f.a, 0)
	co := f.Must(f.Node("checkout", demorun.Instance, nil, nil))
	gold := f.Put(f.Rows[demorun.Instance].Patch)
	patchOf := func(method string, p api.NodeOutput) api.NodeOutput {
		return api.NodeOutput{Ref: p.Ref, Row: map[string]any{"method": method}}
	}
	settings := map[string]any{"grading": map[string]any{"executor": "local", "timeout": "5m"}}
	grade := func(settings map[string]any, patch api.NodeOutput) map[string]any {
		t.Helper()
		return f.Must(f.Node("grade", demorun.Instance, settings, map[string]api.NodeOutput{"checkout": co, "patch": patch})).Row
	}

	a := grade(settings, patchOf("a", gold))
	if a["resolved"] != true || runs.Load() != 1 {
		t.Fatalf("first grade: %d runs, row %v", runs.Load(), a)
	}
	b := grade(settings, patchOf("b", gold))
	if runs.Load() != 1 {
		t.Errorf("a byte-identical patch of another method ran the tests again: %d runs", runs.Load())
	}
	if !reflect.DeepEqual(a, b) || b["patch_ref"] != string(gold.Ref) {
		t.Errorf("the rows' grade fields differ:\n%v\n%v", a, b)
	}

	other := map[string]any{"grading": map[string]any{"executor": "local", "timeout": "6m"}}
	if c := grade(other, patchOf("c", gold)); c["resolved"] != true || runs.Load() != 2 {
		t.Errorf("other grading settings must grade again: %d runs, row %v", runs.Load(), c)
	}
	empty := f.Put("")
	if d := grade(settings, patchOf("d", empty)); d["resolved"] != false || d["patch_ref"] != string(empty.Ref) ||
		runs.Load() != 3 {
		t.Errorf("another patch must grade again: %d runs, row %v", runs.Load(), d)
	}

	attempts, _, err := runlog.Read[runlog.Attempt](filepath.Join(f.RunDir, runfolder.AttemptsFile))
	if err != nil {
		t.Fatal(err)
	}
	reused := 0
	for _, at := range attempts {
		if at.Activity == "grade" && at.Event == runlog.EventDone && at.Reused != "" {
			reused++
		}
	}
	if reused != 1 {
		t.Errorf("%d grade attempts logged as reused, want 1 (method b's)", reused)
	}
}

// TestGradeDedupeConcurrent: two methods grading the same patch at the same moment run the tests once; the second
// waits for the first and reuses its grade.
func TestGradeDedupeConcurrent(t *testing.T) {
	f := newFixture(t)
	runs := countRuns(f.a, 500*time.Millisecond)
	co := f.Must(f.Node("checkout", demorun.Instance, nil, nil))
	gold := f.Put(f.Rows[demorun.Instance].Patch)
	settings := map[string]any{"grading": map[string]any{"timeout": "5m"}}
	var wg sync.WaitGroup
	rows := make([]map[string]any, 2)
	errs := make([]error, 2)
	for i, method := range []string{"a", "b"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := f.a.Grade(context.Background(), api.NodeInput{Run: "t", Instance: f.Refs[demorun.Instance],
				Node: "grade-" + method, Step: method + ".grade", Params: settings, Dataset: f.Dataset,
				Inputs: map[string]api.NodeOutput{"checkout": co, "patch": {Ref: gold.Ref, Row: map[string]any{"method": method}}}})
			rows[i], errs[i] = out.Row, err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("grader %d: %v", i, err)
		}
	}
	if runs.Load() != 1 {
		t.Errorf("two concurrent graders of one patch ran the tests %d times, want 1", runs.Load())
	}
	if rows[0]["resolved"] != true || rows[1]["resolved"] != true || rows[0]["grade_status"] != rows[1]["grade_status"] {
		t.Errorf("rows: %v / %v", rows[0], rows[1])
	}
}
