package workflows

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"ctxlab/activities"
	"ctxlab/results"
	"ctxlab/specs"
)

// TestSweepPausesAtSpendCap: a node stopped by the spend cap neither fails nor finishes its issue; the sweep's
// progress counts the issue as paused, and once the cap is raised (here, after an hour) and the sweep told to
// resume, the node runs at once and the rows come out without errors. The waits back off, so an hour's pause costs a bounded number of checks.
func TestSweepPausesAtSpendCap(t *testing.T) {
	plan, err := specs.BuildPlan(twoMethods())
	if err != nil {
		t.Fatal(err)
	}
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(Issue)
	f := &fakeNodes{calls: map[string]int{}}
	f.register(env, plan)

	var mu sync.Mutex
	raised, checks := false, 0
	env.RegisterActivityWithOptions(func(context.Context, activities.NodeInput) (activities.NodeOutput, error) {
		mu.Lock()
		defer mu.Unlock()
		if !raised {
			checks++
			return activities.NodeOutput{}, temporal.NewNonRetryableApplicationError("patch: spend cap reached",
				activities.ErrSpendLimit, nil)
		}
		return activities.NodeOutput{Row: map[string]any{"patch_ran": true}}, nil
	}, activity.RegisterOptions{Name: "patch"})
	var rows []results.Row
	env.RegisterActivityWithOptions(func(_ context.Context, in activities.RecordInput) (int, error) {
		rows = append(rows, in.Rows...)
		return len(in.Rows), nil
	}, activity.RegisterOptions{Name: activities.RecordName})
	env.RegisterActivityWithOptions(func(context.Context, activities.LoadDatasetInput) ([]activities.InstanceRef, error) {
		return instances(1), nil
	}, activity.RegisterOptions{Name: activities.LoadDatasetName})
	env.RegisterActivityWithOptions(func(context.Context, activities.SummarizeInput) (string, error) {
		return "summary", nil
	}, activity.RegisterOptions{Name: activities.SummarizeName})

	var during Progress
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(ProgressQuery)
		if err != nil {
			t.Error(err)
			return
		}
		if err := v.Get(&during); err != nil {
			t.Error(err)
		}
	}, 30*time.Minute)
	var start time.Time
	env.RegisterDelayedCallback(func() {
		mu.Lock()
		raised = true
		mu.Unlock()
		start = env.Now()
		env.SignalWorkflow(ResumeSignal, nil) // what a starter does when it attaches
	}, time.Hour)

	env.ExecuteWorkflow(Sweep, SweepInput{Run: "t", Concurrency: 1, Retries: 3})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var res SweepResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if during.Paused != 1 || during.Running != 1 || during.Done != 0 {
		t.Errorf("progress while capped: %+v, want one running issue, paused", during)
	}
	if len(res.Failed) != 0 || len(rows) != 2 {
		t.Fatalf("failed %v, %d rows", res.Failed, len(rows))
	}
	for _, r := range rows {
		if r[results.FieldError] != nil || r["patch_ran"] != true {
			t.Errorf("row %v: %v", r.Key(), r)
		}
	}
	// The resume signal wakes the waiting nodes at once instead of at the end of their (up to 5 minute) waits.
	if d := env.Now().Sub(start); d > time.Minute {
		t.Errorf("the sweep finished %v after the resume signal", d)
	}
	// Two patch nodes wait an hour each: 10 s doubling to 5 minutes is about 15 checks per node.
	if checks < 4 || checks > 2*20 {
		t.Errorf("%d capped checks in an hour: the waits do not back off as they should", checks)
	}
}
