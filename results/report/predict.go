package report

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/renameio/v2"

	"ctxlab/results"
	"ctxlab/results/stats"
)

// Prediction is a frozen forecast of a method's resolve rate from its context features, made before its patches
// are graded. It is written once to a file named by the SHA-256 of its bytes, so a later report can show that the
// forecast it checks is the one that was frozen.
type Prediction struct {
	Version    int       `json:"version"`
	Method     string    `json:"method"`
	Model      string    `json:"model"`
	Source     string    `json:"source"`
	FrozenAt   string    `json:"frozen_at"`
	Estimator  string    `json:"estimator"`
	FitMethods []string  `json:"fit_methods"`
	FitRows    int       `json:"fit_rows"`
	Features   []string  `json:"features"`
	Dropped    []string  `json:"dropped_features,omitempty"`
	Coef       []float64 `json:"coef"`
	// Replicates are coefficient vectors refitted on issue-level bootstrap resamples of the fit rows; with Seed they
	// give the intervals for any subset of the predicted issues.
	Replicates       [][]float64       `json:"replicates"`
	FailedReplicates int               `json:"failed_replicates,omitempty"`
	Seed             uint64            `json:"seed"`
	Level            float64           `json:"level"`
	Issues           []IssuePrediction `json:"issues"`
	// SkippedIssues are the method's rows that lacked a feature, so got no prediction.
	SkippedIssues []string `json:"skipped_issues,omitempty"`
	// OutcomesSeen counts the method's rows that already had a resolve outcome when the prediction was made: then
	// it is not blind.
	OutcomesSeen int `json:"outcomes_seen"`
	// PredictedPct is the mean predicted probability over Issues, in percent; Interval is the prediction interval of
	// the resolve rate that will be observed (coefficient uncertainty and the outcomes' own binomial noise);
	// MeanInterval covers the expected rate only.
	PredictedPct float64        `json:"predicted_pct"`
	Interval     stats.Interval `json:"interval"`
	MeanInterval stats.Interval `json:"mean_interval"`

	file string // where it was loaded from
}

// IssuePrediction is one issue's features and predicted probability of resolve.
type IssuePrediction struct {
	Instance string    `json:"instance_id"`
	X        []float64 `json:"x"`
	P        float64   `json:"p"`
}

// PredictOptions choose what to predict and from what.
type PredictOptions struct {
	Method, Model string
	Fit           []string
	Features      []string
	// Replicates is the number of bootstrap refits (default 2,000); Seed makes them reproducible.
	Replicates int
	Seed       uint64
	Level      float64
	Source     string
	Now        time.Time
}

// Predict fits the regression on the fit methods' rows and predicts the target method from its rows' features;
// the target's outcomes, if any, are not used.
func Predict(rows []results.Row, o PredictOptions) (*Prediction, error) {
	if o.Replicates <= 0 {
		o.Replicates = 2000
	}
	if o.Level <= 0 || o.Level >= 1 {
		o.Level = 0.95
	}
	if len(o.Features) == 0 {
		o.Features = DefaultFeatures
	}
	if len(o.Fit) == 0 {
		return nil, errors.New("predict: name the methods to fit on (--fit m1,m2)")
	}
	if slices.Contains(o.Fit, o.Method) {
		return nil, fmt.Errorf("predict: %s is among the fit methods; a prediction must not see its own outcomes", o.Method)
	}
	g := group(rows, nil)
	target, err := predictTarget(g, &o)
	if err != nil {
		return nil, err
	}
	if _, err := fitMethods(g, o.Model, o.Fit); err != nil {
		return nil, fmt.Errorf("predict: %w", err)
	}
	d := buildFitData(g, o.Model, o.Fit, o.Features)
	if len(d.features) == 0 {
		return nil, fmt.Errorf("predict: no usable feature among %s (dropped: %s)", strings.Join(o.Features, ", "), strings.Join(d.dropped, "; "))
	}
	fit, err := stats.FitLogistic(d.x, d.y, logitOptions)
	if err != nil {
		return nil, fmt.Errorf("predict: fitting on %s: %w", strings.Join(o.Fit, ", "), err)
	}
	p := &Prediction{Version: 1, Method: o.Method, Model: o.Model, Source: o.Source,
		FrozenAt: o.Now.UTC().Format(time.RFC3339), Estimator: "logistic regression (Firth), issue-level bootstrap refits",
		FitMethods: o.Fit, FitRows: len(d.rows), Features: d.features, Dropped: d.dropped, Coef: fit.Coef,
		Seed: o.Seed, Level: o.Level}
	p.predictIssues(target, fit)
	if len(p.Issues) == 0 {
		return nil, fmt.Errorf("predict: no row of %s carries all of %s", o.Method, strings.Join(d.features, ", "))
	}
	p.bootstrap(d, o.Replicates)
	if len(p.Replicates) < o.Replicates/2 {
		return nil, fmt.Errorf("predict: %d of %d bootstrap refits failed (too few fit rows for %d features)", p.FailedReplicates, o.Replicates, len(d.features))
	}
	all := make([]int, len(p.Issues))
	for i := range all {
		all[i] = i
	}
	p.PredictedPct, p.Interval, p.MeanInterval = p.intervals(all)
	return p, nil
}

