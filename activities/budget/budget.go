// Package budget fits a method's knob (how many lines of ranked chunks, a compressor's rate, ...) so that the
// method's context lands within a tolerance of a token budget, in few evaluations: it brackets the target starting
// from a guess, then narrows the bracket by regula falsi (Illinois variant), falling back to bisection when a step
// makes too little progress. The knob must make tokens non-decreasing. A budget that no knob value reaches is a
// Result with Reached false and a reason, never an error: the caller records it on the row.
package budget

import (
	"fmt"
	"math"
)

// DefaultTolerance is PAPER.md's ±2%.
const DefaultTolerance = 0.02

// DefaultMaxEvals bounds evaluations; an integer knob over a million values needs at most about 25 by bisection.
const DefaultMaxEvals = 40

// Knob is the range of the value being fitted.
type Knob struct {
	Lo, Hi float64
	// Integer knobs are evaluated at whole numbers only.
	Integer bool
	// Guess is where the search starts (clamped to [Lo, Hi]); NaN or zero means the middle.
	Guess float64
}

// Problem is one fit.
type Problem struct {
	Target    int
	Tolerance float64 // relative; DefaultTolerance when 0
	MaxEvals  int     // DefaultMaxEvals when 0
	Knob      Knob
}

// Result is the fitted knob.
type Result struct {
	Knob   float64 `json:"knob"`
	Tokens int     `json:"tokens"`
	Evals  int     `json:"evals"`
	// Reached is false when no knob value tried lands within the tolerance; Knob and Tokens are then the closest
	// value tried (preferring one under the budget), and Why says what stopped the search.
	Reached bool   `json:"reached"`
	Why     string `json:"why,omitempty"`
}

// Fit searches the knob. eval returns the tokens the method gives at a knob value; its errors end the fit.
func Fit(p Problem, eval func(knob float64) (int, error)) (Result, error) {
	if !(p.Knob.Lo <= p.Knob.Hi) {
		return Result{}, fmt.Errorf("budget: knob range [%v, %v] is empty", p.Knob.Lo, p.Knob.Hi)
	}
	f := newFit(p, eval)
	b, ended, err := f.bracket()
	if err == nil && !ended {
		err = f.narrow(b)
	}
	return f.res, err
}

// fit is one Fit's search: the budget's bounds, the evaluations so far and the closest of them.
type fit struct {
	p             Problem
	eval          func(knob float64) (int, error)
	maxEvals      int
	lowOK, highOK int // the token counts within the tolerance of the target
	// res is the result so far: its Evals, and once the search ends (done or fail) the rest.
	res     Result
	seen    map[float64]int // knob value -> its tokens, evaluated once
	best    Result          // the evaluation closest to the target
	bestSet bool
}

// bracket is a knob range whose ends miss the budget on either side: lo gives nlo tokens, too few, and hi gives
// nhi, too many. An end not found yet is NaN.
type bracket struct {
	lo, hi   float64
	nlo, nhi int
}

func newFit(p Problem, eval func(knob float64) (int, error)) *fit {
	tol := p.Tolerance
	if tol <= 0 {
		tol = DefaultTolerance
	}
	maxEvals := p.MaxEvals
	if maxEvals <= 0 {
		maxEvals = DefaultMaxEvals
	}
	return &fit{p: p, eval: eval, maxEvals: maxEvals, seen: map[float64]int{},
		lowOK:  int(math.Ceil(float64(p.Target) * (1 - tol))),
		highOK: int(math.Floor(float64(p.Target) * (1 + tol)))}
}

// snap clamps x to the knob's range, and rounds it for an integer knob.
func (f *fit) snap(x float64) float64 {
	x = math.Max(f.p.Knob.Lo, math.Min(f.p.Knob.Hi, x))
	if f.p.Knob.Integer {
		x = math.Round(x)
	}
	return x
}

// tokens evaluates x once, counting the evaluation and keeping the closest to the target (preferring fewer tokens).
func (f *fit) tokens(x float64) (int, error) {
	if n, ok := f.seen[x]; ok {
		return n, nil
	}
	n, err := f.eval(x)
	if err != nil {
		return 0, err
	}
	f.res.Evals++
	f.seen[x] = n
	d, bd := dist(n, f.p.Target), dist(f.best.Tokens, f.p.Target)
	if !f.bestSet || d < bd || (d == bd && n < f.best.Tokens) {
		f.best, f.bestSet = Result{Knob: x, Tokens: n}, true
	}
	return n, nil
}

func (f *fit) in(n int) bool { return n >= f.lowOK && n <= f.highOK }

// done ends the search at x, which gives n tokens within the budget.
func (f *fit) done(x float64, n int) {
	f.res.Knob, f.res.Tokens, f.res.Reached = x, n, true
}

// fail ends the search short of the budget, at the closest value tried.
func (f *fit) fail(why string) {
	f.res.Knob, f.res.Tokens, f.res.Why = f.best.Knob, f.best.Tokens, why
}

// place makes x, which gives n tokens outside the budget, the end of b on its side.
func (f *fit) place(b *bracket, x float64, n int) {
	if n < f.lowOK {
		b.lo, b.nlo = x, n
	} else {
		b.hi, b.nhi = x, n
	}
}

