package workflows

import (
	"context"
	"math"
	"sync"
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"ctxlab/activities/api"
	"ctxlab/results"
	"ctxlab/specs"
)

// callUsageError is a node activity's failure as activities report one whose model calls used something: the
// failure's own type and retryability, and its calls' usage as the detail of an ErrCallUsage cause.
func callUsageError(msg, kind string, u api.CallUsage) error {
	cause := temporal.NewApplicationErrorWithOptions("usage", api.ErrCallUsage,
		temporal.ApplicationErrorOptions{NonRetryable: true, Details: []any{u}})
	return temporal.NewApplicationErrorWithOptions(msg, kind,
		temporal.ApplicationErrorOptions{NonRetryable: true, Cause: cause})
}

// usage is row fields of a call's usage.
func usage(calls, prompt, completion int, cost float64) map[string]float64 {
	return map[string]float64{specs.ModelCalls.Name: float64(calls), specs.PromptTokens.Name: float64(prompt),
		specs.CompletionTokens.Name: float64(completion), specs.CostUSD.Name: cost}
}

// runPatchIssue runs an Issue of twoMethods whose patch nodes answer with patch, each node's runs counted apart.
func runPatchIssue(t *testing.T, patch func(run int) (api.NodeOutput, error)) []results.Row {
	t.Helper()
	plan, err := specs.BuildPlan(twoMethods())
	if err != nil {
		t.Fatal(err)
	}
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	(&fakeNodes{calls: map[string]int{}}).register(env, plan)
	var mu sync.Mutex
	runs := map[string]int{}
	env.RegisterActivityWithOptions(func(_ context.Context, in api.NodeInput) (api.NodeOutput, error) {
		mu.Lock()
		runs[in.Node]++
		n := runs[in.Node]
		mu.Unlock()
		return patch(n)
	}, activity.RegisterOptions{Name: "patch"})
	var rows []results.Row
	registerRowSink(env, func(_ context.Context, in api.RecordInput) (int, error) {
		rows = in.Rows
		return len(rows), nil
	})
	env.ExecuteWorkflow(Issue, IssueInput{Run: "t", Instance: api.InstanceRef{ID: "i-1"}, Retries: 3})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("%d rows, want 2", len(rows))
	}
	return rows
}

// wantUsage checks a row's usage fields.
func wantUsage(t *testing.T, r results.Row, calls, prompt, completion int, cost float64) {
	t.Helper()
	gotCost, _ := specs.CostUSD.Get(r)
	gotCalls, _ := specs.ModelCalls.Get(r)
	gotPrompt, _ := specs.PromptTokens.Get(r)
	gotCompletion, _ := specs.CompletionTokens.Get(r)
	if math.Abs(gotCost-cost) > 1e-12 || gotCalls != calls || gotPrompt != prompt || gotCompletion != completion {
		t.Errorf("%v: cost_usd %v, model_calls %d, prompt_tokens %d, completion_tokens %d; want %v, %d, %d, %d",
			r.Key(), gotCost, gotCalls, gotPrompt, gotCompletion, cost, calls, prompt, completion)
	}
}

// TestFailedNodeRowsCountItsCalls: a patch node's first run is billed and then waits for the endpoint (a rate
// limit); its second run fails for good after an answer it could not use. Its rows count both runs' spend and the
// failed run's answer: what the calls cost, though no step succeeded.
func TestFailedNodeRowsCountItsCalls(t *testing.T) {
	rows := runPatchIssue(t, func(run int) (api.NodeOutput, error) {
		if run == 1 {
			return api.NodeOutput{}, callUsageError("patch: rate limited", "rate_limit",
				api.CallUsage{Spent: usage(1, 100, 0, 0.01)})
		}
		return api.NodeOutput{}, callUsageError("patch: the answer did not fit", "context_length",
			api.CallUsage{Spent: usage(1, 200, 0, 0.02), Answered: usage(1, 0, 10, 0.005)})
	})
	for _, r := range rows {
		if r[results.FieldErrorKind] != "context_length" {
			t.Errorf("%v: error kind %v, want context_length", r.Key(), r[results.FieldErrorKind])
		}
		wantUsage(t, r, 3, 300, 10, 0.035)
	}
}

// TestRunAfterLostWorkerCountsItsSpend: a patch node's worker is lost after a billed call (the attempt's last
// heartbeat recorded its spend); the node runs again and succeeds. Its rows count the answer and the lost run's
// spend, and no answer twice.
func TestRunAfterLostWorkerCountsItsSpend(t *testing.T) {
	rows := runPatchIssue(t, func(run int) (api.NodeOutput, error) {
		if run <= 3 { // every attempt of the first round
			return api.NodeOutput{}, temporal.NewHeartbeatTimeoutError(api.CallUsage{Spent: usage(1, 100, 50, 0.01)})
		}
		row := map[string]any{}
		specs.ModelCalls.Set(row, 1)
		specs.PromptTokens.Set(row, 120)
		specs.CompletionTokens.Set(row, 30)
		specs.CostUSD.Set(row, 0.004)
		return api.NodeOutput{Row: row}, nil
	})
	for _, r := range rows {
		if r[results.FieldError] != nil {
			t.Errorf("%v failed: %v", r.Key(), r[results.FieldError])
		}
		wantUsage(t, r, 2, 220, 80, 0.014)
	}
}
