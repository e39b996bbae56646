package workflows

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"ctxlab/activities/api"
	"ctxlab/results"
	"ctxlab/specs"
)

// runIssueWithPatch runs an Issue whose patch nodes answer with patch(call number of that node, from 1); it returns
// the recorded rows, how often each patch node ran, and how much workflow time the issue took. setup, when given,
// sees the environment before the issue starts (to register delayed callbacks).
func runIssueWithPatch(t *testing.T, in IssueInput, patch func(call int) error,
	setup ...func(*testsuite.TestWorkflowEnvironment)) ([]results.Row, map[string]int, time.Duration) {
	t.Helper()
	plan, err := specs.BuildPlan(twoMethods())
	if err != nil {
		t.Fatal(err)
	}
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	f := &fakeNodes{calls: map[string]int{}}
	f.register(env, plan)
	var mu sync.Mutex
	calls := map[string]int{}
	env.RegisterActivityWithOptions(func(_ context.Context, n api.NodeInput) (api.NodeOutput, error) {
		mu.Lock()
		calls[n.Node]++
		c := calls[n.Node]
		mu.Unlock()
		if err := patch(c); err != nil {
			return api.NodeOutput{}, err
		}
		return api.NodeOutput{Row: map[string]any{"patch_ran": true}}, nil
	}, activity.RegisterOptions{Name: "patch"})
	var rows []results.Row
	registerRowSink(env, func(_ context.Context, r api.RecordInput) (int, error) {
		rows = r.Rows
		return len(rows), nil
	})
	for _, f := range setup {
		f(env)
	}
	start := env.Now()
	env.ExecuteWorkflow(Issue, in)
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("%d rows, want 2", len(rows))
	}
	return rows, calls, env.Now().Sub(start)
}

// TestIssueWaitsForLongRetryAfter: a 429 whose Retry-After is an hour (the activity's ErrProviderWait) is not the
// model's failure: the node waits the hour on a durable timer and runs again, and the rows have no error. Before,
// the rows failed within seconds.
func TestIssueWaitsForLongRetryAfter(t *testing.T) {
	rows, calls, took := runIssueWithPatch(t, IssueInput{Run: "t", Instance: api.InstanceRef{ID: "i-1"},
		Retries: 3}, func(call int) error {
		if call == 1 {
			return temporal.NewNonRetryableApplicationError("patch: model call failed (rate_limit, HTTP 429)",
				api.ErrProviderWait, nil, api.ProviderWait{Kind: "rate_limit", Wait: time.Hour})
		}
		return nil
	})
	for _, r := range rows {
		if r[results.FieldError] != nil || r["patch_ran"] != true {
			t.Errorf("row %v: %v", r.Key(), r)
		}
	}
	for node, n := range calls {
		if n != 2 {
			t.Errorf("patch node %s ran %d times, want 2 (once more after the wait)", node, n)
		}
	}
	if took < time.Hour {
		t.Errorf("the issue took %v: it did not wait the hour the endpoint asked for", took)
	}
}

// TestIssueWaitsOutServerErrors: server errors that outlast the activity's retries (3 attempts) wait on a timer
// and the node gets fresh attempts; the rows have no error.
func TestIssueWaitsOutServerErrors(t *testing.T) {
	rows, calls, took := runIssueWithPatch(t, IssueInput{Run: "t", Instance: api.InstanceRef{ID: "i-1"},
		Retries: 3}, func(call int) error {
		if call <= 7 {
			// As activities.modelError returns it, wrapped by the node activity with its step.
			return &wrapped{"patch", temporal.NewApplicationError("model call failed (server, HTTP 500)", "server")}
		}
		return nil
	})
	for _, r := range rows {
		if r[results.FieldError] != nil {
			t.Errorf("row %v failed on server errors: %v", r.Key(), r[results.FieldError])
		}
	}
	for node, n := range calls {
		if n != 8 {
			t.Errorf("patch node %s ran %d times, want 8", node, n)
		}
	}
	if took < 3*time.Minute {
		t.Errorf("took %v: no wait between rounds", took)
	}
}

