package workflows

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"ctxlab/activities/api"
	"ctxlab/results"
	"ctxlab/specs"
	"ctxlab/store/cas"
)

// twoMethods is an experiment whose methods share checkout and differ in their context step.
func twoMethods() *specs.Experiment {
	tail := func(ctxActivity string) []specs.Step {
		return []specs.Step{
			{ID: "checkout", Activity: "checkout"},
			{ID: "context", Activity: ctxActivity, Inputs: map[string]string{"checkout": "checkout"}},
			{ID: "patch", Activity: "patch", Params: map[string]any{"format": "diff"},
				Inputs: map[string]string{"checkout": "checkout", "context": "context"}},
			{ID: "measure", Activity: "measure",
				Inputs: map[string]string{"checkout": "checkout", "context": "context", "patch": "patch"}},
			{ID: "grade", Activity: "grade", Inputs: map[string]string{"checkout": "checkout", "patch": "patch"}},
		}
	}
	return &specs.Experiment{
		Name: "t", Tokenizer: "o200k_base",
		Models:  []specs.Model{{Name: "offline", Provider: "offline"}},
		Methods: []specs.Method{{Name: "a", Steps: tail("no_source")}, {Name: "b", Steps: tail("oracle_files")}},
	}
}

// fakeNodes registers every node activity under its name with a function that the mocks replace.
type fakeNodes struct {
	mu    sync.Mutex
	calls map[string]int // activity name -> calls
	fail  map[string]bool
	delay time.Duration
}

func (f *fakeNodes) register(env *testsuite.TestWorkflowEnvironment, plan *specs.Plan) {
	for name := range specs.Catalog {
		name := name
		fn := func(ctx context.Context, in api.NodeInput) (api.NodeOutput, error) {
			f.mu.Lock()
			f.calls[name]++
			fail := f.fail[name]
			f.mu.Unlock()
			if f.delay > 0 {
				time.Sleep(f.delay)
			}
			if fail {
				return api.NodeOutput{}, temporal.NewNonRetryableApplicationError(name+" broke", "Test", nil)
			}
			return api.NodeOutput{Ref: "", Row: map[string]any{name + "_ran": true, "last_input_count": len(in.Inputs)}}, nil
		}
		env.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name})
	}
	env.RegisterActivityWithOptions(func(context.Context, api.LoadPlanInput) (specs.Plan, error) {
		return *plan, nil
	}, activity.RegisterOptions{Name: api.LoadPlanName})
}

func runIssue(t *testing.T, f *fakeNodes) (IssueResult, []results.Row, *testsuite.TestWorkflowEnvironment) {
	t.Helper()
	plan, err := specs.BuildPlan(twoMethods())
	if err != nil {
		t.Fatal(err)
	}
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	f.register(env, plan)
	var recorded []results.Row
	registerRowSink(env, func(_ context.Context, in api.RecordInput) (int, error) {
		recorded = append(recorded, in.Rows...)
		return len(in.Rows), nil
	})
	env.ExecuteWorkflow(Issue, IssueInput{Run: "t", Instance: api.InstanceRef{ID: "i-1"}})
	if !env.IsWorkflowCompleted() {
		t.Fatal("workflow did not complete")
	}
	var res IssueResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	return res, recorded, env
}

func TestIssueRunsSharedNodesOnce(t *testing.T) {
	f := &fakeNodes{calls: map[string]int{}}
	res, rows, _ := runIssue(t, f)
	if f.calls["checkout"] != 1 {
		t.Errorf("checkout ran %d times, want once for both methods", f.calls["checkout"])
	}
	if f.calls["patch"] != 2 || f.calls["grade"] != 2 {
		t.Errorf("patch ran %d, grade %d times; want 2 each (their inputs differ)", f.calls["patch"], f.calls["grade"])
	}
	if res.Rows != 2 || len(rows) != 2 {
		t.Fatalf("rows: result %d, recorded %d; want 2", res.Rows, len(rows))
	}
	// The result names the stored rows (the fake store's reference is their content address), for the sweep to pass
	// on to the starter.
	if b, _ := json.Marshal(rows); res.RowsRef != cas.RefOf(b) {
		t.Errorf("the result names rows %q, not the %d rows stored", res.RowsRef, len(rows))
	}
	for _, r := range rows {
		for _, k := range results.Required {
			if _, ok := r[k]; !ok {
				t.Errorf("row %v lacks field %s", r.Key(), k)
			}
		}
		if r[results.FieldError] != nil {
			t.Errorf("row %v has error %v", r.Key(), r[results.FieldError])
		}
		if r["grade_ran"] != true || r["measure_ran"] != true {
			t.Errorf("row %v misses fields of its steps: %v", r.Key(), r)
		}
	}
	if rows[0].String(results.FieldMethod) != "a" || rows[1].String(results.FieldMethod) != "b" {
		t.Errorf("rows not in method order: %v, %v", rows[0].Key(), rows[1].Key())
	}
	if rows[0]["no_source_ran"] != true || rows[0]["oracle_files_ran"] != nil {
		t.Errorf("method a's row carries another method's fields: %v", rows[0])
	}
}

