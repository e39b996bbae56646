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
	tol := p.Tolerance
	if tol <= 0 {
		tol = DefaultTolerance
	}
	maxEvals := p.MaxEvals
	if maxEvals <= 0 {
		maxEvals = DefaultMaxEvals
	}
	k := p.Knob
	if !(k.Lo <= k.Hi) {
		return Result{}, fmt.Errorf("budget: knob range [%v, %v] is empty", k.Lo, k.Hi)
	}
	lowOK := int(math.Ceil(float64(p.Target) * (1 - tol)))
	highOK := int(math.Floor(float64(p.Target) * (1 + tol)))
	snap := func(x float64) float64 {
		x = math.Max(k.Lo, math.Min(k.Hi, x))
		if k.Integer {
			x = math.Round(x)
		}
		return x
	}

	var res Result
	seen := map[float64]int{}
	best, bestSet := Result{}, false
	consider := func(x float64, n int) {
		d, bd := dist(n, p.Target), dist(best.Tokens, p.Target)
		if !bestSet || d < bd || (d == bd && n < best.Tokens) {
			best, bestSet = Result{Knob: x, Tokens: n}, true
		}
	}
	f := func(x float64) (int, error) {
		if n, ok := seen[x]; ok {
			return n, nil
		}
		n, err := eval(x)
		if err != nil {
			return 0, err
		}
		res.Evals++
		seen[x] = n
		consider(x, n)
		return n, nil
	}
	done := func(x float64, n int) (Result, error) {
		res.Knob, res.Tokens, res.Reached = x, n, true
		return res, nil
	}
	fail := func(why string) (Result, error) {
		res.Knob, res.Tokens, res.Why = best.Knob, best.Tokens, why
		return res, nil
	}
	in := func(n int) bool { return n >= lowOK && n <= highOK }

	// Bracket: lo gives too few tokens, hi too many.
	x := k.Guess
	if x == 0 || math.IsNaN(x) {
		x = (k.Lo + k.Hi) / 2
	}
	x = snap(x)
	n, err := f(x)
	if err != nil {
		return res, err
	}
	if in(n) {
		return done(x, n)
	}
	lo, hi := math.NaN(), math.NaN()
	var nlo, nhi int
	if n < lowOK {
		lo, nlo = x, n
	} else {
		hi, nhi = x, n
	}
	for math.IsNaN(lo) || math.IsNaN(hi) {
		if res.Evals >= maxEvals {
			return fail(fmt.Sprintf("no bracket of %d tokens after %d evaluations", p.Target, res.Evals))
		}
		var next float64
		if math.IsNaN(hi) { // grow
			if lo >= k.Hi {
				return fail(fmt.Sprintf("the largest knob value %v gives %d tokens, under the budget %d-%d",
					k.Hi, nlo, lowOK, highOK))
			}
			next = grow(lo, nlo, p.Target, k)
		} else {
			if hi <= k.Lo {
				return fail(fmt.Sprintf("the smallest knob value %v gives %d tokens, over the budget %d-%d",
					k.Lo, nhi, lowOK, highOK))
			}
			next = shrink(hi, nhi, p.Target, k)
		}
		// Close to an end of the range, try the end itself: a continuous knob would otherwise creep towards it.
		if edge := 0.02 * (k.Hi - k.Lo); next-k.Lo < edge {
			next = k.Lo
		} else if k.Hi-next < edge {
			next = k.Hi
		}
		next = snap(next)
		n, err := f(next)
		if err != nil {
			return res, err
		}
		if in(n) {
			return done(next, n)
		}
		if n < lowOK {
			lo, nlo = next, n
		} else {
			hi, nhi = next, n
		}
	}

	// Narrow: Illinois regula falsi, bisection when an endpoint is kept twice in a row.
	side := 0
	for res.Evals < maxEvals {
		if k.Integer && hi-lo <= 1 || !k.Integer && hi-lo <= 1e-9*math.Max(1, math.Abs(hi)) {
			return fail(fmt.Sprintf("no knob value gives %d-%d tokens: %v gives %d and %v gives %d",
				lowOK, highOK, lo, nlo, hi, nhi))
		}
		// g = tokens - target: negative at lo, positive at hi. An endpoint kept twice in a row has its g halved
		// (Illinois), which pulls the next guess towards it.
		glo, ghi := float64(nlo-p.Target), float64(nhi-p.Target)
		if side == -2 {
			ghi /= 2
		}
		if side == 2 {
			glo /= 2
		}
		next := lo - glo*(hi-lo)/(ghi-glo)
		if side <= -3 || side >= 3 || math.IsNaN(next) {
			next = (lo + hi) / 2
		}
		next = snap(next)
		if next <= lo || next >= hi {
			next = snap((lo + hi) / 2)
			if k.Integer && (next <= lo || next >= hi) {
				next = lo + 1
			}
		}
		n, err := f(next)
		if err != nil {
			return res, err
		}
		if in(n) {
			return done(next, n)
		}
		if n < lowOK {
			lo, nlo = next, n
			side = min(side, 0) - 1
		} else {
			hi, nhi = next, n
			side = max(side, 0) + 1
		}
	}
	return fail(fmt.Sprintf("not within %d-%d tokens after %d evaluations", lowOK, highOK, res.Evals))
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
