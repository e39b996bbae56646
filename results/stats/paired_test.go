package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// rawIssue is one issue's sample outcomes of two methods, as rows would give them.
type rawIssue struct{ a, b []bool }

func counts(outcomes []bool) SampleCounts {
	s := SampleCounts{N: len(outcomes)}
	for _, ok := range outcomes {
		if ok {
			s.C++
		}
	}
	return s
}

func pairedIssues(raw []rawIssue) []PairedIssue {
	out := make([]PairedIssue, len(raw))
	for i, r := range raw {
		out[i] = PairedIssue{A: counts(r.a), B: counts(r.b)}
	}
	return out
}

// referencePairedCI is the paired bootstrap written out by a plain loop over the raw samples: each resample draws
// n issue indices (the generator Bootstrap documents: PCG seeded with the seed and the golden-ratio constant, one
// IntN(n) per draw), pools every sample of each drawn issue, and takes the mean over the drawn issues of (A's
// resolved samples / A's samples) - (B's / B's); the interval is the type-7 quantiles of the sorted differences.
func referencePairedCI(raw []rawIssue, seed uint64, resamples int, level float64) (lo, hi float64) {
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	n := len(raw)
	diffs := make([]float64, resamples)
	for k := range diffs {
		total := 0.0
		for range n {
			is := raw[r.IntN(n)]
			resolvedA, resolvedB := 0, 0
			for _, ok := range is.a {
				if ok {
					resolvedA++
				}
			}
			for _, ok := range is.b {
				if ok {
					resolvedB++
				}
			}
			total += float64(resolvedA)/float64(len(is.a)) - float64(resolvedB)/float64(len(is.b))
		}
		diffs[k] = total / float64(n)
	}
	slices.Sort(diffs)
	q := func(p float64) float64 {
		h := p * float64(resamples-1)
		i := int(h)
		if i+1 >= resamples {
			return diffs[resamples-1]
		}
		return diffs[i] + (h-float64(i))*(diffs[i+1]-diffs[i])
	}
	return q((1 - level) / 2), q((1 + level) / 2)
}

// randomRaw draws issues with 1..kA samples of A and 1..kB of B (missing samples make N vary by issue).
func randomRaw(r *rand.Rand, issues, kA, kB int) []rawIssue {
	raw := make([]rawIssue, issues)
	for i := range raw {
		pa, pb := r.Float64(), r.Float64()
		for range 1 + r.IntN(kA) {
			raw[i].a = append(raw[i].a, r.Float64() < pa)
		}
		for range 1 + r.IntN(kB) {
			raw[i].b = append(raw[i].b, r.Float64() < pb)
		}
	}
	return raw
}

// TestPairedPerIssueMeansAgainstReference: the difference, its interval and the sign counts against the plain loop
// above, on methods of different k with missing samples, at the report's 20,000 resamples.
func TestPairedPerIssueMeansAgainstReference(t *testing.T) {
	gen := rand.New(rand.NewPCG(42, 1))
	for trial, shape := range [][3]int{{30, 3, 1}, {12, 5, 3}, {50, 1, 1}, {7, 4, 4}} {
		raw := randomRaw(gen, shape[0], shape[1], shape[2])
		seed := SeedFor(9, "trial") + uint64(trial)
		got := Bootstrap{Resamples: DefaultResamples, Seed: seed}.PairedPerIssueMeans(pairedIssues(raw), 0.95)
		lo, hi := referencePairedCI(raw, seed, DefaultResamples, 0.95)
		if math.Abs(got.CI.Lo-lo) > 1e-12 || math.Abs(got.CI.Hi-hi) > 1e-12 {
			t.Errorf("trial %d: interval %+v, reference [%v, %v]", trial, got.CI, lo, hi)
		}
		sumA, sumB, higherA, higherB := 0.0, 0.0, 0, 0
		for _, is := range raw {
			ma, mb := counts(is.a).Mean(), counts(is.b).Mean()
			sumA, sumB = sumA+ma, sumB+mb
			if ma > mb {
				higherA++
			} else if mb > ma {
				higherB++
			}
		}
		n := float64(len(raw))
		if got.Issues != len(raw) || math.Abs(got.A-sumA/n) > 1e-12 || math.Abs(got.B-sumB/n) > 1e-12 ||
			got.AHigher != higherA || got.BHigher != higherB {
			t.Errorf("trial %d: %+v; want A %v B %v, %d-%d", trial, got, sumA/n, sumB/n, higherA, higherB)
		}
		if !got.CI.Contains(got.A - got.B) {
			t.Errorf("trial %d: interval %+v misses its own difference %v", trial, got.CI, got.A-got.B)
		}
	}
}

