package activities

import (
	"context"
	"errors"
	"maps"
	"sync"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"ctxlab/activities/api"
	"ctxlab/specs"
)

// ErrCallUsage is api.ErrCallUsage, the type of the cause that carries a failed node's model calls' usage.
const ErrCallUsage = api.ErrCallUsage

// callUsage is what one attempt of a node activity's model calls used and bought, as row fields (specs.UsageFields),
// so that a failed step's rows still count what it paid (api.CallUsage says how each part is counted). The
// heartbeat goroutine reads it while the step adds to it.
type callUsage struct {
	mu sync.Mutex
	// carried is the Spent of the activity's earlier attempts: their last heartbeat's details.
	carried map[string]float64
	// billed is this attempt's calls billed without an answer (llm.PaidOf).
	billed map[string]float64
	// answered is this attempt's answers, from the response cache (at their original price) or paid now.
	answered map[string]float64
	// unreplayable says answered was paid now with the response cache off: a later attempt pays for it again.
	unreplayable bool
	// before is what earlier activities of the same node used (an agent's earlier turns): counted only if this
	// attempt fails the node.
	before map[string]float64
}

// addUsage adds a call's usage row fields (usageRow's) to sum, making it when nil (and one with nothing but
// zeros adds nothing).
func addUsage(sum *map[string]float64, row map[string]any) {
	for _, f := range specs.UsageFields {
		v, ok := specs.FloatField(f.Name).Get(row)
		if !ok || v == 0 {
			continue
		}
		if *sum == nil {
			*sum = map[string]float64{}
		}
		(*sum)[f.Name] += v
	}
}

// sumUsage is the field-by-field sum of usages (nil when all are empty).
func sumUsage(parts ...map[string]float64) map[string]float64 {
	var out map[string]float64
	for _, p := range parts {
		for k, v := range p {
			if out == nil {
				out = map[string]float64{}
			}
			out[k] += v
		}
	}
	return out
}

// answer records a call's answer, its row fields as usageRow made them; paid says it was bought now.
func (c *callUsage) answer(row map[string]any, paid, noCache bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	addUsage(&c.answered, row)
	c.unreplayable = c.unreplayable || paid && noCache
}

// answeredBefore records what earlier activities of the node used (an agent's turns before this one), which the
// node's rows count if this attempt fails it.
func (c *callUsage) answeredBefore(row map[string]any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.before = nil
	addUsage(&c.before, row)
}

// bill records a call that was billed without giving an answer.
func (c *callUsage) bill(row map[string]any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	addUsage(&c.billed, row)
}

// spent is the usage no later attempt gets back: the earlier attempts', this one's billed calls and, when a later
// attempt must pay for them again, this one's answers. A heartbeat carries it to the next attempt.
func (c *callUsage) spent() map[string]float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.unreplayable {
		return sumUsage(c.carried, c.billed, c.answered)
	}
	return sumUsage(c.carried, c.billed)
}

// failed is the CallUsage a failed attempt's error carries: its answers apart, which the failed step's rows count
// once as the answers a successful attempt's rows would.
func (c *callUsage) failed() api.CallUsage {
	c.mu.Lock()
	defer c.mu.Unlock()
	return api.CallUsage{Spent: sumUsage(c.carried, c.billed), Answered: sumUsage(c.answered, c.before)}
}

// heartbeatDetails are what a heartbeat of the attempt records: its spent, for the next attempt (nil when none).
func (c *callUsage) heartbeatDetails() []any {
	if s := c.spent(); s != nil {
		return []any{api.CallUsage{Spent: s}}
	}
	return nil
}

// carryFromEarlierAttempts takes the Spent an earlier attempt of this activity left in its heartbeat details.
func (c *callUsage) carryFromEarlierAttempts(ctx context.Context) {
	if !activity.IsActivity(ctx) || !activity.HasHeartbeatDetails(ctx) {
		return
	}
	var u api.CallUsage
	if activity.GetHeartbeatDetails(ctx, &u) == nil {
		c.mu.Lock()
		c.carried = u.Spent
		c.mu.Unlock()
	}
}

// addSpentTo adds what the activity's attempts spent without an answer (the earlier attempts', this one's billed
// calls) to a successful attempt's row fragment, whose own fields count the answers it used.
func (c *callUsage) addSpentTo(row map[string]any) map[string]any {
	c.mu.Lock()
	extra := sumUsage(c.carried, c.billed)
	c.mu.Unlock()
	if extra == nil {
		return row
	}
	out := maps.Clone(row)
	if out == nil {
		out = map[string]any{}
	}
	for _, f := range specs.UsageFields {
		v, ok := extra[f.Name]
		if !ok {
			continue
		}
		old, _ := specs.FloatField(f.Name).Get(out)
		if f.Kind == specs.KindInt {
			out[f.Name] = int(old + v)
		} else {
			out[f.Name] = old + v
		}
	}
	return out
}

// withCallUsage gives a failed attempt's error, an application error, the attempt's CallUsage as the detail of an
// ErrCallUsage cause, when its calls used anything; the error keeps its message, type, retryability and details
// (api.ProviderWait), so the workflows read it as before. Its last heartbeat hands the spent to the next attempt.
func (c *callUsage) withCallUsage(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if d := c.heartbeatDetails(); d != nil && activity.IsActivity(ctx) {
		activity.RecordHeartbeat(ctx, d...) // flushed before the failure is reported, whatever the failure
	}
	app, ok := err.(*temporal.ApplicationError)
	if !ok {
		return err // a wrapped one keeps its wrapper's text; such errors carry no usage
	}
	u := c.failed()
	if u.Spent == nil && u.Answered == nil {
		return err
	}
	var details []any
	if app.Type() == api.ErrProviderWait {
		var w api.ProviderWait
		if app.Details(&w) == nil {
			details = append(details, w)
		}
	}
	cause := temporal.NewApplicationErrorWithOptions("the step's model calls' usage", ErrCallUsage,
		temporal.ApplicationErrorOptions{NonRetryable: true, Details: []any{u}, Cause: errors.Unwrap(app)})
	return temporal.NewApplicationErrorWithOptions(app.Message(), app.Type(), temporal.ApplicationErrorOptions{
		NonRetryable: app.NonRetryable(), Details: details, Cause: cause, NextRetryDelay: app.NextRetryDelay()})
}
