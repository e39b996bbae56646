package limiter

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Transport carries a holder's syncs to its run's ledger: an Update of the run's budget workflow (package
// activities), or a ledger in this process (Local).
type Transport interface {
	Sync(ctx context.Context, s Sync) (Reply, error)
}

// ErrQuiet is what a Transport returns when the ledger refused a sync that would change nothing (Ledger.Quiet):
// every ask in it waits.
var ErrQuiet = errors.New("every call asking waits for calls in flight")

// ErrMoving is what a Transport returns when the ledger's workflow is moving to a new run (continue-as-new): the
// sync goes again at once.
var ErrMoving = errors.New("the budget is moving to a new run")

// Timings of a purse.
var (
	// pollWait is how long asks that wait are held before they are asked again (a settlement of this process asks
	// at once); jitter keeps the holders of a run from asking together.
	pollWait = 100 * time.Millisecond
	// giveUp is how long an ask waits for the ledger to answer at all before it fails: the call's activity fails
	// (and is retried by Temporal) instead of waiting silently for a budget workflow that is not there.
	giveUp = 2 * time.Minute
	// fresh is how long the limits a purse learned are trusted for calls that go without asking (no cap, or on the
	// allowance): a limit set or changed reaches every worker within it, or at its next sync.
	fresh = 2 * time.Second
	// idleReturn is how long a purse keeps its allowance with no call in flight before it gives it back.
	idleReturn = time.Second
	// syncTimeout bounds one sync.
	syncTimeout = time.Minute
)

// extraCalls is how many more calls' worst cases a purse asks for beside what a call needs, when its allowance
// runs short: the next calls then go without asking. The ledger grants at most a quarter of the room left.
const extraCalls = 3

// Purse is one worker process's door to a run's ledger: its paid calls go through it. A call to a provider with
// in_flight or rps limits asks the ledger for a reservation of its own. Any other call goes without asking: under
// no cap, and under a cap on the purse's allowance, money the ledger set aside for this process, from which each
// call reserves its worst case until it settles; the purse asks for more when a call does not fit, and gives back
// what it holds when it is idle or another call waits. Settlements are sent after the call returns, with the next
// sync. One sync is in flight at a time, however many calls the process makes (Temporal bounds the updates in
// flight per workflow). While it holds anything it syncs at least every RenewEvery, which renews its lease: when
// it dies what it held lapses LeaseTTL after its last sync.
type Purse struct {
	transport Transport
	holder    string

	mu      sync.Mutex
	seq     int   // call IDs
	syncSeq int64 // syncs
	asks    []*asking
	settles []Settle // not yet sent
	held    map[string]bool
	// limits are those of the last reply, at learned; hellos wait for the reply to a sync sent after they asked.
	limits  Limits
	learned time.Time
	hellos  []hello
	// lastErr is why the last sync did not reach the ledger (nil once one did).
	lastErr error
	// pool is the allowance, local the worst cases of the calls in flight on it (or, with no cap, without a
	// reservation), calls how many; idle is since when none is; giveBack asks the next sync to return what no call
	// holds.
	pool     float64
	local    float64
	calls    int
	idle     time.Time
	giveBack bool
	// pending is a sync whose outcome is not known (the transport failed): it is sent again as it is.
	pending *Sync
	running bool // a sync loop runs
	kick    chan struct{}
	renewed time.Time // the last sync the ledger took
}

// hello waits for the limits of a sync numbered above after.
type hello struct {
	after int64
	done  chan struct{}
}

// asking is an ask waiting for its verdict.
type asking struct {
	ask   Ask
	since time.Time
	done  chan askResult // buffered: the loop never blocks on it
}

type askResult struct {
	ans Answer
	err error
}

// NewPurse returns the purse of holder (a name no other process of the run uses) over t.
func NewPurse(t Transport, holder string) *Purse {
	return &Purse{transport: t, holder: holder, held: map[string]bool{}, kick: make(chan struct{}, 1)}
}

