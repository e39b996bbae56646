package llm

import (
	"context"
	"sync"
)

// A llama.cpp server's slots share one KV cache (kv_unified, llama-server's default since it serves 4 slots
// unasked): each slot may use up to the context /props reports (default_generation_settings.n_ctx, at most the
// model's training context), but all of them together only what `llama-server -c N` gave the cache, which the server
// does not report. `llama-server -c 4096` serving stories260K has 4 slots of 2048 tokens sharing 4096. When the
// requests in flight together fill the cache, the server fails every one of them with HTTP 500 "Context size has
// been exceeded." (errkind.ContextCapacity), although each fits its slot, and would succeed alone.
//
// A sharedContext gates one process's calls to one endpoint so that this cannot repeat: each call reserves what it
// may use (its prompt, counted by the server, and the max_tokens it sends) while it is in flight. Until the server
// first fails that way there is no limit (a server whose slots do not share, or whose cache holds them all, never
// does). A failure teaches the limit: the cache holds fewer tokens than were reserved at the time and at least a
// slot, so from then on calls are let in only while what they reserve together stays below halfway between the two,
// and a call is always let in alone (its reservation fits its slot, and the cache holds at least a slot). The failed calls are asked again at once; the
// limit only falls, so they are asked again a bounded number of times.
type sharedContext struct {
	mu    sync.Mutex
	wake  chan struct{} // closed, and replaced, when a reservation ends or the limit changes
	used  int           // tokens reserved by the calls in flight
	calls map[*reservation]struct{}
	limit int // the most tokens the calls in flight may reserve together; 0: none learned
}

// reservation is one call's hold on a sharedContext.
type reservation struct {
	tokens int // what the call may use: its prompt and its max_tokens
	peak   int // the most tokens reserved together while the call was in flight, its own included
}

var sharedContexts sync.Map // base URL -> *sharedContext

// sharedContextOf is the gate of calls to the endpoint at base, one per process.
func sharedContextOf(base string) *sharedContext {
	g, _ := sharedContexts.LoadOrStore(base, &sharedContext{wake: make(chan struct{}),
		calls: map[*reservation]struct{}{}})
	return g.(*sharedContext)
}

// acquire waits until the call's tokens fit beside the calls in flight (at once when no limit is known, or when
// none is in flight) and reserves them.
func (g *sharedContext) acquire(ctx context.Context, tokens int) (*reservation, error) {
	for {
		g.mu.Lock()
		if len(g.calls) == 0 || g.limit == 0 || g.used+tokens <= g.limit {
			r := &reservation{tokens: tokens}
			g.calls[r] = struct{}{}
			g.used += tokens
			for c := range g.calls {
				c.peak = max(c.peak, g.used)
			}
			g.mu.Unlock()
			return r, nil
		}
		wake := g.wake
		g.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-wake:
		}
	}
}

// release ends a reservation.
func (g *sharedContext) release(r *reservation) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.calls[r]; !ok {
		return
	}
	delete(g.calls, r)
	g.used -= r.tokens
	g.signal()
}

func (g *sharedContext) signal() {
	close(g.wake)
	g.wake = make(chan struct{})
}

// exceeded records that the server failed the call of r with errkind.ContextCapacity, and reports whether asking again
// is sure to be admitted with fewer tokens beside it than when it failed: the limit is now below the tokens reserved
// together at the time (halfway down to slot, never below slot, the context a single call may use, which the cache holds). False when the
// call's failure cannot be the gated calls' doing (it was alone, or the reservations already fitted a slot): then
// something else fills the server (another client), and the call is retried as an outage is.
func (g *sharedContext) exceeded(r *reservation, slot int) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if r.peak <= slot || r.peak <= r.tokens {
		return false
	}
	// The cache holds fewer than peak tokens and at least a slot: the limit goes halfway down to the slot, so a
	// few failures find it (one step of a token at a time would take a failure per step), at the price of leaving
	// part of the cache unused.
	if limit := max(slot, (r.peak+slot)/2); g.limit == 0 || limit < g.limit {
		g.limit = limit
		g.signal()
	}
	return g.limit < r.peak
}

// learned is the limit learned so far (0: none).
func (g *sharedContext) learned() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.limit
}
