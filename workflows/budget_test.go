package workflows

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"ctxlab/activities/api"
	"ctxlab/activities/limiter"
)

// syncResult is one sync update's outcome in the test environment.
type syncResult struct {
	reply    limiter.Reply
	rejected error
}

// sendSync sends a sync update now and returns where its outcome lands once the environment has run it.
func sendSync(env *testsuite.TestWorkflowEnvironment, id string, s limiter.Sync) *syncResult {
	r := &syncResult{}
	env.UpdateWorkflow(api.BudgetSyncUpdate, id, &testsuite.TestUpdateCallback{
		OnAccept: func() {},
		OnReject: func(err error) { r.rejected = err },
		OnComplete: func(v any, err error) {
			if rep, ok := v.(limiter.Reply); ok {
				r.reply = rep
			}
		},
	}, s)
	return r
}

func verdict(r *syncResult) string {
	if len(r.reply.Answers) == 0 {
		return fmt.Sprint("rejected: ", r.rejected)
	}
	return r.reply.Answers[0].Verdict
}

// TestBudgetHoldsTheCapAcrossHolders: a holder's reservation holds money other holders wait for; a sync that would
// change nothing is refused before it is accepted (no history); the holder that went silent (its process died)
// loses its reservation on the workflow's own timer once its lease lapses, and the waiting holder is then granted;
// a raised cap lets a capped call through; the query shows the spend.
func TestBudgetHoldsTheCapAcrossHolders(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(Budget, workflow.RegisterOptions{Name: BudgetName})
	ask := func(id string, usd float64) []limiter.Ask {
		return []limiter.Ask{{ID: id, Provider: "openai", USD: usd, Priced: true}}
	}
	var first, waiting, afterLapse, capped, raised *syncResult
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(api.BudgetLimitsSignal, limiter.Limits{SpendUSD: 1})
	}, time.Second)
	env.RegisterDelayedCallback(func() {
		first = sendSync(env, "1", limiter.Sync{Holder: "dead", Asks: ask("d1", 0.9)})
	}, 2*time.Second)
	env.RegisterDelayedCallback(func() {
		waiting = sendSync(env, "2", limiter.Sync{Holder: "live", Asks: ask("l1", 0.5)})
	}, 3*time.Second)
	env.RegisterDelayedCallback(func() {
		afterLapse = sendSync(env, "3", limiter.Sync{Holder: "live", Asks: ask("l1", 0.5)})
	}, 2*time.Second+limiter.LeaseTTL+5*time.Second)
	env.RegisterDelayedCallback(func() {
		capped = sendSync(env, "4", limiter.Sync{Holder: "live", Held: []string{"l1"},
			Settles: []limiter.Settle{{ID: "l1", USD: 0.7, Sent: true}}, Asks: ask("l2", 0.5)})
	}, 2*time.Second+limiter.LeaseTTL+6*time.Second)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(api.BudgetLimitsSignal, limiter.Limits{SpendUSD: 2})
		raised = sendSync(env, "5", limiter.Sync{Holder: "live", Asks: ask("l2", 0.5)})
	}, 2*time.Second+limiter.LeaseTTL+7*time.Second)
	var status limiter.Status
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(api.BudgetQuery)
		if err == nil {
			err = v.Get(&status)
		}
		if err != nil {
			t.Error(err)
		}
	}, 2*time.Second+limiter.LeaseTTL+8*time.Second)
	var lapsed limiter.Status
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(api.BudgetQuery)
		if err == nil {
			err = v.Get(&lapsed)
		}
		if err != nil {
			t.Error(err)
		}
		env.CancelWorkflow()
	}, time.Hour)
	env.ExecuteWorkflow(Budget, BudgetInput{Run: "r"})

	if v := verdict(first); v != limiter.VerdictGranted {
		t.Errorf("first ask: %s", v)
	}
	var app *temporal.ApplicationError
	if !errors.As(waiting.rejected, &app) || app.Type() != api.ErrBudgetQuiet {
		t.Errorf("an ask that can only wait: %+v, want refused as quiet (no history)", waiting)
	}
	if v := verdict(afterLapse); v != limiter.VerdictGranted {
		t.Errorf("after the silent holder's lease lapsed: %s, want granted", v)
	}
	if v := verdict(capped); v != limiter.VerdictCapped || capped.reply.Status.SpentUSD != 0.7 {
		t.Errorf("a $0.50 call with $0.70 spent under $1: %s, status %+v", v, capped.reply.Status)
	}
	if v := verdict(raised); v != limiter.VerdictGranted {
		t.Errorf("after the cap was raised to $2: %s", v)
	}
	if status.SpentUSD != 0.7 || status.Calls != 1 || status.InFlight != 1 || status.Limits.SpendUSD != 2 {
		t.Errorf("status %+v", status)
	}
	if lapsed.InFlight != 0 || lapsed.SpentUSD != 0.7 {
		t.Errorf("an hour later, with the last holder silent: %+v, want its reservation released", lapsed)
	}
}

// TestBudgetContinuesAsNewWithItsLedger: past its history bound the workflow continues as new, carrying the ledger
// (spend, reservations, leases, limits) whole.
func TestBudgetContinuesAsNewWithItsLedger(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(Budget, workflow.RegisterOptions{Name: BudgetName})
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(api.BudgetLimitsSignal, limiter.Limits{SpendUSD: 5})
	}, time.Second)
	for i := range 20 {
		env.RegisterDelayedCallback(func() {
			id := fmt.Sprintf("c%d", i)
			sendSync(env, fmt.Sprint("u", i), limiter.Sync{Holder: "h", Held: []string{id},
				Asks:    []limiter.Ask{{ID: id, Provider: "openai", USD: 0.2, Priced: true}},
				Settles: []limiter.Settle{{ID: fmt.Sprintf("c%d", i-1), USD: 0.1, Sent: true}}})
		}, time.Duration(2+i)*time.Second)
	}
	env.RegisterDelayedCallback(func() {
		env.SetCurrentHistoryLength(41) // the test environment counts no events
		sendSync(env, "renew", limiter.Sync{Holder: "h", Held: []string{"c19"}, Renew: true})
	}, 25*time.Second)
	env.ExecuteWorkflow(Budget, BudgetInput{Run: "r", MaxHistory: 40})
	var can *workflow.ContinueAsNewError
	if err := env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("the workflow ended with %v, want it to continue as new", err)
	}
	var next BudgetInput
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
		t.Fatal(err)
	}
	l := next.Ledger
	if l.Limits.SpendUSD != 5 || l.Calls == 0 || len(l.Held) != 1 || l.Holders["h"].Lease.IsZero() ||
		next.MaxHistory != 40 {
		t.Errorf("carried %+v", next)
	}
	if want := 0.1 * float64(l.Calls); l.SpentUSD < want-1e-9 || l.SpentUSD > want+1e-9 {
		t.Errorf("carried $%v spent in %d calls", l.SpentUSD, l.Calls)
	}
}
