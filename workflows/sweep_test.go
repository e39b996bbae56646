package workflows

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"ctxlab/activities/api"
	"ctxlab/store/cas"
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
	env.RegisterActivityWithOptions(func(_ context.Context, in api.SummarizeStoredInput) (string, error) {
		return fmt.Sprintf("summary of %d issues' rows", len(in.Rows)), nil
	}, activity.RegisterOptions{Name: api.SummarizeStoredName})
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
			return IssueResult{Instance: in.Instance.ID, Rows: 2, RowsRef: rowsRefOf(in.Instance.ID)}, nil
		})
	return env, &peak, &order
}

// rowsRefOf is the rows reference the fake Issue of sweepEnv returns for an instance.
func rowsRefOf(id string) cas.Ref { return cas.RefOf([]byte("rows of " + id)) }

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
	// The rows of every issue that stored any, in the order they finished, for the starter to write, and the
	// summary of those rows for the result (the Web UI shows it).
	if want := "summary of 6 issues' rows"; res.Summary != want {
		t.Errorf("summary = %q, want %q", res.Summary, want)
	}
	var want []api.IssueRows
	for _, id := range *order {
		if id != "i-03" {
			want = append(want, api.IssueRows{Instance: id, Rows: rowsRefOf(id)})
		}
	}
	if !slices.Equal(res.Rows, want) {
		t.Errorf("rows %v\nwant %v", res.Rows, want)
	}
}

// TestSweepAnswersRowsQuery: a starter watching the sweep asks for the rows stored since its last question; the
// answer starts at the index it names, in the order the issues finished.
func TestSweepAnswersRowsQuery(t *testing.T) {
	env, _, _ := sweepEnv(t, 5)
	var early, late []api.IssueRows
	query := func(from int, into *[]api.IssueRows) {
		v, err := env.QueryWorkflow(RowsQuery, from)
		if err != nil {
			t.Error(err)
			return
		}
		if err := v.Get(into); err != nil {
			t.Error(err)
		}
	}
	env.RegisterDelayedCallback(func() { query(0, &early) }, 90*time.Second)
	env.RegisterDelayedCallback(func() { query(1, &late) }, 170*time.Second) // i-00..i-03 done, i-03 failed
	env.ExecuteWorkflow(Sweep, SweepInput{Run: "t", Concurrency: 2})
	var res SweepResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if len(early) != 2 || !slices.Equal(early, res.Rows[:2]) {
		t.Errorf("after the first two issues the query answered %v; the sweep stored %v", early, res.Rows)
	}
	if len(late) != 2 || !slices.Equal(late, res.Rows[1:3]) {
		t.Errorf("asked from index 1 after four issues (one failed), the query answered %v; the sweep stored %v",
			late, res.Rows)
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
	stored := n // every issue but the failing i-03 stores rows
	if slices.Contains(*order, "i-03") {
		stored--
	}
	if next.Next != n || next.Done != n || len(next.Instances) != 12 || next.Runs != 1 || len(next.Stored) != stored {
		t.Errorf("carried state next=%d done=%d instances=%d runs=%d stored=%d; want next=done=%d, %d stored, 12 "+
			"instances, runs=1", next.Next, next.Done, len(next.Instances), next.Runs, len(next.Stored), n, stored)
	}
}

// TestSweepGivesHostileIDsSafeWorkflowIDs: any instance id is legal in a dataset, but Temporal carries workflow ids
// in gRPC headers (printable ASCII only) and refuses ids over 1,000 bytes; a sweep that put such an id in its
// child's id hung at its start. Every Issue's id must be printable, short and its own, and keep the original id in
// its input (for the rows); plain ids keep the ids older sweeps gave them.
func TestSweepGivesHostileIDsSafeWorkflowIDs(t *testing.T) {
	ids := []string{"acme__humanize-1", "ünïcødé__repo-1 ✓", "new\nline", "nul\x00byte", strings.Repeat("long-", 2048),
		"a/b", "a_b", "..", "issue~/t/x"}
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(Issue)
	env.RegisterActivityWithOptions(func(context.Context, api.LoadDatasetInput) ([]api.InstanceRef, error) {
		out := make([]api.InstanceRef, len(ids))
		for i, id := range ids {
			out[i] = api.InstanceRef{ID: id}
		}
		return out, nil
	}, activity.RegisterOptions{Name: api.LoadDatasetName})
	env.RegisterActivityWithOptions(func(context.Context, api.SummarizeInput) (string, error) {
		return "summary", nil
	}, activity.RegisterOptions{Name: api.SummarizeName})
	env.RegisterActivityWithOptions(func(_ context.Context, in api.SummarizeStoredInput) (string, error) {
		return fmt.Sprintf("summary of %d issues' rows", len(in.Rows)), nil
	}, activity.RegisterOptions{Name: api.SummarizeStoredName})
	var mu sync.Mutex
	workflowIDs := map[string]string{} // instance id -> its Issue's workflow id
	env.OnWorkflow(Issue, mock.Anything, mock.Anything).Return(
		func(ctx workflow.Context, in IssueInput) (IssueResult, error) {
			mu.Lock()
			workflowIDs[in.Instance.ID] = workflow.GetInfo(ctx).WorkflowExecution.ID
			mu.Unlock()
			return IssueResult{Instance: in.Instance.ID}, nil
		})
	env.ExecuteWorkflow(Sweep, SweepInput{Run: "t", Concurrency: 3})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for _, id := range ids {
		wid, ok := workflowIDs[id]
		if !ok {
			t.Errorf("no Issue got the original id %.40q", id)
			continue
		}
		if prev, dup := seen[wid]; dup {
			t.Errorf("%.40q and %.40q share the workflow id %q", prev, id, wid)
		}
		seen[wid] = id
		if len(wid) > 600 {
			t.Errorf("the Issue of %.40q has a %d-byte workflow id", id, len(wid))
		}
		for i := 0; i < len(wid); i++ {
			if wid[i] < 0x20 || wid[i] > 0x7e {
				t.Errorf("the Issue of %.40q has the workflow id %q, with byte %#x", id, wid, wid[i])
				break
			}
		}
		if wid != IssueWorkflowID("t", id) {
			t.Errorf("the Issue of %.40q is %q, but IssueWorkflowID says %q", id, wid, IssueWorkflowID("t", id))
		}
	}
	for _, id := range []string{"acme__humanize-1", "a/b", "..", "issue~/t/x"} {
		if want := "issue/t/" + id; workflowIDs[id] != want {
			t.Errorf("plain id %q: workflow id %q, want %q as before", id, workflowIDs[id], want)
		}
	}
}
