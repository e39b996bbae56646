package llm

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	"ctxlab/activities/api/errkind"
	"ctxlab/specs"
)

// attemptFunc makes one HTTP attempt: the answer, or the failure and the wait the endpoint asked for (0: none).
type attemptFunc func(ctx context.Context) (Response, *Error, time.Duration)

// retryLoop is one Complete's attempts, the one loop every provider's calls go through (New puts each client behind
// it): 429, 5xx, timeouts and broken answers are tried again (up to cfg.Attempts in all, with backoff or the
// endpoint's Retry-After), every other failure ends the call, what failed attempts were billed is added to the call's
// cost, and a server error that repeats unchanged is not waited out as an outage.
type retryLoop struct {
	cfg   Config
	model specs.Model
	req   Request // what every attempt sends: its answer's usage is held against it (checkUsage)
	// slots is the context an OpenAI-compatible server's slots share; nil for an API that has no slots.
	slots *slotGate
}

// slotGate is one call's place in a server's shared context (sharedContext), held while an attempt is in flight.
type slotGate struct {
	shared  *sharedContext // nil when the call's reserve is unknown: nothing is gated
	reserve int            // what the call may use: its prompt and its max_tokens
	slot    int            // the context a single call may use (Request.Context)
}

// maxCrowded bounds how often a call is asked again at once because the server's shared context was full
// (sharedContext): each time, fewer tokens are let in beside it, so a few suffice.
const maxCrowded = 32

// minRepeats is how many attempts in a row must fail with the same server error before it counts as deterministic
// (errkind.RepeatedError); with fewer attempts a call never concludes that.
const minRepeats = 3

// run makes the call's attempts with once until one answers or the failure is final.
func (r retryLoop) run(ctx context.Context, once attemptFunc) (Response, error) {
	var last *Error // the previous attempt's failure, for telling a deterministic server error from an outage
	repeats, crowded := 0, 0
	var paid Usage // billed by attempts whose answers were no use
	for attempt := 1; ; attempt++ {
		hold, gerr := r.slots.acquire(ctx)
		if gerr != nil {
			return Response{}, gerr
		}
		resp, cerr, retryAfter := once(ctx)
		if cerr == nil {
			if cerr = checkUsage(resp.Usage, r.req, resp.Text); cerr != nil {
				cerr.Status = http.StatusOK // an answer came: its usage is not money
			}
		}
		if cerr != nil {
			paid = paid.Add(cerr.Paid)
			cerr.Paid = paid
		} else if paid != (Usage{}) {
			// The earlier answers were paid for too: the call cost all of them.
			resp.Usage = resp.Usage.Add(paid)
			resp.CostUSD = Cost(resp.Usage, r.model.Price)
		}
		if r.slots.release(hold, cerr, crowded < maxCrowded) {
			// Not an attempt: nothing was wrong with the call or the endpoint.
			crowded++
			attempt--
			r.cfg.Log.Info().Str("model", r.model.ID).Str("task", r.req.Task).Int("reserved_tokens", r.slots.reserve).
				Int("shared_context_limit", r.slots.shared.learned()).
				Msg("the server's shared context was full; asking again with fewer calls beside this one")
			continue
		}
		if cerr == nil {
			r.cfg.Log.Debug().Str("model", r.model.ID).Str("task", r.req.Task).Int("attempt", attempt).
				Int(specs.PromptTokens.Name, resp.Usage.PromptTokens).Int(specs.CachedTokens.Name, resp.Usage.CachedTokens).
				Int(specs.CacheWriteTokens.Name, resp.Usage.CacheWriteTokens).
				Int(specs.CompletionTokens.Name, resp.Usage.CompletionTokens).Msg("model call")
			return resp, nil
		}
		if last != nil && cerr.Status == last.Status && cerr.Msg == last.Msg {
			repeats++
		} else {
			repeats = 0
		}
		last = cerr
		delay, final := r.next(ctx, cerr, attempt, repeats, retryAfter)
		if final || !r.sleep(ctx, cerr, delay) {
			return Response{}, cerr
		}
	}
}

