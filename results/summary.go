package results

import (
	"fmt"
	"sort"
	"strings"
)

// MethodSummary aggregates the rows of one method under one model.
type MethodSummary struct {
	Method, Model string
	// N counts rows; Errors those whose error field is set.
	N, Errors int
	// Resolved and Applied are percentages of N.
	Resolved, Applied float64
	// Means over the rows where the field is set; NaN-free: Has* say whether any row had it.
	MeanRho, MeanEpsilon, MeanTokens float64
	HasRho, HasEpsilon, HasTokens    bool
	// MeanLocF1 is localization F1 against the gold files, Fallback the percentage of rows that fell back, MeanCost
	// the mean cost in dollars, for methods whose steps set them.
	MeanLocF1, Fallback, MeanCost  float64
	HasLocF1, HasFallback, HasCost bool
}

// Summarize groups rows by (method, model). Methods named in order come first, in that order; others follow sorted.
func Summarize(rows []Row, order []Key) []MethodSummary {
	type acc struct {
		s                       MethodSummary
		rho, eps, tok, f1, cost float64
		nRho, nEps, nTok, nF1   int
		nCost, nFallback        int
		resolved, applied, fell int
	}
	groups := map[Key]*acc{}
	var keys []Key
	for _, r := range rows {
		k := Key{Method: r.String(FieldMethod), Model: r.String(FieldModel)}
		g, ok := groups[k]
		if !ok {
			g = &acc{s: MethodSummary{Method: k.Method, Model: k.Model}}
			groups[k] = g
			keys = append(keys, k)
		}
		g.s.N++
		if r.String(FieldError) != "" {
			g.s.Errors++
		}
		if v, _ := r.Bool(FieldResolved); v {
			g.resolved++
		}
		if v, _ := r.Bool(FieldPatchApplied); v {
			g.applied++
		}
		if v, ok := r.Float(FieldRho); ok {
			g.rho += v
			g.nRho++
		}
		if v, ok := r.Float(FieldEpsilon); ok {
			g.eps += v
			g.nEps++
		}
		if v, ok := r.Float(FieldContextTokens); ok {
			g.tok += v
			g.nTok++
		}
		if v, ok := r.Float(FieldLocF1); ok {
			g.f1 += v
			g.nF1++
		}
		if v, ok := r.Float(FieldCostUSD); ok {
			g.cost += v
			g.nCost++
		}
		if v, ok := r.Bool(FieldFallback); ok {
			g.nFallback++
			if v {
				g.fell++
			}
		}
	}
	rank := map[Key]int{}
	for i, k := range order {
		rank[Key{Method: k.Method, Model: k.Model}] = i + 1
	}
	sort.SliceStable(keys, func(i, j int) bool {
		ri, rj := rank[keys[i]], rank[keys[j]]
		if (ri == 0) != (rj == 0) {
			return ri != 0
		}
		if ri != rj {
			return ri < rj
		}
		if keys[i].Method != keys[j].Method {
			return keys[i].Method < keys[j].Method
		}
		return keys[i].Model < keys[j].Model
	})
	out := make([]MethodSummary, 0, len(keys))
	for _, k := range keys {
		g := groups[k]
		s := g.s
		s.Resolved = 100 * float64(g.resolved) / float64(s.N)
		s.Applied = 100 * float64(g.applied) / float64(s.N)
		if g.nRho > 0 {
			s.MeanRho, s.HasRho = g.rho/float64(g.nRho), true
		}
		if g.nEps > 0 {
			s.MeanEpsilon, s.HasEpsilon = g.eps/float64(g.nEps), true
		}
		if g.nTok > 0 {
			s.MeanTokens, s.HasTokens = g.tok/float64(g.nTok), true
		}
		if g.nF1 > 0 {
			s.MeanLocF1, s.HasLocF1 = g.f1/float64(g.nF1), true
		}
		if g.nCost > 0 {
			s.MeanCost, s.HasCost = g.cost/float64(g.nCost), true
		}
		if g.nFallback > 0 {
			s.Fallback, s.HasFallback = 100*float64(g.fell)/float64(g.nFallback), true
		}
		out = append(out, s)
	}
	return out
}

// Markdown renders summaries as the summary.md table. title heads the page.
func Markdown(title string, sums []MethodSummary) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", title)
	b.WriteString("| method | model | n | resolved % | applied % | mean rho | mean epsilon | mean loc F1 | mean tokens | " +
		"fallback % | mean cost $ | errors |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	opt := func(ok bool, v float64, format string) string {
		if !ok {
			return "–"
		}
		return fmt.Sprintf(format, v)
	}
	for _, s := range sums {
		fmt.Fprintf(&b, "| %s | %s | %d | %.1f | %.1f | %s | %s | %s | %s | %s | %s | %d |\n", s.Method, s.Model, s.N,
			s.Resolved, s.Applied, opt(s.HasRho, s.MeanRho, "%.3f"), opt(s.HasEpsilon, s.MeanEpsilon, "%.3f"),
			opt(s.HasLocF1, s.MeanLocF1, "%.3f"), opt(s.HasTokens, s.MeanTokens, "%.0f"),
			opt(s.HasFallback, s.Fallback, "%.1f"), opt(s.HasCost, s.MeanCost, "%.4f"), s.Errors)
	}
	b.WriteString("\nrho: share of gold files shown; epsilon: share of shown lines found verbatim in their file; " +
		"loc F1: selected files against the gold files; tokens: repository text in the context; cost: model calls " +
		"priced with the spec's price table. Computed from results.jsonl.\n")
	return b.String()
}
