package stats

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// McNemarExact is the one-sided exact McNemar p-value for paired binary outcomes: with b pairs where only the first
// method succeeded and c where only the second did, it is P(X >= b) for X ~ Binomial(b+c, 1/2), the chance of at
// least b first-method wins among the discordant pairs if both methods were equally good. Concordant pairs carry no
// information and do not enter. b = c = 0 gives 1.
func McNemarExact(b, c int) float64 {
	if b < 0 || c < 0 {
		return math.NaN()
	}
	if b == 0 {
		return 1
	}
	// Binomial(n, 1/2) is symmetric, so P(X >= b) = P(X <= c): gonum's CDF, an incomplete beta function that keeps
	// small tails (its Survival is 1 - CDF, which would round them to 0).
	return distuv.Binomial{N: float64(b + c), P: 0.5}.CDF(float64(c))
}

// Holm adjusts p-values for a family of tests by Holm's step-down method: sort ascending, multiply the i-th
// smallest (from 0) by m-i, carry the running maximum, cap at 1. The result is in the input's order. NaNs stay NaN
// and do not count towards m.
func Holm(p []float64) []float64 {
	idx := make([]int, 0, len(p))
	for i, v := range p {
		if !math.IsNaN(v) {
			idx = append(idx, i)
		}
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		switch {
		case p[a] < p[b]:
			return -1
		case p[a] > p[b]:
			return 1
		}
		return 0
	})
	out := make([]float64, len(p))
	for i := range out {
		out[i] = math.NaN()
	}
	m := len(idx)
	run := 0.0
	for rank, i := range idx {
		adj := math.Min(1, float64(m-rank)*p[i])
		run = math.Max(run, adj)
		out[i] = run
	}
	return out
}

// Stars is the significance mark for an (adjusted) p-value: "***" below 0.001, "**" below 0.01, "*" below 0.05,
// "" otherwise (not significant).
func Stars(p float64) string {
	switch {
	case math.IsNaN(p):
		return ""
	case p < 0.001:
		return "***"
	case p < 0.01:
		return "**"
	case p < 0.05:
		return "*"
	}
	return ""
}