// Admit lets a paid call to provider go: it waits while calls in flight hold what the call may need, and while
// its provider's in_flight or rps limit holds it back, and fails with a *CapError when the call's worst case does
// not fit beside the spend so far. worst computes the worst case; it is called only when the run has a cap. The
// call's settle, which the caller must call once the call ended, gives the ledger what the call cost (sent:
// whether it went to the endpoint).
func (p *Purse) Admit(ctx context.Context, at Attempt, provider string, worst func() float64) (
	settle func(costUSD float64, sent bool), err error) {
	lim, err := p.freshLimits(ctx)
	if err != nil {
		return nil, err
	}
	if lim.paced(provider) {
		return p.admitOwn(ctx, at, provider, lim.SpendUSD > 0, worst)
	}
	w := 0.0
	if lim.SpendUSD > 0 {
		w = usd(worst())
	}
	for {
		p.mu.Lock()
		if lim.SpendUSD <= 0 || p.local+w <= p.pool {
			p.local += w
			p.calls++
			id := p.nextID()
			p.mu.Unlock()
			return func(costUSD float64, sent bool) { p.settlePool(id, w, costUSD, sent) }, nil
		}
		a := Ask{ID: p.nextID(), Attempt: at, Provider: provider, USD: w, Priced: true, ForPool: true}
		p.mu.Unlock()
		ans, err := p.ask(ctx, a)
		if err != nil {
			return nil, err
		}
		if ans.Verdict == VerdictCapped {
			return nil, &CapError{Spent: ans.Spent, Need: w, Cap: ans.Cap}
		}
		// Granted: the allowance grew; the call takes its worst case out of it (or asks again, when other calls
		// took it first). Under the limits of the reply: a cap removed since the purse learned it sets nothing
		// aside, and the call goes.
		p.mu.Lock()
		lim = p.limits
		p.mu.Unlock()
	}
}

// nextID names a call; p.mu is held.
func (p *Purse) nextID() string {
	p.seq++
	return p.holder + "-" + strconv.Itoa(p.seq)
}

// freshLimits returns the run's limits, asking the ledger when the purse learned them more than fresh ago.
func (p *Purse) freshLimits(ctx context.Context) (Limits, error) {
	p.mu.Lock()
	if time.Since(p.learned) < fresh {
		defer p.mu.Unlock()
		return p.limits, nil
	}
	p.mu.Unlock()
	return p.Learn(ctx)
}

// Learn asks the ledger for the run's limits, in a sync sent after it was called (so that limits set before it
// are among them), and returns them: a starter's handshake asks what an llm worker's calls will be held to.
func (p *Purse) Learn(ctx context.Context) (Limits, error) {
	p.mu.Lock()
	h := hello{after: p.syncSeq, done: make(chan struct{})}
	p.hellos = append(p.hellos, h)
	p.wake()
	p.mu.Unlock()
	t := time.NewTimer(giveUp)
	defer t.Stop()
	select {
	case <-h.done:
	case <-ctx.Done():
		return Limits{}, p.unanswered(ctx.Err())
	case <-t.C:
		return Limits{}, p.unanswered(fmt.Errorf("the run's budget did not answer for %v", giveUp))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.limits, nil
}

// unanswered is err with why the last sync failed, when one did.
func (p *Purse) unanswered(err error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.lastErr != nil {
		return fmt.Errorf("%w (the last sync: %v)", err, p.lastErr)
	}
	return err
}

// admitOwn asks for a reservation of the call's own: its provider has in_flight or rps limits.
func (p *Purse) admitOwn(ctx context.Context, at Attempt, provider string, priced bool, worst func() float64) (
	func(float64, bool), error) {
	p.mu.Lock()
	a := Ask{ID: p.nextID(), Attempt: at, Provider: provider}
	p.mu.Unlock()
	for {
		if priced && !a.Priced {
			a.USD, a.Priced = usd(worst()), true
		}
		ans, err := p.ask(ctx, a)
		if err != nil {
			return nil, err
		}
		switch ans.Verdict {
		case VerdictCapped:
			return nil, &CapError{Spent: ans.Spent, Need: a.USD, Cap: ans.Cap}
		case VerdictPrice:
			priced = true
			continue
		}
		if ans.Delay > 0 {
			t := time.NewTimer(ans.Delay)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				p.queueSettle(Settle{ID: a.ID})
				return nil, ctx.Err()
			}
		}
		return func(costUSD float64, sent bool) {
			p.queueSettle(Settle{ID: a.ID, USD: costUSD, Sent: sent})
		}, nil
	}
}

