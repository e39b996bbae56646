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

// Ask is one paid call asking to go.
type Ask struct {
	// ID names the reservation the call asks for: unique per call (its holder's name and a sequence number).
	ID       string  `json:"id"`
	Attempt  Attempt `json:"attempt,omitzero"`
	Provider string  `json:"provider"`
	// USD is the call's worst-case cost; Priced says the asker computed it, which it does only when it knows the
	// run has a cap (the ledger answers VerdictPrice to an unpriced ask under a cap).
	USD    float64 `json:"usd,omitempty"`
	Priced bool    `json:"priced,omitempty"`
}

// Verdicts of an Ask.
const (
	// VerdictGranted: the call may go (after its Answer's Delay); its reservation holds until it is settled.
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

// Settle ends a reservation: what the call cost (its billed usage, a failed call's too), and whether it was sent.
type Settle struct {
	ID   string  `json:"id"`
	USD  float64 `json:"usd,omitempty"`
	Sent bool    `json:"sent,omitempty"`
}

// Sync is one worker process's message to the ledger: its new asks, the calls it settled, and the reservations it
// still holds. Every sync renews the holder's lease.
type Sync struct {
	Holder  string   `json:"holder"`
	Asks    []Ask    `json:"asks,omitempty"`
	Settles []Settle `json:"settles,omitempty"`
	// Held is every reservation the holder was granted and has not settled; the ledger releases the holder's
	// others (granted to an ask it gave up on).
	Held []string `json:"held,omitempty"`
	// Renew asks for the lease to be renewed even when nothing else changes.
	Renew bool `json:"renew,omitempty"`
}

// Reply is the ledger's answer to a Sync: one Answer per Ask, in order, and the ledger's state after it.
type Reply struct {
	Answers []Answer `json:"answers,omitempty"`
	Status  Status   `json:"status"`
}

// Status is what a ledger holds, as `starter status` and the progress line show it.
type Status struct {
	Limits Limits `json:"limits"`
	// SpentUSD is what the settled calls cost; Calls counts the calls that were sent.
	SpentUSD float64 `json:"spent_usd"`
	Calls    int     `json:"calls"`
	// ReservedUSD is the worst cases of the calls in flight, InFlight how many they are.
	ReservedUSD float64 `json:"reserved_usd"`
	InFlight    int     `json:"in_flight"`
}

// Reservation is money and a call slot set aside for one call of a holder until it settles or its holder's lease
// lapses.
type Reservation struct {
	Ask
	Holder string `json:"holder"`
}

// LeaseTTL is how long a holder's reservations outlive its last sync: a worker process that died (SIGKILL, a lost
// machine) frees what it held this long after its last word. A live holder renews well within it (RenewEvery).
const LeaseTTL = 30 * time.Second

// RenewEvery is how often a holder with reservations syncs at least.
const RenewEvery = LeaseTTL / 3

// maxLapsed bounds the reservations a ledger remembers as released without being settled (its holder's lease
// lapsed, or a later attempt took over), so that a settlement arriving late still counts its cost.
const maxLapsed = 1024

// Ledger is a run's spend and call slots: the spend cap's reservations and what the calls cost, the calls in flight
// per provider and their pace. The budget workflow holds it; every method is deterministic (no clock but the one
// passed in, no map order), so the workflow replays it.
type Ledger struct {
	Limits   Limits        `json:"limits"`
	SpentUSD float64       `json:"spent_usd"`
	Calls    int           `json:"calls"`
	Held     []Reservation `json:"held,omitempty"`
	// Leases hold each holder's deadline; NextStart each provider's earliest next start (limits rps).
	Leases    map[string]time.Time `json:"leases,omitempty"`
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

// Status returns what the ledger holds.
func (l *Ledger) Status() Status {
	return Status{Limits: l.Limits, SpentUSD: l.SpentUSD, Calls: l.Calls, ReservedUSD: l.reserved(""),
		InFlight: len(l.Held)}
}

// reserved sums the reservations held (of one provider's calls when provider is not "").
func (l *Ledger) reserved(provider string) float64 {
	var sum float64
	for _, r := range l.Held {
		if provider == "" || r.Provider == provider {
			sum += r.USD
		}
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

// Apply takes a holder's sync at now: its settlements first, then the release of reservations it no longer holds
// and of earlier attempts', then its asks in order, each granted, held back or refused; then its lease is renewed.
func (l *Ledger) Apply(s Sync, now time.Time) Reply {
	for _, st := range s.Settles {
		l.settle(st)
	}
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
		l.supersede(a)
		ans := l.decide(a)
		if ans.Verdict == VerdictGranted && l.held(a.ID) < 0 {
			ans.Delay = l.pace(a.Provider, now)
			a.USD = usd(a.USD)
			l.Held = append(l.Held, Reservation{Ask: a, Holder: s.Holder})
		}
		rep.Answers = append(rep.Answers, ans)
	}
	if l.Leases == nil {
		l.Leases = map[string]time.Time{}
	}
	if slices.ContainsFunc(l.Held, func(r Reservation) bool { return r.Holder == s.Holder }) {
		l.Leases[s.Holder] = now.Add(LeaseTTL)
	} else {
		delete(l.Leases, s.Holder)
	}
	rep.Status = l.Status()
	return rep
}

// Quiet reports whether a sync would change nothing: it settles nothing, renews nothing, releases nothing and every
// ask would wait. The budget workflow refuses such a sync before it enters the history, so a holder that asks again
// while it waits adds nothing to it.
func (l *Ledger) Quiet(s Sync) bool {
	if len(s.Settles) > 0 || s.Renew {
		return false
	}
	keep := map[string]bool{}
	for _, id := range s.Held {
		keep[id] = true
	}
	for _, a := range s.Asks {
		keep[a.ID] = true
		if l.decide(a).Verdict != VerdictWait || l.supersedes(a) {
			return false
		}
	}
	return !slices.ContainsFunc(l.Held, func(r Reservation) bool { return r.Holder == s.Holder && !keep[r.ID] })
}

// decide is an ask's verdict as the ledger stands (a reservation it already holds is granted again: a holder that
// lost a reply asks again with the same ID).
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
		case l.SpentUSD+l.reserved("")+need > capUSD:
			ans.Verdict = VerdictWait
			return ans
		}
	}
	if pl := l.Limits.Providers[a.Provider]; pl.InFlight > 0 && l.inFlight(a.Provider) >= pl.InFlight {
		ans.Verdict = VerdictWait
	}
	return ans
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
// ledger started from the record of calls made before it.
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

// Expire releases the reservations of every holder whose lease has lapsed at now, and returns those holders.
func (l *Ledger) Expire(now time.Time) []string {
	var gone []string
	// Sorted keys: a deterministic order.
	//workflowcheck:ignore
	for _, h := range slices.Sorted(maps.Keys(l.Leases)) {
		if now.After(l.Leases[h]) {
			gone = append(gone, h)
			delete(l.Leases, h)
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
	// The minimum: the order is never observed.
	//workflowcheck:ignore
	for _, d := range l.Leases {
		if first.IsZero() || d.Before(first) {
			first = d
		}
	}
	return first, !first.IsZero()
}
