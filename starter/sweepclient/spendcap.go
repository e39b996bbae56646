package sweepclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"ctxlab/activities/api"
	"ctxlab/activities/limiter"
	"ctxlab/runfolder"
	"ctxlab/runlog"
	"ctxlab/specs"
	"ctxlab/starter/exitcode"
	"ctxlab/workflows"
)

// pauseGuard watches progress samples and calls stop once every running issue waits for the spend cap: nothing can
// move until the cap is raised, so the starter should say so and exit instead of waiting forever.
type pauseGuard struct {
	stop func()
	seen int
	// hit is the sample that made it stop (nil until then); read after the watch has ended.
	hit *ProgressEvent
}

func (g *pauseGuard) observe(ev ProgressEvent) {
	if g.hit != nil {
		return
	}
	// Twice in a row: a starter that just asked paused issues to resume sees them paused until they have checked
	// the cap again.
	if ev.IssuesPaused == 0 || ev.IssuesPaused < ev.IssuesRunning {
		g.seen = 0
		return
	}
	if g.seen++; g.seen >= 2 {
		g.hit = &ev
		g.stop()
	}
}

// SetBudget gives the run's budget workflow the spec's limits (the spend cap and provider limits every worker's
// paid calls ask), starting it when it does not run. A budget started for a run whose calls predate it (a run
// folder of an earlier ctxlab, a database moved aside) starts from what the run folder's ledger says was spent.
// A signal, not an update: it needs no worker to answer, so it is set before the workers start.
func SetBudget(ctx context.Context, c client.Client, run, runDir, queue string, l limiter.Limits) error {
	var seed limiter.Ledger
	calls, _, err := runlog.Read[runlog.Call](runfolder.Calls(runDir))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("reading the run's calls: %w", err)
	}
	for _, call := range calls {
		if !call.Cached {
			seed.Count(call.CostUSD, true)
		}
	}
	id := api.BudgetWorkflowID(run)
	_, err = c.SignalWithStartWorkflow(ctx, id, api.BudgetLimitsSignal, l, client.StartWorkflowOptions{ID: id,
		TaskQueue: queue, WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE},
		workflows.BudgetName, workflows.BudgetInput{Run: run, Ledger: seed})
	if err != nil {
		return fmt.Errorf("setting the run's limits on its budget workflow %s: %w", id, err)
	}
	return nil
}

// paysModels reports whether a spec has a model whose calls cost money (its provider's declaration says Paid): a
// run of none has no spend to read.
func paysModels(e *specs.Experiment) bool {
	return slices.ContainsFunc(e.Models, func(m specs.Model) bool {
		p, ok := specs.ProviderOf(m)
		return ok && p.Paid
	})
}

// ReadBudget returns what the run's budget workflow holds: its limits, what the run's calls cost, what the calls
// in flight reserve.
func ReadBudget(ctx context.Context, c client.Client, run string) (limiter.Status, error) {
	var st limiter.Status
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	v, err := c.QueryWorkflow(qctx, api.BudgetWorkflowID(run), "", api.BudgetQuery)
	if err == nil {
		err = v.Get(&st)
	}
	return st, err
}

// overCapExit says so and returns exitcode.Fail when the run's budget says it spent past its cap (an endpoint billed
// more than a call's worst case, or calls in flight when a worker died were billed): such a sweep never exits 0.
func overCapExit(ctx context.Context, c client.Client, run string, stderr io.Writer) (int, bool) {
	st, err := ReadBudget(ctx, c, run)
	if err != nil || st.Limits.SpendUSD <= 0 || st.SpentUSD <= st.Limits.SpendUSD {
		return 0, false
	}
	fmt.Fprintf(stderr, "starter: the run spent $%.4f, past its cap limits.spend_usd $%.4f (an endpoint billed more "+
		"than a call's worst case, or calls in flight when their worker was lost were billed)\n", st.SpentUSD,
		st.Limits.SpendUSD)
	return exitcode.Fail, true
}