// ask waits for an ask's verdict: granted, capped or price (a wait is asked again).
func (p *Purse) ask(ctx context.Context, a Ask) (Answer, error) {
	w := &asking{ask: a, since: time.Now(), done: make(chan askResult, 1)}
	p.mu.Lock()
	p.asks = append(p.asks, w)
	p.wake()
	p.mu.Unlock()
	select {
	case r := <-w.done:
		return r.ans, r.err
	case <-ctx.Done():
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if i := slices.Index(p.asks, w); i >= 0 {
		// A sync on its way may still grant it: the loop releases a grant nobody waits for.
		p.asks = slices.Delete(p.asks, i, i+1)
		return Answer{}, ctx.Err()
	}
	if r := <-w.done; r.err == nil && r.ans.Verdict == VerdictGranted && !a.ForPool {
		p.settles = append(p.settles, Settle{ID: a.ID})
		delete(p.held, a.ID)
		p.wake()
	}
	return Answer{}, ctx.Err()
}

// settlePool ends a call that went on the allowance (or with no cap): its worst case no longer held, its cost
// paid out of the allowance; the ledger learns it with the next sync.
func (p *Purse) settlePool(id string, worst, costUSD float64, sent bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.local = max(0, p.local-worst)
	p.pool = max(0, p.pool-usd(costUSD))
	if p.calls--; p.calls == 0 {
		p.idle = time.Now()
	}
	p.settles = append(p.settles, Settle{ID: id, USD: costUSD, Sent: sent, Pool: true})
	p.wake()
}

// queueSettle queues the settlement of a call with a reservation of its own.
func (p *Purse) queueSettle(st Settle) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.held, st.ID)
	p.settles = append(p.settles, st)
	p.wake()
}