// predictTarget returns the rows of the method to predict, settling o.Model when the method ran under one model
// only.
func predictTarget(g grouped, o *PredictOptions) ([]results.Row, error) {
	if o.Model == "" {
		var models []string
		for _, k := range g.keys {
			if k.Method == o.Method && !slices.Contains(models, k.Model) {
				models = append(models, k.Model)
			}
		}
		switch len(models) {
		case 0:
			return nil, fmt.Errorf("predict: method %s has no rows in %s: run its context and measure steps first, so its features exist", o.Method, o.Source)
		case 1:
			o.Model = models[0]
		default:
			return nil, fmt.Errorf("predict: method %s has rows under several models (%s): choose one with --model", o.Method, strings.Join(models, ", "))
		}
	}
	target := g.rows_[results.Key{Method: o.Method, Model: o.Model}]
	if len(target) == 0 {
		return nil, fmt.Errorf("predict: method %s has no rows under model %s in %s", o.Method, o.Model, o.Source)
	}
	return target, nil
}

// predictIssues predicts each target row that carries every feature, and counts the rows already graded.
func (p *Prediction) predictIssues(target []results.Row, fit stats.LogitFit) {
	for _, r := range target {
		if _, ok := graded(r); ok {
			p.OutcomesSeen++
		}
		x, ok := featureVector(r, p.Features)
		if !ok {
			p.SkippedIssues = append(p.SkippedIssues, r.String(results.FieldInstance))
			continue
		}
		p.Issues = append(p.Issues, IssuePrediction{Instance: r.String(results.FieldInstance), X: x, P: fit.Prob(x)})
	}
}

// bootstrap refits on replicates resamples of the fit data's issues (all rows of a drawn issue together), seeded
// by p.Seed, keeping the coefficients of each refit that succeeds.
func (p *Prediction) bootstrap(d fitData, replicates int) {
	byInst := map[string][]int{}
	var insts []string
	for i, r := range d.rows {
		id := r.String(results.FieldInstance)
		if _, ok := byInst[id]; !ok {
			insts = append(insts, id)
		}
		byInst[id] = append(byInst[id], i)
	}
	rng := rand.New(rand.NewPCG(p.Seed, 0x5eed))
	for len(p.Replicates)+p.FailedReplicates < replicates {
		var x [][]float64
		var y []float64
		for range insts {
			for _, i := range byInst[insts[rng.IntN(len(insts))]] {
				x, y = append(x, d.x[i]), append(y, d.y[i])
			}
		}
		f, err := stats.FitLogistic(x, y, logitOptions)
		if err != nil {
			p.FailedReplicates++
			continue
		}
		p.Replicates = append(p.Replicates, f.Coef)
	}
}

// intervals returns, for the issues at idx, the predicted rate and its prediction and mean intervals (percent).
// The outcome draws are seeded by the prediction's seed, so the same frozen file always gives the same intervals.
func (p *Prediction) intervals(idx []int) (float64, stats.Interval, stats.Interval) {
	fit := stats.LogitFit{Coef: p.Coef}
	point := 0.0
	for _, i := range idx {
		point += fit.Prob(p.Issues[i].X)
	}
	n := float64(len(idx))
	rng := rand.New(rand.NewPCG(p.Seed, 0x0b5e))
	means, draws := make([]float64, len(p.Replicates)), make([]float64, len(p.Replicates))
	for k, coef := range p.Replicates {
		f := stats.LogitFit{Coef: coef}
		m, d := 0.0, 0.0
		for _, i := range idx {
			pi := f.Prob(p.Issues[i].X)
			m += pi
			if rng.Float64() < pi {
				d++
			}
		}
		means[k], draws[k] = 100*m/n, 100*d/n
	}
	slices.Sort(means)
	slices.Sort(draws)
	a := (1 - p.Level) / 2
	return 100 * point / n, stats.Interval{Lo: stats.Quantile(draws, a), Hi: stats.Quantile(draws, 1-a)},
		stats.Interval{Lo: stats.Quantile(means, a), Hi: stats.Quantile(means, 1-a)}
}

