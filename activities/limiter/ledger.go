package limiter

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"ctxlab/specs"
)

// Limits are a run's limits on money and calls (the spec's limits.spend_usd and limits.providers). They are not
// part of what a sweep computes: the starter sets them on the run's budget at every start, so raising one takes
// effect in a running sweep.
type Limits struct {
	// SpendUSD caps what the run's paid calls cost, in dollars (0: no cap).
	SpendUSD float64 `json:"spend_usd,omitempty"`
	// Providers bound the calls to each provider across every worker of the run.
	Providers map[string]specs.ProviderLimit `json:"providers,omitempty"`
}

// paced reports whether calls to provider need a slot of their own in the ledger (in_flight or rps).
func (l Limits) paced(provider string) bool {
	pl := l.Providers[provider]
	return pl.InFlight > 0 || pl.RPS > 0
}

// ErrCapReached is what a paid call meets when its worst case does not fit under the cap beside the spend so far:
// only a higher cap lets it through.
var ErrCapReached = errors.New("spend cap reached")

// CapError is the error of a call stopped at the cap (errors.Is(err, ErrCapReached)).
type CapError struct {
	Spent, Need, Cap float64
}

func (e *CapError) Error() string {
	return fmt.Sprintf("spend cap reached: $%.4f spent of $%.4f, and this call may cost up to $%.4f", e.Spent, e.Cap,
		e.Need)
}

func (e *CapError) Is(target error) bool { return target == ErrCapReached }

// Attempt names one attempt of an activity. A reservation asked by a later attempt of the same activity releases
// those of the attempts before it: Temporal starts an attempt again only once the one before has failed or timed out.
type Attempt struct {
	Workflow string `json:"workflow,omitempty"`
	Activity string `json:"activity,omitempty"`
	Number   int32  `json:"number,omitempty"`
}

// Ask is one paid call asking to go. It asks either for a reservation of its own (a call to a provider with
// in_flight or rps limits: the reservation is its slot), or, with ForPool, for its holder's allowance to grow.
type Ask struct {
	// ID names the ask: unique per call (its holder's name and a sequence number), and its reservation's name.
	ID       string  `json:"id"`
	Attempt  Attempt `json:"attempt,omitzero"`
	Provider string  `json:"provider"`
	// USD is the call's worst-case cost; Priced says the asker computed it, which it does only when it knows the
	// run has a cap (the ledger answers VerdictPrice to an unpriced ask under a cap).
	USD    float64 `json:"usd,omitempty"`
	Priced bool    `json:"priced,omitempty"`
	// ForPool asks for the holder's allowance to grow by Need (what of USD its free allowance does not cover) and
	// up to Extra more, which its next calls take without asking.
	ForPool bool    `json:"for_pool,omitempty"`
	Need    float64 `json:"need,omitempty"`
	Extra   float64 `json:"extra,omitempty"`
}

// Verdicts of an Ask.
const (
	// VerdictGranted: the call may go (after its Answer's Delay); its reservation holds until it is settled. For
	// an ask ForPool: the holder's allowance grew (the Reply's Pool).
	VerdictGranted = "granted"
	// VerdictWait: the call fits once calls in flight settle, or once its provider has a free slot: ask again.
	VerdictWait = "wait"
	// VerdictCapped: its worst case does not fit beside the spend so far (a *CapError).
	VerdictCapped = "capped"
	// VerdictPrice: the run has a cap and the ask has no worst case: ask again with one.
	VerdictPrice = "price"
)

// Answer is the ledger's verdict on one Ask.
type Answer struct {
	ID      string `json:"id"`
	Verdict string `json:"verdict"`
	// Delay is how long a granted call waits before it starts, to keep its provider's rate (limits rps).
	Delay time.Duration `json:"delay,omitempty"`
	// Spent and Cap, at VerdictCapped: the spend so far and the cap it met.
	Spent float64 `json:"spent,omitempty"`
	Cap   float64 `json:"cap,omitempty"`
}

