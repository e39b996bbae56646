package stats

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// exactUpperTail computes P(X >= k), X ~ Binomial(n, 1/2), as an exact fraction: sum of C(n, i) for i >= k, over 2^n.
func exactUpperTail(n, k int) float64 {
	num := new(big.Int)
	for i := k; i <= n; i++ {
		num.Add(num, new(big.Int).Binomial(int64(n), int64(i)))
	}
	den := new(big.Int).Lsh(big.NewInt(1), uint(n))
	f, _ := new(big.Rat).SetFrac(num, den).Float64()
	return f
}

func TestMcNemarExactAgainstBinomialSums(t *testing.T) {
	cases := [][2]int{{48, 7}, {7, 48}, {28, 20}, {0, 0}, {0, 5}, {5, 0}, {1, 1}, {10, 10}, {3, 9}, {300, 200}, {40, 2}, {600, 500}, {530, 540}}
	for _, c := range cases {
		got := McNemarExact(c[0], c[1])
		want := exactUpperTail(c[0]+c[1], c[0])
		if math.Abs(got-want) > 1e-12*math.Max(want, 1e-300) && math.Abs(got-want) > 1e-15 {
			t.Errorf("McNemarExact(%d, %d) = %.17g, exact %.17g", c[0], c[1], got, want)
		}
		if rel := math.Abs(got-want) / want; want > 0 && rel > 1e-10 {
			t.Errorf("McNemarExact(%d, %d) relative error %g", c[0], c[1], rel)
		}
	}
	// The paper's LLMLingua-2 case: 48 issues only the anchor resolved, 7 only the baseline: p far below 0.001.
	if p := McNemarExact(48, 7); !(p < 1e-7) {
		t.Errorf("p(48,7) = %g, want < 1e-7", p)
	}
	if McNemarExact(0, 0) != 1 {
		t.Errorf("no discordant pairs must give p = 1")
	}
}

func TestHolmWorkedExample(t *testing.T) {
	// m = 4. Sorted: 0.01 (x4 = 0.04), 0.02 (x3 = 0.06), 0.03 (x2 = 0.06), 0.04 (x1 = 0.04 -> max so far 0.06).
	p := []float64{0.03, 0.01, 0.04, 0.02}
	want := []float64{0.06, 0.04, 0.06, 0.06}
	got := Holm(p)
	for i := range p {
		if math.Abs(got[i]-want[i]) > 1e-15 {
			t.Errorf("Holm[%d] = %v, want %v (all %v)", i, got[i], want[i], got)
		}
	}
	// Capping at 1 and NaN handling: NaN is left out of the family (m = 2).
	// m = 3: 0.01 x 3 = 0.03; 0.6 x 2 = 1.2, capped at 1; 0.7 x 1 = 0.7, raised to the running maximum 1.
	got = Holm([]float64{0.7, math.NaN(), 0.01, 0.6})
	if got[0] != 1 || !math.IsNaN(got[1]) || math.Abs(got[2]-0.03) > 1e-15 || got[3] != 1 {
		t.Errorf("Holm with NaN = %v, want [1 NaN 0.03 1]", got)
	}
}

func TestStars(t *testing.T) {
	for p, want := range map[float64]string{0.0005: "***", 0.005: "**", 0.03: "*", 0.05: "", 0.5: ""} {
		if got := Stars(p); got != want {
			t.Errorf("Stars(%v) = %q, want %q", p, got, want)
		}
	}
}

// TestBootstrapCoverage draws 200 synthetic datasets of 150 issues with a true resolve rate of 0.4 and counts how
// often the 95% interval contains 0.4. It uses 2,000 resamples instead of the report's 20,000 to stay fast; the
// percentile interval's coverage does not depend on that beyond Monte Carlo noise.
func TestBootstrapCoverage(t *testing.T) {
	const truth, n, datasets = 0.4, 150, 200
	r := rand.New(rand.NewPCG(7, 7))
	covered := 0
	for d := range datasets {
		v := make([]float64, n)
		for i := range v {
			if r.Float64() < truth {
				v[i] = 1
			}
		}
		iv := Bootstrap{Resamples: 2000, Seed: uint64(d)}.MeanCI(v, 0.95)
		if iv.Contains(truth) {
			covered++
		}
	}
	cov := float64(covered) / datasets
	if cov < 0.90 || cov > 0.99 {
		t.Errorf("coverage %.3f of the 95%% interval, want within [0.90, 0.99]", cov)
	}
	t.Logf("coverage %.3f", cov)
}