// wrapped is an error wrapping another with a prefix, as fmt.Errorf("%s: %w") in the node activity does.
type wrapped struct {
	prefix string
	err    error
}

func (w *wrapped) Error() string { return w.prefix + ": " + w.err.Error() }
func (w *wrapped) Unwrap() error { return w.err }

// TestIssueModelFailuresStayFinal: a model's own failure (context_length) is not waited on or retried, and the
// row records its kind; with waits turned off an endpoint failure is recorded with its kind too.
func TestIssueModelFailuresStayFinal(t *testing.T) {
	rows, calls, _ := runIssueWithPatch(t, IssueInput{Run: "t", Instance: api.InstanceRef{ID: "i-1"},
		Retries: 3}, func(int) error {
		return temporal.NewNonRetryableApplicationError("model call failed (context_length)", "context_length", nil)
	})
	for node, n := range calls {
		if n != 1 {
			t.Errorf("patch node %s ran %d times: a model failure was retried", node, n)
		}
	}
	for _, r := range rows {
		if r[results.FieldError] == nil || r[results.FieldErrorKind] != "context_length" {
			t.Errorf("row %v: error %v, kind %v", r.Key(), r[results.FieldError], r[results.FieldErrorKind])
		}
	}
	rows, _, _ = runIssueWithPatch(t, IssueInput{Run: "t", Instance: api.InstanceRef{ID: "i-1"},
		Retries: 2, InfraWaits: -1}, func(int) error {
		return &wrapped{"patch", temporal.NewApplicationError("model call failed (server, HTTP 500)", "server")}
	})
	for _, r := range rows {
		if r[results.FieldError] == nil || r[results.FieldErrorKind] != "server" {
			t.Errorf("row %v: error %v, kind %v", r.Key(), r[results.FieldError], r[results.FieldErrorKind])
		}
	}
}

// TestSweepRetriesOnlyNamedArms: a sweep given Retry runs only those instances, and in each only the nodes the
// named arms need, recording only their rows: a re-run of a finished sweep does not ask the model again for a
// row whose failure was the model's.
func TestSweepRetriesOnlyNamedArms(t *testing.T) {
	plan, err := specs.BuildPlan(twoMethods())
	if err != nil {
		t.Fatal(err)
	}
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(Issue)
	f := &fakeNodes{calls: map[string]int{}}
	f.register(env, plan)
	var rows []results.Row
	registerRowSink(env, func(_ context.Context, in api.RecordInput) (int, error) {
		rows = append(rows, in.Rows...)
		return len(in.Rows), nil
	})
	env.RegisterActivityWithOptions(func(context.Context, api.LoadDatasetInput) ([]api.InstanceRef, error) {
		return instances(3), nil
	}, activity.RegisterOptions{Name: api.LoadDatasetName})
	env.RegisterActivityWithOptions(func(context.Context, api.SummarizeInput) (string, error) {
		return "summary", nil
	}, activity.RegisterOptions{Name: api.SummarizeName})
	env.RegisterActivityWithOptions(func(_ context.Context, in api.SummarizeStoredInput) (string, error) {
		return fmt.Sprintf("summary of %d issues' rows", len(in.Rows)), nil
	}, activity.RegisterOptions{Name: api.SummarizeStoredName})
	second := instances(3)[1].ID
	env.ExecuteWorkflow(Sweep, SweepInput{Run: "t", Concurrency: 2, Retries: 1,
		Retry: map[string][]results.Key{second: {{Method: "b", Model: "offline"}}}})
	var res SweepResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if res.Issues != 1 || len(rows) != 1 || rows[0].Key() != (results.Key{Instance: second, Method: "b", Model: "offline"}) {
		t.Fatalf("%d issues, rows %v; want method b's row of %s only", res.Issues, rows, second)
	}
	if f.calls["no_source"] != 0 || f.calls["oracle_files"] != 1 || f.calls["checkout"] != 1 || f.calls["grade"] != 1 {
		t.Errorf("nodes run: %v; want only method b's, once", f.calls)
	}
}