// Freeze writes the prediction into dir as METHOD.MODEL.SHA256.json and returns the path. The hash is of the file's
// bytes.
func (p *Prediction) Freeze(dir string) (string, error) {
	b, err := json.MarshalIndent(p, "", " ")
	if err != nil {
		return "", fmt.Errorf("predict: %w", err)
	}
	b = append(b, '\n')
	sum := sha256.Sum256(b)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("predict: %w", err)
	}
	path := filepath.Join(dir, safeName(p.Method)+"."+safeName(p.Model)+"."+hex.EncodeToString(sum[:])+".json")
	if _, err := os.Stat(path); err == nil {
		return path, nil // the same bytes were frozen before
	}
	if err := renameio.WriteFile(path, b, 0o444, renameio.WithTempDir(dir)); err != nil {
		return "", fmt.Errorf("predict: %w", err)
	}
	return path, nil
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9_@.+-]`)

func safeName(s string) string { return unsafeChars.ReplaceAllString(s, "_") }

var hashSuffix = regexp.MustCompile(`\.([0-9a-f]{64})\.json$`)

// LoadPredictions reads every frozen prediction in dir (a missing folder holds none). A file whose bytes no longer
// match the hash in its name is reported as an error, not used.
func LoadPredictions(dir string) ([]Prediction, []string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("predictions: %w", err)
	}
	var out []Prediction
	var problems []string
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		p, err := LoadPrediction(filepath.Join(dir, e.Name()))
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		out = append(out, *p)
	}
	return out, problems, nil
}

// LoadPrediction reads one frozen prediction and checks its bytes against the hash in its name.
func LoadPrediction(path string) (*Prediction, error) {
	m := hashSuffix.FindStringSubmatch(filepath.Base(path))
	if m == nil {
		return nil, fmt.Errorf("prediction %s: name does not end in .SHA256.json", path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("prediction: %w", err)
	}
	sum := sha256.Sum256(b)
	if hex.EncodeToString(sum[:]) != m[1] {
		return nil, fmt.Errorf("prediction %s: its bytes do not match the hash in its name (edited after it was frozen)", path)
	}
	var p Prediction
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("prediction %s: %w", path, err)
	}
	if len(p.Coef) != len(p.Features)+1 || len(p.Replicates) == 0 {
		return nil, fmt.Errorf("prediction %s: malformed (%d coefficients for %d features, %d replicates)", path, len(p.Coef), len(p.Features), len(p.Replicates))
	}
	for i, is := range p.Issues {
		if len(is.X) != len(p.Features) {
			return nil, fmt.Errorf("prediction %s: issue %d has %d features, want %d", path, i, len(is.X), len(p.Features))
		}
	}
	for i, r := range p.Replicates {
		if len(r) != len(p.Coef) {
			return nil, fmt.Errorf("prediction %s: replicate %d has %d coefficients, want %d", path, i, len(r), len(p.Coef))
		}
	}
	p.file = path
	return &p, nil
}

// PredictionCheck compares a frozen prediction with the outcomes the rows now hold.
type PredictionCheck struct {
	File          string
	Method, Model string
	FrozenAt      string
	FitMethods    []string
	// Issues predicted; Graded of them have an outcome now.
	Issues, Graded int
	// On the graded issues: the predicted rate with its intervals, the observed rate, observed - predicted.
	PredictedPct float64
	Interval     stats.Interval
	MeanInterval stats.Interval
	ObservedPct  float64
	DiffPts      float64
	Inside       bool
	OutcomesSeen int
}

func checkPredictions(g grouped, preds []Prediction) []PredictionCheck {
	var out []PredictionCheck
	for _, p := range preds {
		c := PredictionCheck{File: p.file, Method: p.Method, Model: p.Model, FrozenAt: p.FrozenAt,
			FitMethods: p.FitMethods, Issues: len(p.Issues), OutcomesSeen: p.OutcomesSeen}
		rows := map[string]results.Row{}
		for _, r := range g.rows_[results.Key{Method: p.Method, Model: p.Model}] {
			rows[r.String(results.FieldInstance)] = r
		}
		var idx []int
		observed := 0.0
		for i, is := range p.Issues {
			r, ok := rows[is.Instance]
			if !ok {
				continue
			}
			if _, ok := graded(r); !ok && r.String(results.FieldError) == "" {
				continue
			}
			idx = append(idx, i)
			observed += b2f(resolved(r))
		}
		c.Graded = len(idx)
		if c.Graded > 0 {
			c.PredictedPct, c.Interval, c.MeanInterval = p.intervals(idx)
			c.ObservedPct = 100 * observed / float64(c.Graded)
			c.DiffPts = c.ObservedPct - c.PredictedPct
			c.Inside = c.Interval.Contains(c.ObservedPct)
		} else {
			c.PredictedPct, c.Interval, c.MeanInterval = p.PredictedPct, p.Interval, p.MeanInterval
		}
		out = append(out, c)
	}
	return out
}