// TestPairedPerIssueMeansExactCases: identical methods differ by 0 with the interval [0, 0] and no signs; a
// method that resolves every sample against one that resolves none differs by 1 on every resample.
func TestPairedPerIssueMeansExactCases(t *testing.T) {
	gen := rand.New(rand.NewPCG(7, 7))
	raw := randomRaw(gen, 20, 4, 1)
	same := make([]rawIssue, len(raw))
	always := make([]rawIssue, len(raw))
	for i, is := range raw {
		same[i] = rawIssue{a: is.a, b: is.a}
		always[i] = rawIssue{a: slices.Repeat([]bool{true}, len(is.a)), b: make([]bool, len(is.b))}
	}
	b := Bootstrap{Resamples: 2000, Seed: 3}
	if got := b.PairedPerIssueMeans(pairedIssues(same), 0.95); got.A != got.B || got.CI != (Interval{0, 0}) ||
		got.AHigher != 0 || got.BHigher != 0 || SignTest(got.AHigher, got.BHigher) != 1 {
		t.Errorf("identical methods: %+v", got)
	}
	got := b.PairedPerIssueMeans(pairedIssues(always), 0.95)
	if got.A != 1 || got.B != 0 || got.CI != (Interval{1, 1}) || got.AHigher != 20 || got.BHigher != 0 {
		t.Errorf("always against never: %+v", got)
	}
	if p := SignTest(got.AHigher, got.BHigher); math.Abs(p-math.Pow(0.5, 20)) > 1e-18 {
		t.Errorf("sign test of 20 positive signs: %v, want 2^-20", p)
	}
}

// TestPairedResamplesIssuesWithTheirSamples: an issue's samples stay together. Data whose every issue repeats its
// one outcome k times give the same difference, interval and signs as the one-sample data, which a bootstrap that
// resampled sample rows (k times as many units) would not: its interval would narrow by about sqrt(k).
func TestPairedResamplesIssuesWithTheirSamples(t *testing.T) {
	gen := rand.New(rand.NewPCG(11, 2))
	one := randomRaw(gen, 25, 1, 1)
	repeated := make([]rawIssue, len(one))
	for i, is := range one {
		repeated[i] = rawIssue{a: slices.Repeat(is.a, 5), b: slices.Repeat(is.b, 3)}
	}
	b := Bootstrap{Resamples: DefaultResamples, Seed: 5}
	want := b.PairedPerIssueMeans(pairedIssues(one), 0.95)
	got := b.PairedPerIssueMeans(pairedIssues(repeated), 0.95)
	if got != want {
		t.Errorf("5 and 3 copies of each outcome: %+v; one sample each: %+v", got, want)
	}
	if want.CI.Hi-want.CI.Lo < 0.1 {
		t.Fatalf("interval %+v too narrow to tell resampling units apart", want.CI)
	}
	// The same data flattened to one unit per sample pair (15 per issue) is what resampling rows would do.
	var flatA, flatB []float64
	for _, is := range one {
		for range 15 {
			flatA, flatB = append(flatA, boolFloat(is.a[0])), append(flatB, boolFloat(is.b[0]))
		}
	}
	rows := b.PairedDiffCI(flatA, flatB, 0.95)
	if rows.Hi-rows.Lo > 0.5*(want.CI.Hi-want.CI.Lo) {
		t.Errorf("row-level interval %+v not narrower than the issue-level %+v: the test cannot tell them apart",
			rows, want.CI)
	}
}

