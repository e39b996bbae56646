package report

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"ctxlab/results"
	"ctxlab/results/stats"
)

// Regression is the logistic regression of resolve on context features under one model.
type Regression struct {
	Model string
	// Methods it was fitted on; Features used, and features left out with the reason.
	Methods  []string
	Features []string
	Dropped  []string
	// N rows fitted; Skipped rows of the fitted methods that lacked a feature.
	N, Skipped int
	Coefs      []Coef
	Converged  bool
	// Err says why there is no fit (too few rows, singular design), when there is none.
	Err string
	// Calibration compares, per method under the model, the observed resolve rate with the mean fitted probability.
	Calibration []Calibration
}

// Coef is one coefficient with its Wald statistics.
type Coef struct {
	Name             string
	Estimate, SE     float64
	Z, P             float64
	OddsRatioPerUnit float64
}

// Calibration is one method's observed vs predicted resolve rate (in percent) on its rows that carry every feature.
type Calibration struct {
	Method       string
	Fitted       bool
	N            int
	ObservedPct  float64
	PredictedPct float64
}

// featureValue reads one feature of a row: a declared term (specs.Features) as it says, any other name as a
// numeric row field.
func featureValue(r results.Row, name string) (float64, bool) {
	f, ok := declaredFeatures[name]
	if !ok {
		return r.Float(name)
	}
	v, ok := r.Float(f.Field.Name)
	if !f.Log1p {
		return v, ok
	}
	if !ok || v < 0 {
		return 0, false
	}
	return math.Log1p(v), true
}

func featureVector(r results.Row, names []string) ([]float64, bool) {
	x := make([]float64, len(names))
	for j, n := range names {
		v, ok := featureValue(r, n)
		if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, false
		}
		x[j] = v
	}
	return x, true
}

// fitData is the design of a regression: the rows of the fit methods under one model that carry every usable
// feature.
type fitData struct {
	features, dropped []string
	rows              []results.Row
	x                 [][]float64
	y                 []float64
	skipped           int
}

// buildFitData drops features that some fit method carries on none of its rows (the fit could not use them for
// that method), keeps the rows that carry all the others, then drops features that are constant on those rows (a
// constant has no coefficient to estimate).
func buildFitData(g grouped, model string, methods, features []string) fitData {
	var d fitData
	var rows []results.Row
	for _, m := range methods {
		rows = append(rows, g.rows_[results.Key{Method: m, Model: model}]...)
	}
	for _, f := range features {
		var lacking []string
		for _, m := range methods {
			carried := false
			for _, r := range g.rows_[results.Key{Method: m, Model: model}] {
				if _, ok := featureValue(r, f); ok {
					carried = true
					break
				}
			}
			if !carried {
				lacking = append(lacking, m)
			}
		}
		if len(lacking) == 0 {
			d.features = append(d.features, f)
		} else {
			d.dropped = append(d.dropped, f+" (no row of "+strings.Join(lacking, ", ")+" carries it)")
		}
	}
	var kept []results.Row
	for _, r := range rows {
		if _, ok := featureVector(r, d.features); ok {
			kept = append(kept, r)
		} else {
			d.skipped++
		}
	}
	var use []string
	for j, f := range d.features {
		var lo, hi = math.Inf(1), math.Inf(-1)
		for _, r := range kept {
			v, _ := featureValue(r, d.features[j])
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
		if len(kept) > 0 && lo == hi {
			d.dropped = append(d.dropped, fmt.Sprintf("%s (constant %g on the fitted rows)", f, lo))
			continue
		}
		use = append(use, f)
	}
	d.features = use
	for _, r := range kept {
		x, _ := featureVector(r, d.features)
		d.rows = append(d.rows, r)
		d.x = append(d.x, x)
		d.y = append(d.y, b2f(resolved(r)))
	}
	return d
}

// fitMethods resolves the --fit list against the methods of a model; empty means all of them.
func fitMethods(g grouped, model string, fit []string) ([]string, error) {
	var have []string
	for _, k := range g.keys {
		if k.Model == model {
			have = append(have, k.Method)
		}
	}
	if len(fit) == 0 {
		return have, nil
	}
	var missing []string
	for _, m := range fit {
		if !slices.Contains(have, m) {
			missing = append(missing, m)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("fit methods without rows under model %s: %s (methods: %s)", model,
			strings.Join(missing, ", "), strings.Join(have, ", "))
	}
	return fit, nil
}

// logitOptions is the estimator every report and prediction uses: Firth's penalised likelihood, because a method
// that always (or never) resolves separates the outcomes and would send plain maximum-likelihood estimates to
// infinity.
var logitOptions = stats.LogitOptions{Firth: true}

func regressions(g grouped, o Options) []Regression {
	var out []Regression
	for _, model := range g.models {
		reg := Regression{Model: model}
		methods, err := fitMethods(g, model, o.Fit)
		if err != nil {
			reg.Err = err.Error()
			out = append(out, reg)
			continue
		}
		reg.Methods = methods
		d := buildFitData(g, model, methods, o.Features)
		reg.Features, reg.Dropped, reg.N, reg.Skipped = d.features, d.dropped, len(d.rows), d.skipped
		if len(d.features) == 0 {
			reg.Err = "no usable feature"
			out = append(out, reg)
			continue
		}
		fit, err := stats.FitLogistic(d.x, d.y, logitOptions)
		if err != nil {
			reg.Err = err.Error()
			out = append(out, reg)
			continue
		}
		reg.Converged = fit.Converged
		for j, name := range append([]string{"(intercept)"}, d.features...) {
			z, p := fit.Wald(j)
			reg.Coefs = append(reg.Coefs, Coef{Name: name, Estimate: fit.Coef[j], SE: fit.SE[j], Z: z, P: p,
				OddsRatioPerUnit: math.Exp(fit.Coef[j])})
		}
		for _, k := range g.keys {
			if k.Model != model {
				continue
			}
			c := Calibration{Method: k.Method, Fitted: slices.Contains(methods, k.Method)}
			obs, pred := 0.0, 0.0
			for _, r := range g.rows_[k] {
				x, ok := featureVector(r, d.features)
				if !ok {
					continue
				}
				c.N++
				obs += b2f(resolved(r))
				pred += fit.Prob(x)
			}
			if c.N > 0 {
				c.ObservedPct, c.PredictedPct = 100*obs/float64(c.N), 100*pred/float64(c.N)
				reg.Calibration = append(reg.Calibration, c)
			}
		}
		out = append(out, reg)
	}
	return out
}