// Flush waits until the ledger has taken every settlement made so far (or ctx ends): before a worker stops.
func (p *Purse) Flush(ctx context.Context) error {
	for {
		p.mu.Lock()
		done := len(p.settles) == 0 && p.pending == nil
		p.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// wake starts the sync loop or tells it there is news; p.mu is held.
func (p *Purse) wake() {
	if !p.running {
		p.running = true
		go p.loop()
		return
	}
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// loop syncs until the purse has nothing to ask, settle, learn or hold.
func (p *Purse) loop() {
	backoff := 10 * time.Millisecond
	for {
		s, wait, ok := p.next()
		if !ok {
			return
		}
		if wait > 0 {
			p.sleep(wait)
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), syncTimeout)
		rep, err := p.transport.Sync(ctx, s)
		cancel()
		switch {
		case errors.Is(err, ErrQuiet): // not taken, and it held nothing but asks
			p.dropPending()
			p.sleep(jitter(pollWait))
		case err != nil: // sent again as it is: it may have been taken
			p.failed(err)
			p.sleep(jitter(backoff))
			backoff = min(2*backoff, 2*time.Second)
			if errors.Is(err, ErrMoving) {
				backoff = 10 * time.Millisecond
			}
		default:
			backoff = 10 * time.Millisecond
			if p.took(s, rep) {
				p.sleep(jitter(pollWait))
			}
		}
	}
}

// next is the sync to send: the one whose outcome is not known, or a new one with every ask waiting, every
// settlement not yet sent and what to give back. wait > 0 says there is nothing to send before then (an allowance
// to give back, a lease to renew); ok false that the loop may end.
func (p *Purse) next() (s Sync, wait time.Duration, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pending != nil {
		return *p.pending, 0, true
	}
	s = Sync{Holder: p.holder, Held: slices.Sorted(maps.Keys(p.held)), Settles: p.settles, InFlight: p.calls,
		Renew: len(p.hellos) > 0}
	idle := p.calls == 0 && len(p.asks) == 0 && !p.idle.IsZero()
	if p.pool > p.local && (p.giveBack || idle && time.Since(p.idle) >= idleReturn) {
		s.Return = p.pool - p.local
	}
	// What the allowance does not cover of each call asking for it, in order; the first asks for extra calls'
	// worth too.
	free, extra := max(0, p.pool-p.local-s.Return), true
	for _, w := range p.asks {
		a := w.ask
		if a.ForPool {
			a.Need = max(0, a.USD-free)
			if extra {
				a.Extra, extra = extraCalls*a.USD, false
			}
			free = max(0, free-a.USD)
		}
		s.Asks = append(s.Asks, a)
	}
	holding := len(p.held) > 0 || p.pool > 0
	due := time.Until(p.renewed.Add(RenewEvery))
	switch {
	case len(s.Asks) > 0 || len(s.Settles) > 0 || s.Return > 0 || s.Renew:
	case holding && due <= 0:
		s.Renew = true
	case holding && idle && p.pool > p.local:
		return s, min(due, time.Until(p.idle.Add(idleReturn))), true
	case holding:
		return s, due, true
	default:
		p.running = false
		return s, 0, false
	}
	p.syncSeq++
	s.Seq = p.syncSeq
	p.settles = nil
	p.pool -= s.Return
	p.giveBack = false
	p.pending = &s
	return s, 0, true
}

// dropPending forgets a sync the ledger refused as quiet (it carried asks only, which the next sync asks again).
func (p *Purse) dropPending() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pending = nil
}

// took applies the reply to sync s: the limits learned, the allowance as the ledger holds it, verdicts handed to
// their asks. It reports whether asks still wait.
func (p *Purse) took(s Sync, rep Reply) (waiting bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pending = nil
	p.renewed, p.learned, p.limits, p.lastErr = time.Now(), time.Now(), rep.Status.Limits, nil
	p.hellos = slices.DeleteFunc(p.hellos, func(h hello) bool {
		if s.Seq > h.after {
			close(h.done)
			return true
		}
		return false
	})
	// The ledger's allowance, less what calls settled since s was made have paid out of it (sent with the next).
	p.pool = rep.Pool
	for _, st := range p.settles {
		if st.Pool {
			p.pool = max(0, p.pool-usd(st.USD))
		}
	}
	for _, ans := range rep.Answers {
		i := slices.IndexFunc(p.asks, func(w *asking) bool { return w.ask.ID == ans.ID })
		switch {
		case i < 0 && ans.Verdict == VerdictGranted && !isPoolAsk(s, ans.ID): // its asker gave up
			p.settles = append(p.settles, Settle{ID: ans.ID})
		case i < 0:
		case ans.Verdict == VerdictWait:
			waiting = true
			p.giveBack = p.giveBack || p.asks[i].ask.ForPool // let others have what this purse does not use
		default:
			switch {
			case ans.Verdict != VerdictGranted:
			case p.asks[i].ask.ForPool:
				p.idle = time.Now() // its call takes it now: not an idle allowance to give back
			default:
				p.held[ans.ID] = true
			}
			p.asks[i].done <- askResult{ans: ans}
			p.asks = slices.Delete(p.asks, i, i+1)
		}
	}
	return waiting
}

func isPoolAsk(s Sync, id string) bool {
	return slices.ContainsFunc(s.Asks, func(a Ask) bool { return a.ID == id && a.ForPool })
}

// failed notes why a sync did not reach the ledger, and fails the asks that have waited past giveUp.
func (p *Purse) failed(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lastErr = err
	p.asks = slices.DeleteFunc(p.asks, func(w *asking) bool {
		if time.Since(w.since) < giveUp {
			return false
		}
		w.done <- askResult{err: fmt.Errorf("the run's budget did not answer for %v: %w", giveUp, err)}
		return true
	})
}

// sleep waits d, or less when the purse has news.
func (p *Purse) sleep(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-p.kick:
	}
}

func jitter(d time.Duration) time.Duration { return d/2 + rand.N(d) }

// Local is a ledger in this process behind a Transport: for steps run outside a worker (tests), which have no
// budget workflow. Every purse over one Local shares its ledger, as every worker of a run shares the workflow's.
type Local struct {
	mu     sync.Mutex
	ledger Ledger
}

// SetLimits sets the ledger's limits (what the starter's signal does to the budget workflow).
func (l *Local) SetLimits(lim Limits) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ledger.SetLimits(lim)
}

// Status returns what the ledger holds.
func (l *Local) Status() Status {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ledger.Status()
}

// Sync applies a sync to the ledger, as the budget workflow's update does.
func (l *Local) Sync(_ context.Context, s Sync) (Reply, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	l.ledger.Expire(now)
	if l.ledger.Quiet(s) {
		return Reply{}, ErrQuiet
	}
	return l.ledger.Apply(s, now), nil
}
