package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"ctxlab/activities/api"
	"ctxlab/activities/limiter"
)

// BudgetName is the registered type name of the Budget workflow.
const BudgetName = "Budget"

// DefaultBudgetHistory is the history length past which a Budget workflow continues as new. Each sync it takes
// adds about five events (a workflow task's three and the update's two, fewer when syncs share a task), and Temporal
// takes at most 2,000 updates per run.
const DefaultBudgetHistory = 2000

// BudgetInput starts (or continues) a run's budget: its ledger, which a continued run carries.
type BudgetInput struct {
	Run    string         `json:"run"`
	Ledger limiter.Ledger `json:"ledger"`
	// MaxHistory overrides DefaultBudgetHistory (tests make it small).
	MaxHistory int `json:"max_history,omitempty"`
}

// Budget holds a run's spend cap and provider limits for every worker of the run, wherever it runs: each worker
// process's purse syncs with it (api.BudgetSyncUpdate) to set aside paid calls' worst cases (an allowance of the
// process, or a reservation of a call's own for a provider with in_flight or rps limits) and to settle what they
// cost; the starter sets the limits (api.BudgetLimitsSignal); `starter status` reads it (api.BudgetQuery). A
// holder that stops syncing (its process died) loses what it held when its lease lapses.
// It never ends by itself: a run's spend adds up over every starter run of it. It continues as new before its
// history grows long, carrying the ledger.
//
// Its commands must stay those of the saved histories (testdata/histories/budget-*.json): a change goes behind
// workflow.GetVersion.
func Budget(ctx workflow.Context, in BudgetInput) error {
	b := &budgetState{ctx: ctx, in: in, ledger: in.Ledger, maxHistory: in.MaxHistory,
		limits:      workflow.GetSignalChannel(ctx, api.BudgetLimitsSignal),
		limitsFirst: workflow.GetVersion(ctx, limitsFirstChange, workflow.DefaultVersion, 1) >= 1}
	if b.maxHistory <= 0 {
		b.maxHistory = DefaultBudgetHistory
	}
	if err := workflow.SetQueryHandler(ctx, api.BudgetQuery, func() (limiter.Status, error) {
		return b.ledger.Status(), nil
	}); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, api.BudgetSyncUpdate, b.sync,
		workflow.UpdateHandlerOptions{Validator: b.validate}); err != nil {
		return err
	}
	workflow.Go(ctx, b.receiveLimits)
	for !b.tooLong() {
		b.waitForExpiry()
		b.ledger.Expire(workflow.Now(ctx))
	}
	// Syncs that come now are refused as moving (their purses send them again to the next run); those accepted
	// finish first, and limits signalled and not yet taken go with the ledger.
	b.moving = true
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return err
	}
	b.takeLimits()
	next := b.in
	next.Ledger = b.ledger
	return workflow.NewContinueAsNewError(ctx, Budget, next)
}

// budgetState is one run of the Budget workflow.
type budgetState struct {
	ctx        workflow.Context
	in         BudgetInput
	ledger     limiter.Ledger
	maxHistory int
	moving     bool
	// limits are the starter's limits signals; limitsFirst says a sync takes those signalled before it first.
	limits      workflow.ReceiveChannel
	limitsFirst bool
}

// limitsFirstChange: a sync is decided under every limit signalled before it. Before it, a coroutine blocked
// receiving the signal held a new limit, and the SDK runs an update's handler before the other coroutines of its
// workflow task: a sync that came with a raised cap in one task (the starter raised it while no workflow worker
// ran the budget, as when it restarts the run's server) was capped at the cap it replaced, and the sweep paused
// again at once.
const limitsFirstChange = "limits-before-syncs"

// receiveLimits applies the limits signals as they come. Under limitsFirstChange it waits without receiving, so a
// signal stays in the channel, where a sync handled before this coroutine runs takes it (takeLimits).
func (b *budgetState) receiveLimits(ctx workflow.Context) {
	for {
		if b.limitsFirst {
			_ = workflow.Await(ctx, func() bool { return b.limits.Len() > 0 })
			b.takeLimits()
			continue
		}
		var l limiter.Limits
		b.limits.Receive(ctx, &l)
		b.ledger.SetLimits(l)
	}
}

// takeLimits applies every limits signal received and not yet applied, in order.
func (b *budgetState) takeLimits() {
	for {
		var l limiter.Limits
		if !b.limits.ReceiveAsync(&l) {
			return
		}
		b.ledger.SetLimits(l)
	}
}

// tooLong reports whether the history is long enough to continue as new.
func (b *budgetState) tooLong() bool {
	info := workflow.GetInfo(b.ctx)
	return info.GetCurrentHistoryLength() > b.maxHistory || info.GetContinueAsNewSuggested()
}

// waitForExpiry waits until the earliest lease can lapse (a lease renewed meanwhile only makes the wait end early),
// or, with no lease held, until one is; either wait ends when the history is too long.
func (b *budgetState) waitForExpiry() {
	next, ok := b.ledger.NextExpiry()
	if !ok {
		_ = workflow.Await(b.ctx, func() bool {
			_, leased := b.ledger.NextExpiry()
			return leased || b.tooLong()
		})
		return
	}
	// A millisecond past the deadline, so that the lease has lapsed when the timer fires; at least a second, so a
	// deadline already past cannot make a loop of timers.
	d := max(next.Sub(workflow.Now(b.ctx))+time.Millisecond, time.Second)
	_, _ = workflow.AwaitWithTimeout(b.ctx, d, b.tooLong)
}

// validate refuses a sync before it is accepted (it then leaves no event in the history) when it would change
// nothing, and while the workflow continues as new.
func (b *budgetState) validate(s limiter.Sync) error {
	if b.moving {
		return temporal.NewApplicationError("the budget continues as new", api.ErrBudgetMoving)
	}
	if b.limits.Len() == 0 && b.ledger.Quiet(s) { // limits not yet applied may let it through
		return temporal.NewApplicationError("every call asking waits", api.ErrBudgetQuiet)
	}
	return nil
}

// sync applies a holder's sync to the ledger, after releasing what lapsed leases held.
func (b *budgetState) sync(ctx workflow.Context, s limiter.Sync) (limiter.Reply, error) {
	if b.limitsFirst {
		b.takeLimits()
	}
	now := workflow.Now(ctx)
	b.ledger.Expire(now)
	return b.ledger.Apply(s, now), nil
}
