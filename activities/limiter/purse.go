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

// Timings of a purse's syncs.
var (
	// pollWait is how long asks that wait are held before they are asked again (a settlement of this process asks
	// at once); jitter keeps the holders of a run from asking together.
	pollWait = 100 * time.Millisecond
	// giveUp is how long an ask waits for the ledger to answer at all before it fails: the call's activity fails
	// (and is retried by Temporal) instead of waiting silently for a budget workflow that is not there.
	giveUp = 2 * time.Minute
	// settleWait is how long a settling call waits for the ledger to count it before its step goes on; the
	// settlement is sent again until it is counted while the process lives.
	settleWait = 30 * time.Second
	// syncTimeout bounds one sync.
	syncTimeout = time.Minute
)

// Purse is one worker process's door to a run's ledger: its paid calls ask to go and settle through it. Asks and
// settlements that arrive while a sync is on its way go together in the next, so a process has at most one sync
// in flight however many calls it makes (Temporal bounds the updates in flight per workflow). While it holds
// reservations it syncs at least every RenewEvery, which renews its lease: when it dies its reservations lapse
// LeaseTTL after its last sync.
type Purse struct {
	transport Transport
	holder    string

	mu      sync.Mutex
	seq     int
	asks    []*asking
	settles []*settling
	held    map[string]bool
	noCap   bool // the last reply said the run has no spend cap: asks go without a worst case
	running bool // a sync loop runs
	kick    chan struct{}
	renewed time.Time // the last sync the ledger took
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

// settling is a settlement waiting for the ledger to count it.
type settling struct {
	st   Settle
	done chan struct{}
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
	p.mu.Lock()
	p.seq++
	a := Ask{ID: p.holder + "-" + strconv.Itoa(p.seq), Attempt: at, Provider: provider}
	priced := !p.noCap
	p.mu.Unlock()
	for {
		if priced && !a.Priced {
			a.USD, a.Priced = worst(), true
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
		settle = func(costUSD float64, sent bool) { p.settle(Settle{ID: a.ID, USD: costUSD, Sent: sent}) }
		if ans.Delay > 0 {
			t := time.NewTimer(ans.Delay)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				p.release(a.ID)
				return nil, ctx.Err()
			}
		}
		return settle, nil
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
	if r := <-w.done; r.err == nil && r.ans.Verdict == VerdictGranted {
		p.queueSettle(Settle{ID: a.ID})
	}
	return Answer{}, ctx.Err()
}

// release ends a reservation whose call was never sent, without waiting for the ledger.
func (p *Purse) release(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.queueSettle(Settle{ID: id})
}

// settle hands a settlement to the loop and waits (at most settleWait) for the ledger to count it.
func (p *Purse) settle(st Settle) {
	p.mu.Lock()
	s := p.queueSettle(st)
	p.mu.Unlock()
	t := time.NewTimer(settleWait)
	defer t.Stop()
	select {
	case <-s.done:
	case <-t.C:
	}
}

// queueSettle queues a settlement; p.mu is held.
func (p *Purse) queueSettle(st Settle) *settling {
	s := &settling{st: st, done: make(chan struct{})}
	delete(p.held, st.ID)
	p.settles = append(p.settles, s)
	p.wake()
	return s
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

// loop syncs until the purse has nothing to ask, settle or hold.
func (p *Purse) loop() {
	backoff := 10 * time.Millisecond
	for {
		s, sent, wait, ok := p.next()
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
		case errors.Is(err, ErrQuiet):
			p.sleep(jitter(pollWait))
		case errors.Is(err, ErrMoving):
			p.sleep(jitter(10 * time.Millisecond))
		case err != nil:
			p.failed(err)
			p.sleep(jitter(backoff))
			backoff = min(2*backoff, 2*time.Second)
		default:
			backoff = 10 * time.Millisecond
			if p.took(rep, sent) {
				p.sleep(jitter(pollWait))
			}
		}
	}
}

// next is the sync to send: every ask waiting, every settlement not yet counted, the reservations held. wait > 0
// says there is nothing to send before then (a lease to renew); ok false that the loop may end.
func (p *Purse) next() (s Sync, sent []*settling, wait time.Duration, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s = Sync{Holder: p.holder, Held: slices.Sorted(maps.Keys(p.held))}
	for _, w := range p.asks {
		s.Asks = append(s.Asks, w.ask)
	}
	for _, st := range p.settles {
		s.Settles = append(s.Settles, st.st)
	}
	sent = slices.Clone(p.settles)
	if len(s.Asks) > 0 || len(s.Settles) > 0 {
		return s, sent, 0, true
	}
	if len(p.held) == 0 {
		p.running = false
		return s, nil, 0, false
	}
	if due := time.Until(p.renewed.Add(RenewEvery)); due > 0 {
		return s, nil, due, true
	}
	s.Renew = true
	return s, nil, 0, true
}

// took applies a reply: settlements counted, verdicts handed to their asks. It reports whether asks still wait.
func (p *Purse) took(rep Reply, sent []*settling) (waiting bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.renewed = time.Now()
	p.noCap = rep.Status.Limits.SpendUSD <= 0
	for _, s := range sent {
		close(s.done)
	}
	p.settles = slices.DeleteFunc(p.settles, func(s *settling) bool { return slices.Contains(sent, s) })
	for _, ans := range rep.Answers {
		i := slices.IndexFunc(p.asks, func(w *asking) bool { return w.ask.ID == ans.ID })
		switch {
		case i < 0 && ans.Verdict == VerdictGranted: // its asker gave up
			p.queueSettle(Settle{ID: ans.ID})
		case i < 0:
		case ans.Verdict == VerdictWait:
			waiting = true
		default:
			if ans.Verdict == VerdictGranted {
				p.held[ans.ID] = true
			}
			p.asks[i].done <- askResult{ans: ans}
			p.asks = slices.Delete(p.asks, i, i+1)
		}
	}
	return waiting
}

// failed notes a sync that did not reach the ledger, and fails the asks that have waited past giveUp.
func (p *Purse) failed(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
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
	l.ledger.Limits = lim
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
