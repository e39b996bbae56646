package stats

import (
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
)

// DefaultResamples is the paper's number of issue-level bootstrap resamples.
const DefaultResamples = 20000

// Bootstrap draws issue-level resamples: each resample picks n issues with replacement from the n observed ones.
// The same Seed gives the same intervals, so a report can be rebuilt bit for bit.
type Bootstrap struct {
	Resamples int
	Seed      uint64
}

// Interval is a two-sided percentile confidence interval.
type Interval struct {
	Lo float64 `json:"lo"`
	Hi float64 `json:"hi"`
}

// Contains reports whether v lies in the closed interval.
func (iv Interval) Contains(v float64) bool { return v >= iv.Lo && v <= iv.Hi }

// SeedFor derives a stream seed for one labelled quantity (a method, a comparison) from a base seed, so that adding
// a method to a report does not change the intervals of the others.
func SeedFor(base uint64, label string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(label))
	return base ^ h.Sum64()
}

func (b Bootstrap) rng() *rand.Rand { return rand.New(rand.NewPCG(b.Seed, 0x9e3779b97f4a7c15)) }

func (b Bootstrap) resamples() int {
	if b.Resamples <= 0 {
		return DefaultResamples
	}
	return b.Resamples
}

// MeanCI is the percentile interval at the given level (0.95) of the mean of values under issue-level resampling.
// With no values it returns NaNs.
func (b Bootstrap) MeanCI(values []float64, level float64) Interval {
	n := len(values)
	if n == 0 {
		return Interval{math.NaN(), math.NaN()}
	}
	r := b.rng()
	means := make([]float64, b.resamples())
	for k := range means {
		s := 0.0
		for range n {
			s += values[r.IntN(n)]
		}
		means[k] = s / float64(n)
	}
	return percentile(means, level)
}

// PairedDiffCI is the percentile interval of mean(a) - mean(b) when the issues (index i of both slices) are
// resampled together, as paired comparisons need. a and b must have the same length.
func (b Bootstrap) PairedDiffCI(a, c []float64, level float64) Interval {
	n := len(a)
	if n == 0 || len(c) != n {
		return Interval{math.NaN(), math.NaN()}
	}
	d := make([]float64, n)
	for i := range a {
		d[i] = a[i] - c[i]
	}
	return b.MeanCI(d, level)
}

// percentile sorts xs and returns the (1-level)/2 and (1+level)/2 quantiles, interpolating linearly between order
// statistics (Hyndman and Fan's type 7, the default of R and NumPy).
func percentile(xs []float64, level float64) Interval {
	slices.Sort(xs)
	alpha := (1 - level) / 2
	return Interval{Quantile(xs, alpha), Quantile(xs, 1-alpha)}
}

// Quantile returns the q-quantile of sorted xs (type 7). It returns NaN for an empty slice.
func Quantile(sorted []float64, q float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	h := q * float64(n-1)
	lo := int(math.Floor(h))
	if lo >= n-1 {
		return sorted[n-1]
	}
	if lo < 0 {
		return sorted[0]
	}
	return sorted[lo] + (h-float64(lo))*(sorted[lo+1]-sorted[lo])
}

// Median returns the median of xs without changing it; NaN when empty.
func Median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return Quantile(s, 0.5)
}