// Settle says what a call cost (its billed usage, a failed call's too) and whether it was sent: a call with a
// reservation of its own ends it; a call on its holder's allowance (Pool) is paid out of it.
type Settle struct {
	ID   string  `json:"id"`
	USD  float64 `json:"usd,omitempty"`
	Sent bool    `json:"sent,omitempty"`
	Pool bool    `json:"pool,omitempty"`
}

// Sync is one worker process's message to the ledger: its new asks, the calls it settled, the reservations it still
// holds, what it gives back of its allowance. Every sync renews the holder's lease.
type Sync struct {
	Holder string `json:"holder"`
	// Seq numbers the holder's syncs: a sync sent again after its reply was lost (Seq not above the last applied)
	// settles and gives back nothing twice.
	Seq     int64    `json:"seq,omitempty"`
	Asks    []Ask    `json:"asks,omitempty"`
	Settles []Settle `json:"settles,omitempty"`
	// Held is every reservation of its own the holder was granted and has not settled; the ledger releases the
	// holder's others (granted to an ask it gave up on).
	Held []string `json:"held,omitempty"`
	// Return gives back part of the allowance.
	Return float64 `json:"return,omitempty"`
	// InFlight counts the holder's calls on its allowance, for Status.
	InFlight int `json:"in_flight,omitempty"`
	// Renew asks for the sync to be taken even when nothing else changes (to renew the lease, to learn the limits).
	Renew bool `json:"renew,omitempty"`
}

// Reply is the ledger's answer to a Sync: one Answer per Ask, in order, the holder's allowance, and the ledger's
// state after it.
type Reply struct {
	Answers []Answer `json:"answers,omitempty"`
	Pool    float64  `json:"pool,omitempty"`
	Status  Status   `json:"status"`
}

// Status is what a ledger holds, as `starter status` and the progress line show it.
type Status struct {
	Limits Limits `json:"limits"`
	// SpentUSD is what the settled calls cost; Calls counts the calls that were sent.
	SpentUSD float64 `json:"spent_usd"`
	Calls    int     `json:"calls"`
	// ReservedUSD is the money set aside: reservations and allowances. InFlight counts the calls the holders
	// said they have in flight.
	ReservedUSD float64 `json:"reserved_usd"`
	InFlight    int     `json:"in_flight"`
}

// Reservation is money and a call slot set aside for one call of a holder until it settles or its holder's lease
// lapses.
type Reservation struct {
	Ask
	Holder string `json:"holder"`
}

// Holder is what the ledger knows of one worker process.
type Holder struct {
	// Lease is when its reservations and allowance lapse unless it syncs again (zero: it holds none).
	Lease time.Time `json:"lease,omitzero"`
	// Pool is its allowance: money its calls take without asking, each call's cost paid out of it.
	Pool     float64 `json:"pool,omitempty"`
	InFlight int     `json:"in_flight,omitempty"`
	// Seq is its last sync applied; Seen when it last synced (a holder silent for forgetAfter is forgotten).
	Seq  int64     `json:"seq,omitempty"`
	Seen time.Time `json:"seen"`
}

// LeaseTTL is how long a holder's reservations and allowance outlive its last sync: a worker process that died
// (SIGKILL, a lost machine) frees what it held this long after its last word. A live holder renews well within it
// (RenewEvery).
const LeaseTTL = 30 * time.Second

// RenewEvery is how often a holder with reservations or an allowance syncs at least.
const RenewEvery = LeaseTTL / 3

// forgetAfter is how long the ledger remembers a holder that holds nothing: longer than any sync can take to be
// sent again.
const forgetAfter = time.Hour

// maxLapsed bounds the reservations a ledger remembers as released without being settled (its holder's lease
// lapsed, or a later attempt took over), so that a settlement arriving late still counts its cost.
const maxLapsed = 1024

