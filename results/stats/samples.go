package stats

import (
	"math"
)

// SampleCounts are one issue's patch samples: N drawn, C of them resolved.
type SampleCounts struct{ N, C int }

// PassAtK is the unbiased estimator of the chance that at least one of k samples drawn without replacement from an
// issue's n samples, c of them resolved, resolves it: 1 - C(n-c, k) / C(n, k) (Chen et al., 2021), computed as
// 1 - prod_{i=n-c+1..n} (1 - k/i) to stay exact where the binomials overflow. NaN when k is not in 1..n.
func PassAtK(n, c, k int) float64 {
	if k < 1 || k > n || c < 0 || c > n {
		return math.NaN()
	}
	if n-c < k {
		return 1
	}
	miss := 1.0
	for i := n - c + 1; i <= n; i++ {
		miss *= 1 - float64(k)/float64(i)
	}
	return 1 - miss
}

// MeanPassAtK is PassAtK averaged over the issues that have at least k samples, and how many those are; NaN when
// none has.
func MeanPassAtK(issues []SampleCounts, k int) (float64, int) {
	s, used := 0.0, 0
	for _, is := range issues {
		if is.N >= k {
			s += PassAtK(is.N, is.C, k)
			used++
		}
	}
	if used == 0 {
		return math.NaN(), 0
	}
	return s / float64(used), used
}

// shareOf is the share of issues with at least min samples for which keep holds; NaN when none has.
func shareOf(issues []SampleCounts, min int, keep func(SampleCounts) bool) float64 {
	n, yes := 0, 0
	for _, is := range issues {
		if is.N < min {
			continue
		}
		n++
		if keep(is) {
			yes++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return float64(yes) / float64(n)
}

// MajorityRate is the share of issues that a strict majority of their samples resolve (2C > N: a tie is not).
func MajorityRate(issues []SampleCounts) float64 {
	return shareOf(issues, 1, func(is SampleCounts) bool { return 2*is.C > is.N })
}

// AnyRate is the share of issues that at least one of their samples resolves.
func AnyRate(issues []SampleCounts) float64 {
	return shareOf(issues, 1, func(is SampleCounts) bool { return is.C > 0 })
}

// FlipRate is the share of issues, among those with two samples or more, whose samples disagree (some resolve it,
// some do not).
func FlipRate(issues []SampleCounts) float64 {
	return shareOf(issues, 2, flips)
}

func flips(is SampleCounts) bool { return is.C > 0 && is.C < is.N }

// FlipRateCI is the percentile interval at level of FlipRate when issues are resampled with replacement, each
// with all its samples (the samples of one issue are not independent draws of the population of issues).
func (b Bootstrap) FlipRateCI(issues []SampleCounts, level float64) Interval {
	var flipped []float64
	for _, is := range issues {
		if is.N >= 2 {
			flipped = append(flipped, boolFloat(flips(is)))
		}
	}
	return b.MeanCI(flipped, level)
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