// bracket evaluates from the guess outwards until the knob's range holds a bracket of the budget; ended when the
// search ended on the way (a value within the budget, or none past an end of the range, or the evaluations ran out).
func (f *fit) bracket() (b bracket, ended bool, err error) {
	k := f.p.Knob
	x := k.Guess
	if x == 0 || math.IsNaN(x) {
		x = (k.Lo + k.Hi) / 2
	}
	x = f.snap(x)
	b = bracket{lo: math.NaN(), hi: math.NaN()}
	for {
		n, err := f.tokens(x)
		if err != nil {
			return b, true, err
		}
		if f.in(n) {
			f.done(x, n)
			return b, true, nil
		}
		f.place(&b, x, n)
		if !math.IsNaN(b.lo) && !math.IsNaN(b.hi) {
			return b, false, nil
		}
		if f.res.Evals >= f.maxEvals {
			f.fail(fmt.Sprintf("no bracket of %d tokens after %d evaluations", f.p.Target, f.res.Evals))
			return b, true, nil
		}
		var ok bool
		if x, ok = f.widen(b); !ok {
			return b, true, nil
		}
	}
}

// widen is the next value to try for the end b lacks; false when the range's own end misses on the same side as
// b's (the search failed).
func (f *fit) widen(b bracket) (float64, bool) {
	k := f.p.Knob
	var next float64
	if math.IsNaN(b.hi) {
		if b.lo >= k.Hi {
			f.fail(fmt.Sprintf("the largest knob value %v gives %d tokens, under the budget %d-%d",
				k.Hi, b.nlo, f.lowOK, f.highOK))
			return 0, false
		}
		next = grow(b.lo, b.nlo, f.p.Target, k)
	} else {
		if b.hi <= k.Lo {
			f.fail(fmt.Sprintf("the smallest knob value %v gives %d tokens, over the budget %d-%d",
				k.Lo, b.nhi, f.lowOK, f.highOK))
			return 0, false
		}
		next = shrink(b.hi, b.nhi, f.p.Target, k)
	}
	// Close to the end of the range the search goes towards, try that end itself: a continuous knob would otherwise
	// creep towards it. Only that end: a growing step near the low end (any step of a large range's first few
	// percent) must not fall back to it, which would throw away the bracket's low end and grow from nothing.
	edge := 0.02 * (k.Hi - k.Lo)
	if math.IsNaN(b.hi) && k.Hi-next < edge {
		next = k.Hi
	} else if !math.IsNaN(b.hi) && next-k.Lo < edge {
		next = k.Lo
	}
	return f.snap(next), true
}

// narrow shrinks the bracket b until a value inside gives tokens within the budget, the bracket holds no more
// values, or the evaluations run out.
func (f *fit) narrow(b bracket) error {
	k := f.p.Knob
	side := 0 // kept ends in a row: -n the low end was moved n times (the high one kept), +n the high end
	for f.res.Evals < f.maxEvals {
		if k.Integer && b.hi-b.lo <= 1 || !k.Integer && b.hi-b.lo <= 1e-9*math.Max(1, math.Abs(b.hi)) {
			f.fail(fmt.Sprintf("no knob value gives %d-%d tokens: %v gives %d and %v gives %d",
				f.lowOK, f.highOK, b.lo, b.nlo, b.hi, b.nhi))
			return nil
		}
		next := f.inside(b, side)
		n, err := f.tokens(next)
		if err != nil {
			return err
		}
		if f.in(n) {
			f.done(next, n)
			return nil
		}
		f.place(&b, next, n)
		if n < f.lowOK {
			side = min(side, 0) - 1
		} else {
			side = max(side, 0) + 1
		}
	}
	f.fail(fmt.Sprintf("not within %d-%d tokens after %d evaluations", f.lowOK, f.highOK, f.res.Evals))
	return nil
}

// inside is the next value to try strictly inside b: Illinois regula falsi, bisection when an end has been kept
// three times in a row or the step leaves the bracket.
func (f *fit) inside(b bracket, side int) float64 {
	// g = tokens - target: negative at lo, positive at hi. An endpoint kept twice in a row has its g halved
	// (Illinois), which pulls the next guess towards it.
	glo, ghi := float64(b.nlo-f.p.Target), float64(b.nhi-f.p.Target)
	if side == -2 {
		ghi /= 2
	}
	if side == 2 {
		glo /= 2
	}
	next := b.lo - glo*(b.hi-b.lo)/(ghi-glo)
	if side <= -3 || side >= 3 || math.IsNaN(next) {
		next = (b.lo + b.hi) / 2
	}
	next = f.snap(next)
	if next <= b.lo || next >= b.hi {
		next = f.snap((b.lo + b.hi) / 2)
		if f.p.Knob.Integer && (next <= b.lo || next >= b.hi) {
			next = b.lo + 1
		}
	}
	return next
}

// grow proposes a knob past lo, assuming tokens roughly proportional to the knob, and at least doubling the step.
func grow(lo float64, nlo, target int, k Knob) float64 {
	span := lo - k.Lo
	if nlo > 0 && span > 0 {
		return k.Lo + span*math.Max(1.1*float64(target)/float64(nlo), 1.5)
	}
	return lo + math.Max((k.Hi-k.Lo)/8, 1e-6)
}

func shrink(hi float64, nhi, target int, k Knob) float64 {
	span := hi - k.Lo
	if nhi > 0 && span > 0 {
		return k.Lo + span*math.Min(0.9*float64(target)/float64(nhi), 0.67)
	}
	return k.Lo
}

func dist(n, target int) int {
	if n > target {
		return n - target
	}
	return target - n
}