func TestBootstrapReproducibleAndSane(t *testing.T) {
	v := []float64{1, 0, 1, 1, 0, 0, 1, 0, 1, 1}
	a := Bootstrap{Resamples: 20000, Seed: 42}.MeanCI(v, 0.95)
	b := Bootstrap{Resamples: 20000, Seed: 42}.MeanCI(v, 0.95)
	if a != b {
		t.Fatalf("same seed, different intervals: %v %v", a, b)
	}
	if !(a.Lo < 0.6 && a.Hi > 0.6 && a.Lo >= 0 && a.Hi <= 1) {
		t.Errorf("interval %v should bracket the mean 0.6 within [0, 1]", a)
	}
	// Continuous values: another seed must give another (if close) interval, or the seed is not used.
	w := []float64{0.13, 0.72, 0.91, 0.05, 0.44, 0.38, 0.67, 0.29, 0.83, 0.51}
	c1 := Bootstrap{Resamples: 2000, Seed: 42}.MeanCI(w, 0.95)
	c2 := Bootstrap{Resamples: 2000, Seed: 43}.MeanCI(w, 0.95)
	if c1 == c2 {
		t.Errorf("another seed gave the very same interval %v", c1)
	}
	// All equal outcomes: the interval collapses onto the value.
	if iv := (Bootstrap{Resamples: 100, Seed: 1}).MeanCI([]float64{1, 1, 1}, 0.95); iv.Lo != 1 || iv.Hi != 1 {
		t.Errorf("constant data interval %v", iv)
	}
	// Paired: identical columns have a zero-width difference interval.
	if iv := (Bootstrap{Resamples: 100, Seed: 1}).PairedDiffCI(v, v, 0.95); iv.Lo != 0 || iv.Hi != 0 {
		t.Errorf("paired identical interval %v", iv)
	}
}

func TestQuantileType7(t *testing.T) {
	s := []float64{1, 2, 3, 4}
	// h = q (n-1): q=0.5 -> 1.5 -> 2.5; q=0.25 -> 0.75 -> 1.75.
	if Quantile(s, 0.5) != 2.5 || Quantile(s, 0.25) != 1.75 || Quantile(s, 1) != 4 || Quantile(s, 0) != 1 {
		t.Errorf("quantiles %v %v %v %v", Quantile(s, 0.5), Quantile(s, 0.25), Quantile(s, 1), Quantile(s, 0))
	}
	if Median([]float64{5, 1, 3}) != 3 {
		t.Errorf("median")
	}
}

// synthLogit draws n observations from P(y=1) = sigmoid(b0 + b1 x1 + b2 x2) with x1 ~ U(0,1), x2 ~ N(0,1).
func synthLogit(n int, b []float64, seed uint64) ([][]float64, []float64) {
	r := rand.New(rand.NewPCG(seed, 1))
	x := make([][]float64, n)
	y := make([]float64, n)
	for i := range n {
		x[i] = []float64{r.Float64(), r.NormFloat64()}
		if r.Float64() < sigmoid(b[0]+b[1]*x[i][0]+b[2]*x[i][1]) {
			y[i] = 1
		}
	}
	return x, y
}

