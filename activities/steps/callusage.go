package steps

import (
	"maps"
	"sync"

	"ctxlab/activities/api"
	"ctxlab/specs"
)

// CallUsage is what one attempt of a node's model calls used and bought, as row fields (specs.UsageFields), so that
// a failed step's rows still count what it paid (api.CallUsage says how each part is counted). The adapter's
// heartbeats read it while the step adds to it.
type CallUsage struct {
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
func (c *CallUsage) answer(row map[string]any, paid, noCache bool) {
	if c == nil { // a job made without an Attempt (a test's) keeps no usage
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	addUsage(&c.answered, row)
	c.unreplayable = c.unreplayable || paid && noCache
}

// answeredBefore records what earlier activities of the node used (an agent's turns before this one), which the
// node's rows count if this attempt fails it.
func (c *CallUsage) answeredBefore(row map[string]any) {
	if c == nil { // a job made without an Attempt (a test's) keeps no usage
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.before = nil
	addUsage(&c.before, row)
}

// bill records a call that was billed without giving an answer.
func (c *CallUsage) bill(row map[string]any) {
	if c == nil { // a job made without an Attempt (a test's) keeps no usage
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	addUsage(&c.billed, row)
}

// Carry takes the Spent an earlier attempt of the same activity left (its last heartbeat's details).
func (c *CallUsage) Carry(spent map[string]float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.carried = spent
}

// Spent is the usage no later attempt gets back: the earlier attempts', this one's billed calls and, when a later
// attempt must pay for them again, this one's answers. A heartbeat carries it to the next attempt (nil: none).
func (c *CallUsage) Spent() map[string]float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.unreplayable {
		return sumUsage(c.carried, c.billed, c.answered)
	}
	return sumUsage(c.carried, c.billed)
}

// Failed is what a failed attempt's error carries (Error.Usage): its answers apart, which the failed step's rows
// count once as the answers a successful attempt's rows would; nil when its calls used nothing.
func (c *CallUsage) Failed() *api.CallUsage {
	c.mu.Lock()
	defer c.mu.Unlock()
	u := api.CallUsage{Spent: sumUsage(c.carried, c.billed), Answered: sumUsage(c.answered, c.before)}
	if u.Spent == nil && u.Answered == nil {
		return nil
	}
	return &u
}

// AddSpentTo adds what the activity's attempts spent without an answer (the earlier attempts', this one's billed
// calls) to a successful attempt's row fragment, whose own fields count the answers it used.
func (c *CallUsage) AddSpentTo(row map[string]any) map[string]any {
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

// WithUsage gives a failed attempt's error the usage of its calls (Error.Usage), when they used anything; an
// error that is not an Error keeps its text and carries none.
func WithUsage(err error, u *api.CallUsage) error {
	se, ok := err.(*Error)
	if !ok || u == nil {
		return err
	}
	withUsage := *se
	withUsage.Usage = u
	return &withUsage
}
