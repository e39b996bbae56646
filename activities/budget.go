package activities

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"sync"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"ctxlab/activities/api"
	"ctxlab/activities/limiter"
	"ctxlab/activities/steps"
)

// budgets are this process's purses, one per run: their syncs go to the run's budget workflow through the client
// of the workers the activities run in (UseTemporal). Activities with no such client (tests that run steps
// without a worker) keep each run's ledger themselves (localBudget).
type budgets struct {
	once   sync.Once
	holder string
	mu     sync.Mutex
	c      client.Client
	purses map[string]*limiter.Purse
	local  map[string]*limiter.Local
}

// UseTemporal makes the activities' paid calls ask and settle through the budget workflows of the Temporal
// service c serves: wiring.Start calls it with the client its workers poll with and their identity, which names
// this process's purses in the ledgers (as the starter's handshake names the worker).
func (a *Activities) UseTemporal(c client.Client, identity string) {
	a.budgets.mu.Lock()
	defer a.budgets.mu.Unlock()
	a.budgets.c = c
	a.budgets.once.Do(func() { a.budgets.holder = identity })
}

// BudgetLimits asks the run's budget for the limits this process's paid calls are held to (limiter.Purse.Learn).
func (a *Activities) BudgetLimits(ctx context.Context, run string) (limiter.Limits, error) {
	return a.budgets.purse(run).Learn(ctx)
}

// holderName names the purses of Activities with no worker identity (UseTemporal): its host, its pid and a random
// part, so that two Activities of one process (tests) are two holders too.
func holderName() string {
	host, _ := os.Hostname()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s:%d:%s", host, os.Getpid(), hex.EncodeToString(b))
}

// purse returns the purse of a run.
func (b *budgets) purse(run string) *limiter.Purse {
	b.once.Do(func() { b.holder = holderName() })
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.purses == nil {
		b.purses = map[string]*limiter.Purse{}
	}
	if p, ok := b.purses[run]; ok {
		return p
	}
	var t limiter.Transport = budgetTransport{c: b.c, run: run}
	if b.c == nil {
		t = b.localLocked(run)
	}
	p := limiter.NewPurse(t, b.holder)
	b.purses[run] = p
	return p
}

// FlushBudgets waits until every settlement this process's calls made has reached its run's budget (or ctx ends):
// before the process stops, so that the spend counts them.
func (a *Activities) FlushBudgets(ctx context.Context) error {
	a.budgets.mu.Lock()
	purses := slices.Collect(maps.Values(a.budgets.purses))
	a.budgets.mu.Unlock()
	for _, p := range purses {
		if err := p.Flush(ctx); err != nil {
			return err
		}
	}
	return nil
}

// localBudget is the ledger of a run for steps run outside a worker.
func (b *budgets) localBudget(run string) *limiter.Local {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.localLocked(run)
}

func (b *budgets) localLocked(run string) *limiter.Local {
	if b.local == nil {
		b.local = map[string]*limiter.Local{}
	}
	l, ok := b.local[run]
	if !ok {
		l = &limiter.Local{}
		b.local[run] = l
	}
	return l
}

// budget is what the step of a node's attempt admits its paid calls through: the run's purse, for this attempt
// (a later attempt of the activity releases what this one held).
func (a *Activities) budget(ctx context.Context, in api.NodeInput) steps.Budget {
	var at limiter.Attempt
	if activity.IsActivity(ctx) {
		info := activity.GetInfo(ctx)
		at = limiter.Attempt{Workflow: info.WorkflowExecution.ID, Activity: info.ActivityID, Number: info.Attempt}
	}
	return attemptBudget{purse: a.budgets.purse(in.Run), at: at}
}

// attemptBudget is a run's purse for one activity attempt.
type attemptBudget struct {
	purse *limiter.Purse
	at    limiter.Attempt
}

func (b attemptBudget) Admit(ctx context.Context, provider string, worst func() float64) (func(float64, bool), error) {
	return b.purse.Admit(ctx, b.at, provider, worst)
}

// budgetTransport syncs a purse with its run's budget workflow through an update.
type budgetTransport struct {
	c   client.Client
	run string
}

func (t budgetTransport) Sync(ctx context.Context, s limiter.Sync) (limiter.Reply, error) {
	var rep limiter.Reply
	h, err := t.c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: api.BudgetWorkflowID(t.run),
		UpdateName: api.BudgetSyncUpdate, Args: []any{s}, WaitForStage: client.WorkflowUpdateStageCompleted})
	if err == nil {
		err = h.Get(ctx, &rep)
	}
	var app *temporal.ApplicationError
	var nf *serviceerror.NotFound
	switch {
	case errors.As(err, &app) && app.Type() == api.ErrBudgetQuiet:
		return rep, limiter.ErrQuiet
	case errors.As(err, &app) && app.Type() == api.ErrBudgetMoving:
		return rep, limiter.ErrMoving
	case errors.As(err, &nf):
		return rep, fmt.Errorf("no budget workflow %s (starter run starts it with the run's limits): %w",
			api.BudgetWorkflowID(t.run), err)
	case err != nil:
		return rep, fmt.Errorf("budget workflow %s: %w", api.BudgetWorkflowID(t.run), err)
	}
	return rep, nil
}
