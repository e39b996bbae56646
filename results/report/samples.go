package report

import (
	"fmt"
	"slices"
	"strings"

	"ctxlab/results"
	"ctxlab/results/stats"
)

// SampleStats are the repeated-sample measures of one (method, model) whose rows carry a sample index (a method of
// samples: k > 1). Rates are shares of issues, in percent.
type SampleStats struct {
	Method, Model string
	// K is the samples drawn per issue (the highest sample index + 1); Issues the issues with a row.
	K, Issues int
	// MeanPct is the per-issue mean resolve rate (each issue's resolved share of its samples, averaged): pass@1.
	MeanPct float64
	// PassAtKPct is the unbiased pass@K over the issues with all K samples (PassIssues of them).
	PassAtKPct float64
	PassIssues int
	// MajorityPct and AnyPct are the majority-of-k (a strict majority resolves) and any-of-k resolve rates.
	MajorityPct, AnyPct float64
	// FlipPct is the share of issues (with two samples or more) whose samples disagree, with its bootstrap
	// interval over issues resampled with all their samples.
	FlipPct float64
	FlipCI  stats.Interval
}

// sampleCounts are the samples of rows, by issue in first-appearance order, and K (highest sample index + 1);
// ok is false when no row carries a sample index.
func sampleCounts(rows []results.Row) (issues []stats.SampleCounts, k int, ok bool) {
	at := map[string]int{}
	for _, r := range rows {
		s, has := r.Float(results.FieldSample)
		if !has {
			continue
		}
		ok = true
		k = max(k, int(s)+1)
		id := r.String(results.FieldInstance)
		i, seen := at[id]
		if !seen {
			i = len(issues)
			at[id] = i
			issues = append(issues, stats.SampleCounts{})
		}
		issues[i].N++
		if resolved(r) {
			issues[i].C++
		}
	}
	return issues, k, ok
}

// sampleStats computes the repeated-sample measures of every (method, model) whose rows carry a sample index.
func sampleStats(g grouped, boot func(string) stats.Bootstrap, level float64) []SampleStats {
	var out []SampleStats
	for _, key := range g.keys {
		issues, k, ok := sampleCounts(g.rows_[key])
		if !ok {
			continue
		}
		mean, _ := stats.MeanPassAtK(issues, 1)
		pass, used := stats.MeanPassAtK(issues, k)
		ci := boot("samples\x00"+key.Method+"\x00"+key.Model).FlipRateCI(issues, level)
		out = append(out, SampleStats{Method: key.Method, Model: key.Model, K: k, Issues: len(issues),
			MeanPct: 100 * mean, PassAtKPct: 100 * pass, PassIssues: used,
			MajorityPct: 100 * stats.MajorityRate(issues), AnyPct: 100 * stats.AnyRate(issues),
			FlipPct: 100 * stats.FlipRate(issues), FlipCI: stats.Interval{Lo: 100 * ci.Lo, Hi: 100 * ci.Hi}})
	}
	return out
}

// sampleTable is the repeated-samples table.
func (r *Report) sampleTable() Table {
	t := Table{Name: "samples", Caption: fmt.Sprintf("Repeated patch samples: per-issue mean resolve rate, pass@k "+
		"(unbiased estimator), majority-of-k and any-of-k resolve rates, and the flip rate with its %.0f%% "+
		"bootstrap interval over issues resampled with all their samples (%d resamples)", 100*r.Level, r.Resamples),
		Head: []string{"method", "model", "k", "issues", "mean resolved %", "pass@k %", "pass@k issues",
			"majority %", "any %", "flip %", "flip 95% CI"}}
	for _, s := range r.Samples {
		t.rows = append(t.rows, []cell{txt(s.Method), txt(s.Model), integer(s.K), integer(s.Issues),
			num(s.MeanPct, "%.1f"), num(s.PassAtKPct, "%.1f"), integer(s.PassIssues), num(s.MajorityPct, "%.1f"),
			num(s.AnyPct, "%.1f"), num(s.FlipPct, "%.1f"), interval(s.FlipCI.Lo, s.FlipCI.Hi)})
	}
	return t
}

// sampledMethods names the methods of samples, for the notes that their comparisons pair per-issue means.
func sampledMethods(ss []SampleStats) []string {
	var out []string
	for _, s := range ss {
		if !slices.Contains(out, s.Method) {
			out = append(out, s.Method)
		}
	}
	return out
}

// perIssueMeansText is what the comparison and disagreement texts add when some method draws several samples:
// which comparisons pair per-issue means, and what their counts, test and interval are; "" when none does, so that
// a report of methods of one sample reads as it always has.
func (r *Report) perIssueMeansText() string {
	if len(r.Samples) == 0 {
		return ""
	}
	return fmt.Sprintf(" A comparison with a method of several patch samples (%s) pairs per-issue means: each "+
		"side of an issue is its resolved share of its samples (methods of different k pair, an issue counts once). "+
		"only anchor / only method then count the issues whose per-issue mean is higher on that side (a "+
		"disagreement's resolved by is that side), p is the exact sign test on those signs (McNemar's exact test is "+
		"its case of one sample each), and the diff's interval is the paired bootstrap that resamples issues with "+
		"all their samples. On clean issues a sample whose row has an error that is not the model's is left out, "+
		"and an issue stays while both sides keep a sample.", strings.Join(sampledMethods(r.Samples), ", "))
}

// testName is the test the comparison tables' captions name.
func (r *Report) testName() string {
	if len(r.Samples) == 0 {
		return "one-sided exact McNemar"
	}
	return "one-sided exact McNemar (exact sign test on per-issue means for " +
		strings.Join(sampledMethods(r.Samples), ", ") + ")"
}
