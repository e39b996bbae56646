package stats

import (
	"math"
	"slices"
)

// McNemarExact is the one-sided exact McNemar p-value for paired binary outcomes: with b pairs where only the first
// method succeeded and c where only the second did, it is P(X >= b) for X ~ Binomial(b+c, 1/2), the chance of at
// least b first-method wins among the discordant pairs if both methods were equally good. Concordant pairs carry no
// information and do not enter. b = c = 0 gives 1.
func McNemarExact(b, c int) float64 {
	if b < 0 || c < 0 {
		return math.NaN()
	}
	return binomialUpperHalf(b+c, b)
}

// binomialUpperHalf returns P(X >= k) for X ~ Binomial(n, 1/2) by summing the probabilities of k..n directly (never
// as 1 - CDF, which would lose small tails), from exact coefficients for n <= 1000 and from log-gamma beyond.
func binomialUpperHalf(n, k int) float64 {
	if k <= 0 {
		return 1
	}
	if k > n {
		return 0
	}
	if n <= 1000 {
		// Binomial coefficients by the recurrence C(n, i+1) = C(n, i)(n-i)/(i+1): exact integers up to n = 56,
		// within n ulps beyond, and no overflow below n = 1030. Dividing by 2^n is exact.
		c, s := 1.0, 0.0
		for i := 0; i <= n; i++ {
			if i >= k {
				s += c
			}
			c = c * float64(n-i) / float64(i+1)
		}
		return math.Min(1, math.Ldexp(s, -n))
	}
	lgn, _ := math.Lgamma(float64(n + 1))
	logHalf := float64(n) * math.Ln2
	// Sum from the largest term down for accuracy: terms shrink away from n/2.
	terms := make([]float64, 0, n-k+1)
	for i := k; i <= n; i++ {
		a, _ := math.Lgamma(float64(i + 1))
		b, _ := math.Lgamma(float64(n - i + 1))
		terms = append(terms, lgn-a-b-logHalf)
	}
	mx := slices.Max(terms)
	s := 0.0
	for _, t := range terms {
		s += math.Exp(t - mx)
	}
	return math.Min(1, math.Exp(mx)*s)
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