// TestGradeTimeoutIsNotWaitedOn: a node that calls no model and runs out of time (tests hanging under a patch) is
// not the endpoint's failure: it is not waited on or run again past its attempts, and its rows say step_timeout
// (the machine's: a re-run retries it), while a model call that times out is the endpoint's.
func TestGradeTimeoutIsNotWaitedOn(t *testing.T) {
	plan, err := specs.BuildPlan(twoMethods())
	if err != nil {
		t.Fatal(err)
	}
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	f := &fakeNodes{calls: map[string]int{}}
	f.register(env, plan)
	var mu sync.Mutex
	grades := 0
	env.RegisterActivityWithOptions(func(context.Context, api.NodeInput) (api.NodeOutput, error) {
		mu.Lock()
		grades++
		mu.Unlock()
		return api.NodeOutput{}, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_START_TO_CLOSE, nil)
	}, activity.RegisterOptions{Name: "grade"})
	var rows []results.Row
	registerRowSink(env, func(_ context.Context, r api.RecordInput) (int, error) {
		rows = r.Rows
		return len(rows), nil
	})
	env.ExecuteWorkflow(Issue, IssueInput{Run: "t", Instance: api.InstanceRef{ID: "i-1"}, Retries: 2})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if grades != 2*2 {
		t.Errorf("grade ran %d times, want its 2 attempts for each of 2 nodes", grades)
	}
	for _, r := range rows {
		if r[results.FieldErrorKind] != "step_timeout" {
			t.Errorf("row %v: kind %v, want step_timeout", r.Key(), r[results.FieldErrorKind])
		}
	}
	if k := failureKind(temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_START_TO_CLOSE, nil), true); k != "timeout" {
		t.Errorf("a model call's timeout is of kind %q, want timeout", k)
	}
}

// TestIssueWaitsAreQueriedAndCutShort: a node waiting out an hour's Retry-After says so to the waits query (which
// node, the failure's kind, until when), and a resume signal, which an attaching starter sends, runs it again at
// once: the issue ends in minutes, not an hour. Before, only nodes waiting at the spend cap woke, and nothing said
// what the sweep waited for.
func TestIssueWaitsAreQueriedAndCutShort(t *testing.T) {
	var waits []NodeWait
	var start time.Time
	_, calls, took := runIssueWithPatch(t, IssueInput{Run: "t", Instance: api.InstanceRef{ID: "i-1"}, Retries: 3},
		func(call int) error {
			if call == 1 {
				return temporal.NewNonRetryableApplicationError("patch: model call failed (rate_limit, HTTP 429)",
					api.ErrProviderWait, nil, api.ProviderWait{Kind: "rate_limit", Wait: time.Hour})
			}
			return nil
		}, func(env *testsuite.TestWorkflowEnvironment) {
			start = env.Now()
			env.RegisterDelayedCallback(func() {
				v, err := env.QueryWorkflow(WaitsQuery)
				if err != nil {
					t.Errorf("waits query: %v", err)
					return
				}
				if err := v.Get(&waits); err != nil {
					t.Error(err)
				}
				env.SignalWorkflow(ResumeSignal, nil)
			}, 2*time.Minute)
		})
	if len(waits) != 2 {
		t.Fatalf("waits %+v, want both patch nodes", waits)
	}
	for _, w := range waits {
		if w.Kind != "rate_limit" || w.Until.Sub(start) < 59*time.Minute || w.Until.Sub(start) > 61*time.Minute ||
			!strings.Contains(w.Error, "429") {
			t.Errorf("wait %+v: want rate_limit until an hour after the start, with its error", w)
		}
	}
	if took > 10*time.Minute {
		t.Errorf("the issue took %v: the resume signal did not cut the hour's wait short", took)
	}
	for node, n := range calls {
		if n != 2 {
			t.Errorf("patch node %s ran %d times, want 2", node, n)
		}
	}
}