func TestLogisticRecoversKnownCoefficients(t *testing.T) {
	truth := []float64{-1.5, 2.5, -0.8}
	x, y := synthLogit(40000, truth, 3)
	for _, firth := range []bool{false, true} {
		fit, err := FitLogistic(x, y, LogitOptions{Firth: firth})
		if err != nil {
			t.Fatal(err)
		}
		if !fit.Converged || fit.Separated {
			t.Fatalf("firth=%v: converged=%v separated=%v", firth, fit.Converged, fit.Separated)
		}
		for j := range truth {
			// With 40,000 draws the standard errors are about 0.02-0.05; allow four of them.
			if math.Abs(fit.Coef[j]-truth[j]) > 4*fit.SE[j] {
				t.Errorf("firth=%v coef %d = %.3f ± %.3f, truth %.3f", firth, j, fit.Coef[j], fit.SE[j], truth[j])
			}
		}
	}
}

// TestLogisticScoreIsZero checks the defining property of the maximum-likelihood estimate on a small, not separated
// data set: the gradient X'(y - p) vanishes.
func TestLogisticScoreIsZero(t *testing.T) {
	x := [][]float64{{0.1, 3}, {0.4, 1}, {0.5, 2}, {0.9, 0}, {0.3, 1}, {0.7, 2}, {0.2, 0}, {0.8, 3}, {0.6, 1}, {0.35, 2}}
	y := []float64{0, 0, 1, 1, 1, 0, 0, 1, 1, 0}
	fit, err := FitLogistic(x, y, LogitOptions{})
	if err != nil || !fit.Converged {
		t.Fatalf("fit: %v converged=%v", err, fit.Converged)
	}
	grad := make([]float64, 3)
	for i := range x {
		r := y[i] - fit.Prob(x[i])
		grad[0] += r
		grad[1] += r * x[i][0]
		grad[2] += r * x[i][1]
	}
	for j, g := range grad {
		if math.Abs(g) > 1e-9 {
			t.Errorf("score[%d] = %g at the estimate, want 0", j, g)
		}
	}
	// With only an intercept-like signal the MLE is the logit of the mean; check it on one feature of pure noise:
	// the fitted probabilities must average to the observed rate (the intercept's score equation).
	sum := 0.0
	for i := range x {
		sum += fit.Prob(x[i])
	}
	if math.Abs(sum-5) > 1e-9 {
		t.Errorf("fitted probabilities sum to %v, want 5 (the number of successes)", sum)
	}
}

func TestLogisticSeparation(t *testing.T) {
	// rho separates the outcomes exactly: plain ML diverges, Firth stays finite and ordered.
	x := [][]float64{{0}, {0}, {0}, {0.2}, {1}, {1}, {0.9}, {1}}
	y := []float64{0, 0, 0, 0, 1, 1, 1, 1}
	plain, err := FitLogistic(x, y, LogitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !plain.Separated {
		t.Errorf("plain fit on separated data not flagged: %+v", plain)
	}
	firth, err := FitLogistic(x, y, LogitOptions{Firth: true})
	if err != nil {
		t.Fatal(err)
	}
	if !firth.Converged || math.IsInf(firth.Coef[1], 0) || firth.Coef[1] <= 0 || firth.Coef[1] > 50 {
		t.Errorf("firth fit %+v", firth)
	}
	if p0, p1 := firth.Prob([]float64{0}), firth.Prob([]float64{1}); !(p0 < 0.2 && p1 > 0.8) {
		t.Errorf("firth probabilities %v %v", p0, p1)
	}
	if _, err := FitLogistic([][]float64{{1}, {1}, {1}}, []float64{0, 1, 0}, LogitOptions{}); err == nil {
		t.Errorf("constant feature must be an error")
	}
}

// TestMcNemarExactGrid checks every b, c with b + c <= 80 against the exact fraction, down to tails of 2^-80.
func TestMcNemarExactGrid(t *testing.T) {
	for n := 0; n <= 80; n++ {
		for b := 0; b <= n; b++ {
			got, want := McNemarExact(b, n-b), exactUpperTail(n, b)
			if rel := math.Abs(got-want) / want; rel > 1e-10 {
				t.Fatalf("McNemarExact(%d, %d) = %.17g, exact %.17g (relative error %g)", b, n-b, got, want, rel)
			}
		}
	}
}
