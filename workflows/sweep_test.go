package workflows

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"ctxlab/activities/api"
)

func instances(n int) []api.InstanceRef {
	out := make([]api.InstanceRef, n)
	for i := range out {
		out[i] = api.InstanceRef{ID: fmt.Sprintf("i-%02d", i)}
	}
	return out
}

func sweepEnv(t *testing.T, n int) (*testsuite.TestWorkflowEnvironment, *int, *[]string) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(Issue)
	env.RegisterActivityWithOptions(func(context.Context, api.LoadDatasetInput) ([]api.InstanceRef, error) {
		return instances(n), nil
	}, activity.RegisterOptions{Name: api.LoadDatasetName})
	env.RegisterActivityWithOptions(func(context.Context, api.SummarizeInput) (string, error) {
		return "summary", nil
	}, activity.RegisterOptions{Name: api.SummarizeName})
	var mu sync.Mutex
	running, peak := 0, 0
	var order []string
	env.OnWorkflow(Issue, mock.Anything, mock.Anything).Return(
		func(ctx workflow.Context, in IssueInput) (IssueResult, error) {
			mu.Lock()
			running++
			peak = max(peak, running)
			order = append(order, in.Instance.ID)
			mu.Unlock()
			_ = workflow.Sleep(ctx, time.Minute) // let siblings start, so overlap is visible
			mu.Lock()
			running--
			mu.Unlock()
			if in.Instance.ID == "i-03" {
				return IssueResult{}, errors.New("boom")
			}
			return IssueResult{Instance: in.Instance.ID, Rows: 2}, nil
		})
	return env, &peak, &order
}

func TestSweepBoundsConcurrencyAndFinishes(t *testing.T) {
	env, peak, order := sweepEnv(t, 7)
	env.ExecuteWorkflow(Sweep, SweepInput{Run: "t", Concurrency: 3})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var res SweepResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if *peak > 3 || *peak < 2 {
		t.Errorf("peak concurrent issues = %d, want between 2 and the limit 3", *peak)
	}
	if len(*order) != 7 || res.Issues != 7 {
		t.Errorf("ran %d issues (result says %d), want 7", len(*order), res.Issues)
	}
	if len(res.Failed) != 1 || res.Failed[0] != "i-03" {
		t.Errorf("failed = %v, want [i-03]", res.Failed)
	}
	if res.Summary != "summary" {
		t.Errorf("summary = %q", res.Summary)
	}
}

func TestSweepContinuesAsNewBeforeHistoryGrows(t *testing.T) {
	env, _, order := sweepEnv(t, 12)
	// The test environment does not count events; make the history "grow" past the limit after a few issues.
	env.RegisterDelayedCallback(func() { env.SetCurrentHistoryLength(100) }, 150*time.Second)
	env.ExecuteWorkflow(Sweep, SweepInput{Run: "t", Concurrency: 2, MaxHistory: 20})
	err := env.GetWorkflowError()
	var can *workflow.ContinueAsNewError
	if !errors.As(err, &can) {
		t.Fatalf("want continue-as-new once history passes 20 events, got %v", err)
	}
	n := len(*order)
	if n == 0 || n >= 12 {
		t.Fatalf("ran %d issues before continuing as new, want some but not all", n)
	}
	// The next run must carry the position and the loaded instances, so nothing runs twice.
	var next SweepInput
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
		t.Fatal(err)
	}
	if next.Next != n || next.Done != n || len(next.Instances) != 12 || next.Runs != 1 {
		t.Errorf("carried state next=%d done=%d instances=%d runs=%d; want next=done=%d, 12 instances, runs=1",
			next.Next, next.Done, len(next.Instances), next.Runs, n)
	}
}
