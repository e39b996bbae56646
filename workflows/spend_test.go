package workflows

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"ctxlab/activities/api"
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
	env.RegisterActivityWithOptions(func(context.Context, api.NodeInput) (api.NodeOutput, error) {
		mu.Lock()
		defer mu.Unlock()
		if !raised {
			checks++
			return api.NodeOutput{}, temporal.NewNonRetryableApplicationError("patch: spend cap reached",
				api.ErrSpendLimit, nil)
		}
		return api.NodeOutput{Row: map[string]any{"patch_ran": true}}, nil
	}, activity.RegisterOptions{Name: "patch"})
	var rows []results.Row
	registerRowSink(env, func(_ context.Context, in api.RecordInput) (int, error) {
		rows = append(rows, in.Rows...)
		return len(in.Rows), nil
	})
	env.RegisterActivityWithOptions(func(context.Context, api.LoadDatasetInput) ([]api.InstanceRef, error) {
		return instances(1), nil
	}, activity.RegisterOptions{Name: api.LoadDatasetName})
	env.RegisterActivityWithOptions(func(context.Context, api.SummarizeInput) (string, error) {
		return "summary", nil
	}, activity.RegisterOptions{Name: api.SummarizeName})
	env.RegisterActivityWithOptions(func(_ context.Context, in api.SummarizeStoredInput) (string, error) {
		return fmt.Sprintf("summary of %d issues' rows", len(in.Rows)), nil
	}, activity.RegisterOptions{Name: api.SummarizeStoredName})

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

// pauseRecorder stands in for the Sweep as an Issue's parent: it records every IssuePaused signal the issue sends,
// with a marker (Instance "resume") where it forwarded a resume signal, and returns them when the issue ends.
func pauseRecorder(ctx workflow.Context, in IssueInput) ([]IssuePaused, error) {
	var got []IssuePaused
	childID := issueWorkflowID(in.Run, in.Instance.ID)
	fut := workflow.ExecuteChildWorkflow(workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID: childID}), Issue, in)
	done := false
	var err error
	sel := workflow.NewSelector(ctx)
	sel.AddReceive(workflow.GetSignalChannel(ctx, PausedSignal), func(c workflow.ReceiveChannel, _ bool) {
		var p IssuePaused
		c.Receive(ctx, &p)
		got = append(got, p)
	})
	sel.AddReceive(workflow.GetSignalChannel(ctx, ResumeSignal), func(c workflow.ReceiveChannel, _ bool) {
		c.Receive(ctx, nil)
		got = append(got, IssuePaused{Instance: "resume"})
		workflow.SignalExternalWorkflow(ctx, childID, "", ResumeSignal, nil)
	})
	sel.AddFuture(fut, func(f workflow.Future) { done, err = true, f.Get(ctx, nil) })
	for !done {
		sel.Select(ctx)
	}
	return got, err
}

// TestResumeClearsPausedState: a sweep forgets which issues were paused when it forwards a resume signal, so after
// a resume an issue must report a node only when that node hits the cap again. Both patch nodes wait at the cap;
// the cap is raised and the resume forwarded. Before the fix, the first node to succeed reported the other as
// still paused (Nodes: 1), so a starter that had just raised the cap saw every running issue paused and stopped at
// once; and a node capped again after a resume never said so. Run 1: the cap raised, nothing may be reported
// paused after the resume. Run 2: the cap still reached, the issue must report it again.
func TestResumeClearsPausedState(t *testing.T) {
	for _, raise := range []bool{true, false} {
		plan, err := specs.BuildPlan(twoMethods())
		if err != nil {
			t.Fatal(err)
		}
		var s testsuite.WorkflowTestSuite
		env := s.NewTestWorkflowEnvironment()
		env.RegisterWorkflow(Issue)
		env.RegisterWorkflow(pauseRecorder)
		f := &fakeNodes{calls: map[string]int{}}
		f.register(env, plan)
		var mu sync.Mutex
		raised := false
		env.RegisterActivityWithOptions(func(context.Context, api.NodeInput) (api.NodeOutput, error) {
			mu.Lock()
			defer mu.Unlock()
			if !raised {
				return api.NodeOutput{}, temporal.NewNonRetryableApplicationError("patch: spend cap reached",
					api.ErrSpendLimit, nil)
			}
			return api.NodeOutput{Row: map[string]any{"patch_ran": true}}, nil
		}, activity.RegisterOptions{Name: "patch"})
		registerRowSink(env, func(_ context.Context, in api.RecordInput) (int, error) {
			return len(in.Rows), nil
		})
		env.RegisterDelayedCallback(func() {
			mu.Lock()
			raised = raise
			mu.Unlock()
			env.SignalWorkflow(ResumeSignal, nil)
		}, time.Hour)
		if !raise { // let it check again, then end the test
			env.RegisterDelayedCallback(func() {
				mu.Lock()
				raised = true
				mu.Unlock()
				env.SignalWorkflow(ResumeSignal, nil)
			}, 2*time.Hour)
		}
		env.ExecuteWorkflow(pauseRecorder, IssueInput{Run: "t", Instance: api.InstanceRef{ID: "i-1"}, Retries: 3})
		if err := env.GetWorkflowError(); err != nil {
			t.Fatal(err)
		}
		var got []IssuePaused
		if err := env.GetWorkflowResult(&got); err != nil {
			t.Fatal(err)
		}
		resumed := slices.IndexFunc(got, func(p IssuePaused) bool { return p.Instance == "resume" })
		if resumed < 1 || got[resumed-1].Nodes != 2 {
			t.Fatalf("raise=%v: signals %+v: want both patch nodes reported paused before the resume", raise, got)
		}
		after := got[resumed+1:]
		if raise {
			for _, p := range after {
				if p.Nodes > 0 {
					t.Errorf("the cap was raised, yet after the resume the issue reported %d node(s) paused: %+v",
						p.Nodes, got)
				}
			}
			continue
		}
		second := slices.IndexFunc(after, func(p IssuePaused) bool { return p.Instance == "resume" })
		if second < 0 || !slices.ContainsFunc(after[:second], func(p IssuePaused) bool { return p.Nodes > 0 }) {
			t.Errorf("the cap was still reached after the resume, yet the issue did not say so again: %+v", got)
		}
	}
}
