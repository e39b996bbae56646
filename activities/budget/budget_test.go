package budget

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// lines models a retriever: knob = lines taken, each line costing its own token count.
func lines(costs []int) func(float64) (int, error) {
	return func(x float64) (int, error) {
		n := 0
		for _, c := range costs[:int(x)] {
			n += c
		}
		return n, nil
	}
}

func TestConvergesOnIntegerKnob(t *testing.T) {
	costs := make([]int, 20000)
	for i := range costs {
		costs[i] = 3 + (i*7919)%17 // 3..19 tokens a line, irregular
	}
	for _, target := range []int{400, 1000, 13800, 60000, 150000} {
		r, err := Fit(Problem{Target: target, Knob: Knob{Lo: 0, Hi: float64(len(costs)), Integer: true, Guess: 100}},
			lines(costs))
		if err != nil {
			t.Fatal(err)
		}
		if !r.Reached || math.Abs(float64(r.Tokens-target)) > 0.02*float64(target) {
			t.Errorf("target %d: %+v", target, r)
		}
		if r.Evals > 12 {
			t.Errorf("target %d took %d evaluations", target, r.Evals)
		}
		if n, _ := lines(costs)(r.Knob); n != r.Tokens {
			t.Errorf("target %d: knob %v gives %d, result says %d", target, r.Knob, n, r.Tokens)
		}
	}
}

func TestConvergesOnRate(t *testing.T) {
	// A compressor: tokens = round(5000 * rate^1.7), rate in [0.05, 1].
	f := func(x float64) (int, error) { return int(math.Round(5000 * math.Pow(x, 1.7))), nil }
	r, err := Fit(Problem{Target: 1200, Tolerance: 0.01, Knob: Knob{Lo: 0.05, Hi: 1, Guess: 0.9}}, f)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Reached || r.Tokens < 1188 || r.Tokens > 1212 || r.Evals > 8 {
		t.Errorf("%+v", r)
	}
}

func TestUnreachable(t *testing.T) {
	small := lines([]int{10, 10, 10})
	r, err := Fit(Problem{Target: 1000, Knob: Knob{Lo: 0, Hi: 3, Integer: true}}, small)
	if err != nil || r.Reached || r.Tokens != 30 || !strings.Contains(r.Why, "largest knob value 3 gives 30") {
		t.Errorf("budget over the maximum: %+v %v", r, err)
	}
	// One chunk of 500 tokens and a 100-token budget: every knob is under or far over.
	jump := lines([]int{500, 5})
	r, err = Fit(Problem{Target: 100, Knob: Knob{Lo: 0, Hi: 2, Integer: true}}, jump)
	if err != nil || r.Reached || r.Tokens != 0 || !strings.Contains(r.Why, "no knob value gives 98-102") {
		t.Errorf("window between two knob values: %+v %v", r, err)
	}
	// The least the method can show is already over.
	floor := func(x float64) (int, error) { return 400 + int(x), nil }
	r, err = Fit(Problem{Target: 100, Knob: Knob{Lo: 0, Hi: 10, Integer: true}}, floor)
	if err != nil || r.Reached || r.Tokens != 400 || !strings.Contains(r.Why, "smallest knob value 0 gives 400") {
		t.Errorf("budget under the minimum: %+v %v", r, err)
	}
	if r.Evals > 4 {
		t.Errorf("an unreachable budget took %d evaluations", r.Evals)
	}
	// A continuous knob whose least value is over the budget: the fit must try the end of the range itself.
	rate := func(x float64) (int, error) { return 1000 + int(20000*x), nil }
	r, err = Fit(Problem{Target: 600, Knob: Knob{Lo: 0.05, Hi: 1, Guess: 0.5}}, rate)
	if err != nil || r.Reached || r.Tokens != 2000 || !strings.Contains(r.Why, "smallest knob value 0.05 gives 2000") ||
		r.Evals > 6 {
		t.Errorf("rate over the budget at its minimum: %+v %v", r, err)
	}
}

func TestEvalErrorEndsFit(t *testing.T) {
	boom := errors.New("boom")
	_, err := Fit(Problem{Target: 10, Knob: Knob{Lo: 0, Hi: 1}}, func(float64) (int, error) { return 0, boom })
	if !errors.Is(err, boom) {
		t.Errorf("err = %v", err)
	}
	if _, err := Fit(Problem{Target: 10, Knob: Knob{Lo: 2, Hi: 1}}, nil); err == nil {
		t.Error("empty range accepted")
	}
}

// TestGrowingNeverFallsBackToTheLowEnd: on a repository of SWE-bench's size (438K lines, so 2% of the range is
// 8,760 lines) a guess of 250 lines that gives too few tokens must grow from there. The edge rule (try the range's
// end when the next value is close to it) once snapped such a step to the low end, 0, throwing the bracket's low
// end away; the next step from 0 was an eighth of the range: 54,750 lines of text counted for a budget of 400.
func TestGrowingNeverFallsBackToTheLowEnd(t *testing.T) {
	var tried []float64
	res, err := Fit(Problem{Target: 20000, Knob: Knob{Lo: 0, Hi: 438000, Integer: true, Guess: 250}},
		func(x float64) (int, error) {
			tried = append(tried, x)
			return int(50 * x), nil
		})
	if err != nil || !res.Reached {
		t.Fatalf("fit: %+v, %v", res, err)
	}
	for _, x := range tried {
		if x < 250 || x > 1000 {
			t.Errorf("tried %v lines (all tried: %v): a fit of 400 lines from a guess of 250 needs neither fewer "+
				"than the guess nor thousands", x, tried)
		}
	}
	// Shrinking still tries the low end when the next value is close to it.
	tried = nil
	if _, err := Fit(Problem{Target: 100, Knob: Knob{Lo: 0, Hi: 438000, Integer: true, Guess: 250}},
		func(x float64) (int, error) {
			tried = append(tried, x)
			return int(50*x) + 150, nil
		}); err != nil {
		t.Fatal(err)
	}
	if len(tried) < 2 || tried[1] != 0 {
		t.Errorf("shrinking from 250 lines toward a budget under one line tried %v, want the low end second", tried)
	}
}