// Ledger is a run's spend and call slots: the spend cap's reservations and allowances and what the calls cost, the
// calls in flight per provider and their pace. The budget workflow holds it; every method is deterministic (no
// clock but the one passed in, no map order), so the workflow replays it.
//
// Its invariant, for every grant: the spend plus every reservation and allowance fits under the cap. A holder's
// calls on its allowance reserve their worst case out of it, so the endpoint bills past the cap only what it bills
// past a call's worst case, and calls in flight on a worker that died.
type Ledger struct {
	Limits   Limits        `json:"limits"`
	SpentUSD float64       `json:"spent_usd"`
	Calls    int           `json:"calls"`
	Held     []Reservation `json:"held,omitempty"`
	// Holders are the worker processes that synced; NextStart each provider's earliest next start (limits rps).
	Holders   map[string]Holder    `json:"holders,omitempty"`
	NextStart map[string]time.Time `json:"next_start,omitempty"`
	// Lapsed names the reservations released without a settlement, oldest first (at most maxLapsed).
	Lapsed []string `json:"lapsed,omitempty"`
}

// maxUSD bounds an amount the ledger holds: an infinite worst case still meets every cap, and the ledger's state
// stays finite (JSON, which carries it between the workflow's runs, has no infinity).
const maxUSD = 1e15

// usd is a dollar amount as the ledger counts it: a negative or NaN amount (a bug, or a hostile endpoint's usage) is
// none, never a credit.
func usd(v float64) float64 {
	if math.IsNaN(v) || v < 0 {
		return 0
	}
	return min(v, maxUSD)
}

// holderNames are the ledger's holders in a deterministic order.
func (l *Ledger) holderNames() []string {
	// Sorted keys: a deterministic order.
	//workflowcheck:ignore
	return slices.Sorted(maps.Keys(l.Holders))
}

// Status returns what the ledger holds.
func (l *Ledger) Status() Status {
	st := Status{Limits: l.Limits, SpentUSD: l.SpentUSD, Calls: l.Calls, ReservedUSD: l.reserved(),
		InFlight: len(l.Held)}
	for _, h := range l.holderNames() {
		st.InFlight += l.Holders[h].InFlight
	}
	return st
}

// reserved sums the reservations held and the allowances.
func (l *Ledger) reserved() float64 {
	var sum float64
	for _, r := range l.Held {
		sum += r.USD
	}
	for _, h := range l.holderNames() {
		sum += l.Holders[h].Pool
	}
	return sum
}

// inFlight counts a provider's reservations.
func (l *Ledger) inFlight(provider string) int {
	n := 0
	for _, r := range l.Held {
		if r.Provider == provider {
			n++
		}
	}
	return n
}

func (l *Ledger) held(id string) int {
	return slices.IndexFunc(l.Held, func(r Reservation) bool { return r.ID == id })
}

// SetLimits sets the run's limits (the starter's signal). Allowances stay: a lowered cap stops what they did not
// cover yet, and what they hold is spent or given back.
func (l *Ledger) SetLimits(lim Limits) { l.Limits = lim }

// Apply takes a holder's sync at now: its settlements and what it gives back first (once, however often the sync
// is sent), then the release of reservations it no longer holds and of earlier attempts', then its asks in order,
// each granted, held back or refused; then its lease is renewed.
func (l *Ledger) Apply(s Sync, now time.Time) Reply {
	if l.Holders == nil {
		l.Holders = map[string]Holder{}
	}
	h := l.Holders[s.Holder]
	if s.Seq == 0 || s.Seq > h.Seq {
		for _, st := range s.Settles {
			if st.Pool {
				l.Count(st.USD, st.Sent)
				h.Pool = max(0, h.Pool-usd(st.USD))
			} else {
				l.settle(st)
			}
		}
		h.Pool = max(0, h.Pool-usd(s.Return))
		h.Seq = max(h.Seq, s.Seq)
	}
	h.InFlight, h.Seen = s.InFlight, now
	l.Holders[s.Holder] = h
	keep := map[string]bool{}
	for _, id := range s.Held {
		keep[id] = true
	}
	for _, a := range s.Asks {
		keep[a.ID] = true
	}
	l.release(func(r Reservation) bool { return r.Holder == s.Holder && !keep[r.ID] })
	var rep Reply
	for _, a := range s.Asks {
		rep.Answers = append(rep.Answers, l.grant(s.Holder, a, now))
	}
	h = l.Holders[s.Holder]
	if h.Pool > 0 || slices.ContainsFunc(l.Held, func(r Reservation) bool { return r.Holder == s.Holder }) {
		h.Lease = now.Add(LeaseTTL)
	} else {
		h.Lease = time.Time{}
	}
	l.Holders[s.Holder] = h
	rep.Pool = h.Pool
	rep.Status = l.Status()
	return rep
}

