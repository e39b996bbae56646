package sweepclient

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"ctxlab/activities/api"
	"ctxlab/activities/limiter"
	"ctxlab/workflows"
)

// TestRaisedCapReachesSyncsWaitingWithIt: a starter run again with a raised cap sets it on the run's budget while
// no workflow worker runs the budget yet (the workers come back to the restarted server after it), and the llm
// workers' syncs, sent as the paused issues run their calls again, wait beside it. The workflow worker then takes
// the raised cap and the syncs in one workflow task: each sync is decided under the raised cap, not the one it
// replaces (which stopped the calls again, and the starter with them, at the cap the researcher had just raised).
func TestRaisedCapReachesSyncsWaitingWithIt(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	c := embeddedClient(ctx, t, dir)
	wc := c
	if u, ok := c.(interface{ Unwrap() client.Client }); ok {
		wc = u.Unwrap()
	}
	const run, queue = "raised", "budget-raise-test"
	runDir := filepath.Join(dir, "runs", run)
	startWorker := func() worker.Worker {
		w := worker.New(wc, queue, worker.Options{})
		w.RegisterWorkflowWithOptions(workflows.Budget, workflow.RegisterOptions{Name: workflows.BudgetName})
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		return w
	}
	send := func(s limiter.Sync) (limiter.Reply, error) {
		var rep limiter.Reply
		h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: api.BudgetWorkflowID(run),
			UpdateName: api.BudgetSyncUpdate, Args: []any{s}, WaitForStage: client.WorkflowUpdateStageCompleted})
		if err == nil {
			err = h.Get(ctx, &rep)
		}
		return rep, err
	}
	sync := func(s limiter.Sync) limiter.Reply {
		t.Helper()
		rep, err := send(s)
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	ask := func(id string) limiter.Ask { return limiter.Ask{ID: id, Provider: "openai", USD: 0.05, Priced: true} }

	if err := SetBudget(ctx, c, run, runDir, queue, limiter.Limits{SpendUSD: 0.2}); err != nil {
		t.Fatal(err)
	}
	w := startWorker()
	sync(limiter.Sync{Holder: "llm-1", Asks: []limiter.Ask{ask("c1")}})
	rep := sync(limiter.Sync{Holder: "llm-1", Settles: []limiter.Settle{{ID: "c1", USD: 0.17, Sent: true}},
		Asks: []limiter.Ask{ask("c2")}})
	if v := rep.Answers[0]; v.Verdict != limiter.VerdictCapped || v.Cap != 0.2 {
		t.Fatalf("a $0.05 call with $0.17 spent under a $0.20 cap: %+v, want capped", v)
	}
	w.Stop() // the starter stopped, and its server with it: the workers wait for the next one

	if err := SetBudget(ctx, c, run, runDir, queue, limiter.Limits{SpendUSD: 100}); err != nil {
		t.Fatal(err)
	}
	type answer struct {
		rep limiter.Reply
		err error
	}
	replies := make(chan answer, 1)
	go func() {
		// The paused issue's call, asking again: it waits with the raised cap for a workflow worker.
		rep, err := send(limiter.Sync{Holder: "llm-2", Asks: []limiter.Ask{ask("c3")}})
		replies <- answer{rep, err}
	}()
	time.Sleep(2 * time.Second) // the update reaches the server before the worker comes back
	w = startWorker()
	defer w.Stop()
	select {
	case a := <-replies:
		if a.err != nil {
			t.Fatal(a.err)
		}
		rep = a.rep
	case <-ctx.Done():
		t.Fatal("the sync was never answered")
	}
	if v := rep.Answers[0]; v.Verdict != limiter.VerdictGranted || rep.Status.Limits.SpendUSD != 100 {
		t.Errorf("a $0.05 call with $0.17 spent, the cap raised to $100 before it asked: %+v (limits %+v), want "+
			"granted under the raised cap", v, rep.Status.Limits)
	}
}
