package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// subsetsPassAtK is pass@k by enumeration: of every k-subset of the n samples (the first c resolved), the share
// holding a resolved one.
func subsetsPassAtK(n, c, k int) float64 {
	hit, all := 0, 0
	var pick func(from, left int, any bool)
	pick = func(from, left int, any bool) {
		if left == 0 {
			all++
			if any {
				hit++
			}
			return
		}
		for i := from; i <= n-left; i++ {
			pick(i+1, left-1, any || i < c)
		}
	}
	pick(0, k, false)
	return float64(hit) / float64(all)
}

func TestPassAtKAgainstEnumeration(t *testing.T) {
	for n := 1; n <= 10; n++ {
		for c := 0; c <= n; c++ {
			for k := 1; k <= n; k++ {
				got, want := PassAtK(n, c, k), subsetsPassAtK(n, c, k)
				if math.Abs(got-want) > 1e-12 {
					t.Errorf("pass@%d with %d of %d resolved: %v, enumeration says %v", k, c, n, got, want)
				}
			}
		}
	}
	for _, bad := range [][3]int{{3, 1, 0}, {3, 1, 4}, {3, 4, 1}, {3, -1, 1}} {
		if !math.IsNaN(PassAtK(bad[0], bad[1], bad[2])) {
			t.Errorf("PassAtK%v is a number", bad)
		}
	}
	// Large n: the product form stays finite where C(200, 100) overflows a float64's exact integers.
	if got := PassAtK(200, 1, 100); math.Abs(got-0.5) > 1e-12 {
		t.Errorf("pass@100 of 200 with one resolved: %v, want 1/2", got)
	}
}

// TestSampleRatesByHand: five issues of three samples each, counted by hand.
//
//	issue  outcomes  resolved  majority  any  flips
//	a      1 1 1     3         yes       yes  no
//	b      1 0 0     1         no        yes  yes
//	c      0 0 0     0         no        no   no
//	d      1 1 0     2         yes       yes  yes
//	e      0 1 0     1         no        yes  yes
//
// majority 2/5, any 4/5, flip 3/5; pass@1 = mean(3,1,0,2,1)/3 = 7/15; pass@2 = mean(1, 2/3, 0, 1, 2/3) = 10/15.
func TestSampleRatesByHand(t *testing.T) {
	issues := []SampleCounts{{3, 3}, {3, 1}, {3, 0}, {3, 2}, {3, 1}}
	near := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-12 {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	near("majority", MajorityRate(issues), 2.0/5)
	near("any", AnyRate(issues), 4.0/5)
	near("flip", FlipRate(issues), 3.0/5)
	p1, used := MeanPassAtK(issues, 1)
	near("pass@1", p1, 7.0/15)
	p2, _ := MeanPassAtK(issues, 2)
	near("pass@2", p2, 10.0/15)
	p3, _ := MeanPassAtK(issues, 3)
	near("pass@3 (any of all 3)", p3, AnyRate(issues))
	if used != 5 {
		t.Errorf("pass@1 over %d issues", used)
	}
	// A tie is no majority; an issue of one sample never flips and is left out of the flip rate.
	near("majority with a tie", MajorityRate([]SampleCounts{{2, 1}, {2, 2}}), 0.5)
	near("flip without single samples", FlipRate([]SampleCounts{{1, 1}, {2, 1}, {2, 0}}), 0.5)
	if p, n := MeanPassAtK([]SampleCounts{{2, 1}}, 3); !math.IsNaN(p) || n != 0 {
		t.Errorf("pass@3 of two samples: %v over %d issues", p, n)
	}
}

// TestFlipRateCIResamplesIssues: the interval matches a reference that resamples the issues' raw outcome lists and
// recounts disagreement in each resample (another generator, so agreement is within Monte Carlo error), holds the
// estimate, and is a point when every issue flips.
func TestFlipRateCIResamplesIssues(t *testing.T) {
	outcomes := [][]bool{}
	r := rand.New(rand.NewPCG(7, 11))
	for range 60 {
		o := make([]bool, 4)
		p := r.Float64()
		for j := range o {
			o[j] = r.Float64() < p
		}
		outcomes = append(outcomes, o)
	}
	issues := make([]SampleCounts, len(outcomes))
	for i, o := range outcomes {
		for _, ok := range o {
			issues[i].N++
			if ok {
				issues[i].C++
			}
		}
	}
	const resamples = 20000
	got := Bootstrap{Resamples: resamples, Seed: 1}.FlipRateCI(issues, 0.95)
	ref := make([]float64, resamples)
	rr := rand.New(rand.NewPCG(99, 3))
	for b := range ref {
		disagree := 0
		for range outcomes {
			o := outcomes[rr.IntN(len(outcomes))]
			if slices.Contains(o, true) && slices.Contains(o, false) {
				disagree++
			}
		}
		ref[b] = float64(disagree) / float64(len(outcomes))
	}
	slices.Sort(ref)
	lo, hi := Quantile(ref, 0.025), Quantile(ref, 0.975)
	if math.Abs(got.Lo-lo) > 0.02 || math.Abs(got.Hi-hi) > 0.02 {
		t.Errorf("interval %+v, the reference's [%v, %v]", got, lo, hi)
	}
	if est := FlipRate(issues); !got.Contains(est) || got.Hi-got.Lo < 0.05 {
		t.Errorf("interval %+v around the estimate %v", got, est)
	}
	all := Bootstrap{Resamples: 100}.FlipRateCI([]SampleCounts{{2, 1}, {3, 2}}, 0.95)
	if all.Lo != 1 || all.Hi != 1 {
		t.Errorf("every issue flips: %+v", all)
	}
}