// grant decides an ask and, when it is granted, sets aside what it asked for.
func (l *Ledger) grant(holder string, a Ask, now time.Time) Answer {
	if a.ForPool {
		ans, add := l.decidePool(a)
		if add > 0 {
			h := l.Holders[holder]
			h.Pool += add
			l.Holders[holder] = h
		}
		return ans
	}
	l.supersede(a)
	ans := l.decide(a)
	if ans.Verdict == VerdictGranted && l.held(a.ID) < 0 {
		ans.Delay = l.pace(a.Provider, now)
		a.USD = usd(a.USD)
		l.Held = append(l.Held, Reservation{Ask: a, Holder: holder})
	}
	return ans
}

// Quiet reports whether a sync would change nothing: it settles nothing, gives back nothing, renews nothing,
// releases nothing and every ask would wait. The budget workflow refuses such a sync before it enters the
// history, so a holder that asks again while it waits adds nothing to it.
func (l *Ledger) Quiet(s Sync) bool {
	if len(s.Settles) > 0 || s.Return > 0 || s.Renew {
		return false
	}
	keep := map[string]bool{}
	for _, id := range s.Held {
		keep[id] = true
	}
	for _, a := range s.Asks {
		keep[a.ID] = true
		verdict := ""
		if a.ForPool {
			ans, _ := l.decidePool(a)
			verdict = ans.Verdict
		} else {
			verdict = l.decide(a).Verdict
		}
		if verdict != VerdictWait || l.supersedes(a) {
			return false
		}
	}
	return !slices.ContainsFunc(l.Held, func(r Reservation) bool { return r.Holder == s.Holder && !keep[r.ID] })
}

// decide is an ask's verdict for a reservation of its own, as the ledger stands (a reservation it already holds is
// granted again: a holder that lost a reply asks again with the same ID).
func (l *Ledger) decide(a Ask) Answer {
	ans := Answer{ID: a.ID, Verdict: VerdictGranted}
	if l.held(a.ID) >= 0 {
		return ans
	}
	need := usd(a.USD)
	if capUSD := l.Limits.SpendUSD; capUSD > 0 {
		switch {
		case !a.Priced:
			ans.Verdict = VerdictPrice
			return ans
		case l.SpentUSD+need > capUSD:
			return Answer{ID: a.ID, Verdict: VerdictCapped, Spent: l.SpentUSD, Cap: capUSD}
		case l.SpentUSD+l.reserved()+need > capUSD:
			ans.Verdict = VerdictWait
			return ans
		}
	}
	if pl := l.Limits.Providers[a.Provider]; pl.InFlight > 0 && l.inFlight(a.Provider) >= pl.InFlight {
		ans.Verdict = VerdictWait
	}
	return ans
}

// decidePool is an ask ForPool's verdict, and what the holder's allowance grows by when it is granted: what it
// needs, and of the extra it asks for at most a quarter of the room left (so that allowances stay small beside
// what is left, and shrink to what calls need near the cap).
func (l *Ledger) decidePool(a Ask) (Answer, float64) {
	capUSD := l.Limits.SpendUSD
	need := usd(a.Need)
	if capUSD <= 0 { // no cap: nothing to set aside
		return Answer{ID: a.ID, Verdict: VerdictGranted}, 0
	}
	if l.SpentUSD+usd(a.USD) > capUSD {
		return Answer{ID: a.ID, Verdict: VerdictCapped, Spent: l.SpentUSD, Cap: capUSD}, 0
	}
	room := capUSD - l.SpentUSD - l.reserved()
	if need > room {
		return Answer{ID: a.ID, Verdict: VerdictWait}, 0
	}
	return Answer{ID: a.ID, Verdict: VerdictGranted}, need + min(usd(a.Extra), (room-need)/4)
}