// next is the wait before the attempt after a failed one, or final when the failure ends the call (cerr then says
// why, and is what the call returns): it cannot be retried, the attempts are used up, or the endpoint asked to wait
// longer than cfg.MaxDelay.
func (r retryLoop) next(ctx context.Context, cerr *Error, attempt, repeats int, retryAfter time.Duration) (
	delay time.Duration, final bool) {
	if !cerr.Kind.Retryable() || ctx.Err() != nil {
		return 0, true
	}
	if attempt >= r.cfg.Attempts {
		switch {
		case r.slots != nil && cerr.Kind == errkind.ContextCapacity:
			cerr.Msg += fmt.Sprintf(" (gave up after %d attempts: the server's slots share one context, and it "+
				"was full though this call's %d tokens fit a slot's %d and no more of ctxlab's calls were in "+
				"flight beside it than fit a slot: another client may be using the server; start it with a "+
				"larger -c, or fewer slots with -np)", attempt, r.slots.reserve, r.slots.slot)
		case attempt >= minRepeats && repeats == attempt-1 && deterministic(cerr.Status, cerr.typ, cerr.Msg, cerr.fromBody):
			// Not an outage: the server fails this request the same way every time. Waiting for it to heal would
			// wait hours for nothing; the row fails now (a re-run tries again).
			cerr.Kind = errkind.RepeatedError
			cerr.Msg += fmt.Sprintf(" (the same error for the same request %d times in a row: not an outage)", attempt)
		default:
			cerr.Msg += fmt.Sprintf(" (gave up after %d attempts)", attempt)
		}
		return 0, true
	}
	delay, ok := r.cfg.delay(attempt, retryAfter)
	if !ok {
		cerr.Msg += fmt.Sprintf(" (the endpoint asked to wait %s, longer than the %s this call waits)", retryAfter, r.cfg.MaxDelay)
		cerr.RetryAfter = retryAfter
		return 0, true
	}
	r.cfg.Log.Warn().Str("model", r.model.ID).Str("task", r.req.Task).Str("kind", string(cerr.Kind)).
		Int("status", cerr.Status).Int("attempt", attempt).Dur("delay", delay).Str("error", cerr.Msg).
		Msg("model call failed; retrying")
	return delay, false
}

// sleep waits delay before the next attempt; false when ctx ends first (cerr then says so).
func (r retryLoop) sleep(ctx context.Context, cerr *Error, delay time.Duration) bool {
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-ctx.Done():
		cerr.Msg += " (cancelled while waiting to retry)"
		cerr.Err = ctx.Err()
		return false
	case <-t.C:
		return true
	}
}

// delay returns the wait before the next attempt: the endpoint's Retry-After when it sent one, otherwise
// BaseDelay·2^(attempt-1) with equal jitter, capped at MaxDelay. ok is false when Retry-After exceeds MaxDelay.
func (c Config) delay(attempt int, retryAfter time.Duration) (time.Duration, bool) {
	if retryAfter > 0 {
		return retryAfter, retryAfter <= c.MaxDelay
	}
	d := c.BaseDelay
	for i := 1; i < attempt && d < c.MaxDelay; i++ {
		d *= 2
	}
	d = min(d, c.MaxDelay)
	if d <= 0 {
		return 0, true
	}
	half := d / 2
	return half + rand.N(d-half+1), true
}

// acquire waits until the call's tokens fit beside the calls in flight, and holds them (nil when nothing is gated).
func (g *slotGate) acquire(ctx context.Context) (*reservation, *Error) {
	if g == nil || g.shared == nil {
		return nil, nil
	}
	hold, err := g.shared.acquire(ctx, g.reserve)
	if err != nil {
		return nil, &Error{Kind: errkind.Timeout, Msg: "the call was cancelled while it waited for room in the " +
			"server's shared context", Err: err}
	}
	return hold, nil
}

// release ends the hold of an attempt that failed with cerr (nil: it answered), and reports whether the call is to
// be asked again at once, which it is at most maxCrowded times (mayAgain): the server's shared context ran out under
// the calls in flight, and with fewer beside it this one fits.
func (g *slotGate) release(hold *reservation, cerr *Error, mayAgain bool) bool {
	if hold == nil {
		return false
	}
	again := cerr != nil && cerr.Kind == errkind.ContextCapacity && mayAgain && g.shared.exceeded(hold, g.slot)
	g.shared.release(hold)
	return again
}