// TestSignTestIsMcNemarOnBinaryPairs: on one sample each, the sign counts are McNemar's discordant pairs and the
// sign test's p its exact p; on fractional means, the p is the binomial tail counted by hand.
func TestSignTestIsMcNemarOnBinaryPairs(t *testing.T) {
	raw := []rawIssue{{[]bool{true}, []bool{false}}, {[]bool{true}, []bool{false}}, {[]bool{true}, []bool{false}},
		{[]bool{false}, []bool{true}}, {[]bool{true}, []bool{true}}, {[]bool{false}, []bool{false}}}
	got := Bootstrap{Resamples: 100}.PairedPerIssueMeans(pairedIssues(raw), 0.95)
	if got.AHigher != 3 || got.BHigher != 1 || SignTest(got.AHigher, got.BHigher) != McNemarExact(3, 1) {
		t.Errorf("binary pairs: %+v", got)
	}
	// Means 2/3 vs 1/3, 1/3 vs 0, 1/2 vs 1/2 (a tie), 0 vs 1/3: 2 higher for A, 1 for B; P(X >= 2), X ~ Bin(3,
	// 1/2) = 4/8.
	fr := []PairedIssue{{SampleCounts{3, 2}, SampleCounts{3, 1}}, {SampleCounts{3, 1}, SampleCounts{2, 0}},
		{SampleCounts{2, 1}, SampleCounts{4, 2}}, {SampleCounts{3, 0}, SampleCounts{3, 1}}}
	pm := Bootstrap{Resamples: 100}.PairedPerIssueMeans(fr, 0.95)
	if pm.AHigher != 2 || pm.BHigher != 1 || math.Abs(SignTest(pm.AHigher, pm.BHigher)-0.5) > 1e-12 {
		t.Errorf("fractional means: %+v, p %v", pm, SignTest(pm.AHigher, pm.BHigher))
	}
}

// TestPairedWorkedExample is docs/methods.md's example: a method of one sample against one of three on four issues,
// per-issue differences +2/3, −1/3, −1/3, 0. The exact bootstrap distribution, by enumerating all 4^4 equally likely
// resamples, has its 2.5% point at −1/3 (P(mean <= −1/3) = 16/256) and its 97.5% point at 5/12 (P(mean <= 1/3) =
// 243/256 < 0.975 <= P(mean <= 5/12) = 251/256); 20,000 resamples land on both for any seed tried.
func TestPairedWorkedExample(t *testing.T) {
	issues := []PairedIssue{{SampleCounts{1, 1}, SampleCounts{3, 1}}, {SampleCounts{1, 0}, SampleCounts{3, 1}},
		{SampleCounts{1, 0}, SampleCounts{3, 1}}, {SampleCounts{1, 0}, SampleCounts{3, 0}}}
	d := make([]float64, len(issues))
	for i, is := range issues {
		d[i] = is.A.Mean() - is.B.Mean()
	}
	var means []float64
	for code := range 256 {
		s := 0.0
		for j := 0; j < 4; j++ {
			s += d[code>>(2*j)&3]
		}
		means = append(means, s/4)
	}
	slices.Sort(means)
	exact := func(level float64) float64 { // smallest mean whose CDF reaches level
		for i, m := range means {
			if float64(i+1)/256 >= level {
				return m
			}
		}
		return means[len(means)-1]
	}
	lo, hi := exact(0.025), exact(0.975)
	if math.Abs(lo+1.0/3) > 1e-12 || math.Abs(hi-5.0/12) > 1e-12 {
		t.Fatalf("exact bootstrap quantiles [%v, %v], the docs say [-1/3, 5/12]", lo, hi)
	}
	for seed := range uint64(5) {
		got := Bootstrap{Resamples: DefaultResamples, Seed: seed}.PairedPerIssueMeans(issues, 0.95)
		if math.Abs(got.CI.Lo-lo) > 1e-12 || math.Abs(got.CI.Hi-hi) > 1e-12 || got.A != 0.25 ||
			math.Abs(got.B-0.25) > 1e-12 || got.AHigher != 1 || got.BHigher != 2 {
			t.Errorf("seed %d: %+v, want 25%% each, 1-2 signs, interval [%v, %v]", seed, got, lo, hi)
		}
	}
	if p := SignTest(2, 1); math.Abs(p-0.5) > 1e-12 {
		t.Errorf("sign test 2 of 3: %v, want 1/2", p)
	}
}