// pace returns how long a call to provider granted at now waits to keep the provider's rate, and books its start.
func (l *Ledger) pace(provider string, now time.Time) time.Duration {
	rps := l.Limits.Providers[provider].RPS
	if !(rps > 0) || math.IsInf(rps, 0) {
		return 0
	}
	if l.NextStart == nil {
		l.NextStart = map[string]time.Time{}
	}
	at := now
	if next := l.NextStart[provider]; next.After(at) {
		at = next
	}
	l.NextStart[provider] = at.Add(time.Duration(float64(time.Second) / rps))
	return at.Sub(now)
}

// settle ends a reservation and counts what its call cost. A settlement of a reservation already released (its
// holder's lease lapsed) still counts; one of a reservation already settled (a holder that lost the reply and sent
// it again) does not count twice.
func (l *Ledger) settle(s Settle) {
	if i := l.held(s.ID); i >= 0 {
		l.Held = slices.Delete(l.Held, i, i+1)
	} else if j := slices.Index(l.Lapsed, s.ID); j >= 0 {
		l.Lapsed = slices.Delete(l.Lapsed, j, j+1)
	} else {
		return
	}
	l.Count(s.USD, s.Sent)
}

// Count adds what a call cost to the spend (and the call, when it was sent), with no reservation to end: for a
// call on an allowance, and for a ledger started from the record of calls made before it.
func (l *Ledger) Count(costUSD float64, sent bool) {
	if !math.IsInf(costUSD, 0) { // a cost that cannot be real is no money (nor a credit)
		l.SpentUSD += usd(costUSD)
	}
	if sent {
		l.Calls++
	}
}

// supersedes reports whether an ask releases reservations of earlier attempts of its activity.
func (l *Ledger) supersedes(a Ask) bool {
	return a.Attempt.Activity != "" && slices.ContainsFunc(l.Held, func(r Reservation) bool { return earlier(r, a) })
}

// supersede releases the reservations of earlier attempts of an ask's activity.
func (l *Ledger) supersede(a Ask) {
	if a.Attempt.Activity != "" {
		l.release(func(r Reservation) bool { return earlier(r, a) })
	}
}

func earlier(r Reservation, a Ask) bool {
	return r.Attempt.Workflow == a.Attempt.Workflow && r.Attempt.Activity == a.Attempt.Activity &&
		r.Attempt.Number < a.Attempt.Number
}

// release drops the reservations drop picks, unsettled: each is remembered as lapsed.
func (l *Ledger) release(drop func(Reservation) bool) {
	l.Held = slices.DeleteFunc(l.Held, func(r Reservation) bool {
		if drop(r) {
			l.Lapsed = append(l.Lapsed, r.ID)
			return true
		}
		return false
	})
	if n := len(l.Lapsed) - maxLapsed; n > 0 {
		l.Lapsed = slices.Delete(l.Lapsed, 0, n)
	}
}

// Expire releases the reservations and allowance of every holder whose lease has lapsed at now, forgets holders
// that hold nothing and were silent for forgetAfter, and returns the holders whose lease lapsed.
func (l *Ledger) Expire(now time.Time) []string {
	var gone []string
	for _, name := range l.holderNames() {
		h := l.Holders[name]
		switch {
		case !h.Lease.IsZero() && now.After(h.Lease):
			gone = append(gone, name)
			h.Lease, h.Pool, h.InFlight = time.Time{}, 0, 0
			l.Holders[name] = h
		case h.Lease.IsZero() && now.Sub(h.Seen) > forgetAfter:
			delete(l.Holders, name)
		}
	}
	if len(gone) > 0 {
		l.release(func(r Reservation) bool { return slices.Contains(gone, r.Holder) })
	}
	return gone
}

// NextExpiry is the earliest lease deadline, false when no holder holds a lease.
func (l *Ledger) NextExpiry() (time.Time, bool) {
	var first time.Time
	for _, name := range l.holderNames() {
		if d := l.Holders[name].Lease; !d.IsZero() && (first.IsZero() || d.Before(first)) {
			first = d
		}
	}
	return first, !first.IsZero()
}