func TestIssueRunsIndependentNodesInParallel(t *testing.T) {
	f := &fakeNodes{calls: map[string]int{}}
	plan, _ := specs.BuildPlan(twoMethods())
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	f.register(env, plan)
	registerRowSink(env, func(context.Context, api.RecordInput) (int, error) { return 0, nil })
	var mu sync.Mutex
	running, peak := 0, 0
	env.SetOnActivityStartedListener(func(_ *activity.Info, _ context.Context, _ converter.EncodedValues) {
		mu.Lock()
		defer mu.Unlock()
		running++
		peak = max(peak, running)
	})
	env.SetOnActivityCompletedListener(func(_ *activity.Info, _ converter.EncodedValue, _ error) {
		mu.Lock()
		defer mu.Unlock()
		running--
	})
	f.delay = 50 * time.Millisecond
	env.ExecuteWorkflow(Issue, IssueInput{Run: "t", Instance: api.InstanceRef{ID: "i-1"}})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	// After checkout, both context steps are ready at once; so are both methods' measure and grade later.
	if peak < 2 {
		t.Errorf("at most %d activity ran at a time; independent nodes should overlap", peak)
	}
}

func TestIssueFailedNodeFailsOnlyItsMethods(t *testing.T) {
	f := &fakeNodes{calls: map[string]int{}, fail: map[string]bool{"oracle_files": true}}
	res, rows, _ := runIssue(t, f)
	if res.FailedSteps != 1 {
		t.Errorf("failed steps = %d, want 1", res.FailedSteps)
	}
	if len(rows) != 2 {
		t.Fatalf("want a row per method even when one fails, got %d", len(rows))
	}
	a, b := rows[0], rows[1]
	if a[results.FieldError] != nil || a["grade_ran"] != true {
		t.Errorf("method a should be unaffected: %v", a)
	}
	msg, _ := b[results.FieldError].(string)
	if msg == "" || !strings.Contains(msg, "step context") || !strings.Contains(msg, "oracle_files broke") {
		t.Errorf("method b's error should name the failed step and cause, got %q", msg)
	}
	if b["grade_ran"] != nil {
		t.Errorf("method b's grade ran although its context failed: %v", b)
	}
	if f.calls["grade"] != 1 {
		t.Errorf("grade ran %d times, want 1 (only method a)", f.calls["grade"])
	}
}

// A node whose worker keeps going away (killed, or stopped mid-run) is not failed for it: once its attempts are
// used up that way it gets fresh ones.
func TestIssueReschedulesNodesThatLostTheirWorker(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  func() error
	}{
		{"worker stopped", func() error {
			return temporal.NewApplicationError("patch: worker stopped", api.ErrWorkerStopped)
		}},
		{"heartbeat timeout", func() error { return temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_HEARTBEAT, nil) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeNodes{calls: map[string]int{}}
			plan, _ := specs.BuildPlan(twoMethods())
			var s testsuite.WorkflowTestSuite
			env := s.NewTestWorkflowEnvironment()
			f.register(env, plan)
			lost := 0
			// Replace checkout: the first five attempts lose their worker (more than one round of 3 attempts).
			env.RegisterActivityWithOptions(func(context.Context, api.NodeInput) (api.NodeOutput, error) {
				if lost < 5 {
					lost++
					return api.NodeOutput{}, tc.err()
				}
				return api.NodeOutput{Row: map[string]any{"checkout_ran": true}}, nil
			}, activity.RegisterOptions{Name: "checkout"})
			var rows []results.Row
			registerRowSink(env, func(_ context.Context, in api.RecordInput) (int, error) {
				rows = in.Rows
				return len(rows), nil
			})
			env.ExecuteWorkflow(Issue, IssueInput{Run: "t", Instance: api.InstanceRef{ID: "i-1"}, Retries: 3})
			if err := env.GetWorkflowError(); err != nil {
				t.Fatal(err)
			}
			if lost != 5 || len(rows) != 2 {
				t.Fatalf("lost %d attempts, %d rows", lost, len(rows))
			}
			for _, r := range rows {
				if r[results.FieldError] != nil || r["checkout_ran"] != true {
					t.Errorf("row %v failed although only its workers were lost: %v", r.Key(), r)
				}
			}
		})
	}
	// A real failure is still a failure after its attempts.
	f := &fakeNodes{calls: map[string]int{}, fail: map[string]bool{"checkout": true}}
	res, rows, _ := runIssue(t, f)
	if res.FailedSteps != 1 || rows[0][results.FieldError] == nil {
		t.Errorf("a failing node was not recorded as failed: %+v %v", res, rows[0])
	}
}

// registerRowSink registers fakes of the activities an Issue stores its rows with: StoreRows (whose reference is the
// rows' content address) and, for the way before rowsChange, Record. Both pass the rows to record.
func registerRowSink(env *testsuite.TestWorkflowEnvironment, record func(context.Context, api.RecordInput) (int, error)) {
	env.RegisterActivityWithOptions(record, activity.RegisterOptions{Name: api.RecordName})
	env.RegisterActivityWithOptions(func(ctx context.Context, in api.RecordInput) (cas.Ref, error) {
		if _, err := record(ctx, in); err != nil {
			return "", err
		}
		b, err := json.Marshal(in.Rows)
		return cas.RefOf(b), err
	}, activity.RegisterOptions{Name: api.StoreRowsName})
}
