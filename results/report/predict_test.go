package report

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ctxlab/results"
	"ctxlab/specs"
)

// synthRows makes rows for methods whose outcomes follow one known logistic model of rho and epsilon, each method
// with its own feature distribution. withOutcome false leaves resolved null, as for a method measured but not
// graded yet.
func synthRows(method string, n int, rhoMean, epsMean float64, withOutcome bool, seed uint64) []results.Row {
	r := rand.New(rand.NewPCG(seed, 11))
	var rows []results.Row
	for i := range n {
		rho := math.Min(1, math.Max(0, rhoMean+0.3*(r.Float64()-0.5)))
		eps := math.Min(1, math.Max(0, epsMean+0.3*(r.Float64()-0.5)))
		p := 1 / (1 + math.Exp(-(-3 + 3*rho + 1.5*eps)))
		row := results.Row{results.FieldInstance: "i" + string(rune('A'+i/26)) + string(rune('a'+i%26)),
			results.FieldMethod: method, results.FieldModel: "m", specs.Rho.Name: rho, specs.Epsilon.Name: eps,
			specs.ContextTokens.Name: 1000.0, specs.Resolved.Name: nil}
		if withOutcome {
			row[specs.Resolved.Name] = r.Float64() < p
		}
		rows = append(rows, row)
	}
	return rows
}

func TestPredictFreezeAndCheck(t *testing.T) {
	var fitRows []results.Row
	fitRows = append(fitRows, synthRows("ret", 300, 0.3, 0.9, true, 1)...)
	fitRows = append(fitRows, synthRows("comp", 300, 0.8, 0.3, true, 2)...)
	fitRows = append(fitRows, synthRows("files", 300, 0.85, 0.95, true, 3)...)
	blind := synthRows("new", 300, 0.6, 0.7, false, 4)
	o := PredictOptions{Method: "new", Fit: []string{"ret", "comp", "files"},
		Features: []string{specs.Rho.Name, specs.Epsilon.Name}, Replicates: 400, Seed: 9, Source: "synthetic",
		Now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	p, err := Predict(append(append([]results.Row{}, fitRows...), blind...), o)
	if err != nil {
		t.Fatal(err)
	}
	// Truth: the mean of sigmoid(-3 + 3 rho + 1.5 eps) over the new method's features.
	truth := 0.0
	for _, r := range blind {
		rho, _ := r.Float(specs.Rho.Name)
		eps, _ := r.Float(specs.Epsilon.Name)
		truth += 100 / (1 + math.Exp(-(-3 + 3*rho + 1.5*eps)))
	}
	truth /= float64(len(blind))
	if p.OutcomesSeen != 0 || len(p.Issues) != 300 || !p.MeanInterval.Contains(truth) || math.Abs(p.PredictedPct-truth) > 4 {
		t.Errorf("prediction %.1f %v (mean %v), truth %.1f, outcomes seen %d", p.PredictedPct, p.Interval, p.MeanInterval, truth, p.OutcomesSeen)
	}
	if !(p.Interval.Lo <= p.MeanInterval.Lo && p.Interval.Hi >= p.MeanInterval.Hi) {
		t.Errorf("the prediction interval %v must contain the mean interval %v", p.Interval, p.MeanInterval)
	}
	dir := t.TempDir()
	path, err := p.Freeze(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(filepath.Base(path), "new.m.") {
		t.Errorf("file name %s", path)
	}
	preds, problems, err := LoadPredictions(dir)
	if err != nil || len(problems) != 0 || len(preds) != 1 {
		t.Fatalf("load: %v %v %d", err, problems, len(preds))
	}

	// Before grading: awaiting outcomes.
	rep, err := Build(append(append([]results.Row{}, fitRows...), blind...), nil, Options{Resamples: 100, Predictions: preds, Fit: o.Fit})
	if err != nil {
		t.Fatal(err)
	}
	if c := rep.Checks[0]; c.Graded != 0 || !strings.Contains(rep.Markdown(), "awaiting outcomes") {
		t.Errorf("ungraded check %+v", c)
	}
	// The method is graded; its outcomes follow the same model, so the observed rate falls inside the interval.
	graded := synthRows("new", 300, 0.6, 0.7, true, 4)
	rep, err = Build(append(append([]results.Row{}, fitRows...), graded...), nil, Options{Resamples: 100, Predictions: preds})
	if err != nil {
		t.Fatal(err)
	}
	c := rep.Checks[0]
	obs := 0.0
	for _, r := range graded {
		if v, _ := r.Bool(specs.Resolved.Name); v {
			obs++
		}
	}
	if c.Graded != 300 || math.Abs(c.ObservedPct-100*obs/300) > 1e-9 || !c.Inside || c.PredictedPct != p.PredictedPct {
		t.Errorf("check %+v (observed %v)", c, 100*obs/300)
	}
	// A prediction against a method whose outcomes behave differently falls outside.
	for _, r := range graded {
		r[specs.Resolved.Name] = true
	}
	rep, _ = Build(append(append([]results.Row{}, fitRows...), graded...), nil, Options{Resamples: 100, Predictions: preds})
	if rep.Checks[0].Inside {
		t.Errorf("all resolved is inside %v", rep.Checks[0].Interval)
	}

	// An edited file is refused.
	b, _ := os.ReadFile(path)
	_ = os.Chmod(path, 0o644)
	if err := os.WriteFile(path, []byte(strings.Replace(string(b), `"method": "new"`, `"method": "neW"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	preds, problems, _ = LoadPredictions(dir)
	if len(preds) != 0 || len(problems) != 1 || !strings.Contains(problems[0], "do not match the hash") {
		t.Errorf("tampered file: %d loaded, problems %v", len(preds), problems)
	}
}

func TestPredictErrors(t *testing.T) {
	rows := append(synthRows("a", 50, 0.3, 0.9, true, 1), synthRows("b", 50, 0.8, 0.3, true, 2)...)
	for _, c := range []struct {
		o    PredictOptions
		want string
	}{
		{PredictOptions{Method: "a", Fit: []string{"a", "b"}}, "among the fit methods"},
		{PredictOptions{Method: "zzz", Fit: []string{"a"}}, "has no rows"},
		{PredictOptions{Method: "b"}, "--fit"},
		{PredictOptions{Method: "b", Fit: []string{"q"}}, "fit methods without rows under model m: q"},
	} {
		if _, err := Predict(rows, c.o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.o, err, c.want)
		}
	}
	// The outcomes of the target are counted when they already exist.
	p, err := Predict(rows, PredictOptions{Method: "b", Fit: []string{"a"}, Features: []string{specs.Rho.Name},
		Replicates: 50})
	if err != nil {
		t.Fatal(err)
	}
	if p.OutcomesSeen != 50 {
		t.Errorf("outcomes seen %d", p.OutcomesSeen)
	}
}
