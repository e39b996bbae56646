package results

import (
	"ctxlab/specs"
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

// mean accumulates the rows where a field is set.
type mean struct {
	sum float64
	n   int
}

func (m *mean) add(v float64, ok bool) {
	if ok {
		m.sum += v
		m.n++
	}
}

// get returns the mean and whether any row had the field.
func (m mean) get() (float64, bool) {
	if m.n == 0 {
		return 0, false
	}
	return m.sum / float64(m.n), true
}

func boolAsFloat(v, ok bool) (float64, bool) {
	if v {
		return 1, ok
	}
	return 0, ok
}

// Summarize groups rows by (method, model). Methods named in order come first, in that order; others follow sorted.
func Summarize(rows []Row, order []Key) []MethodSummary {
	type acc struct {
		s                                    MethodSummary
		resolved, applied                    int
		rho, eps, tok, f1, cost, fallbackPct mean
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
		if v, _ := r.Bool(specs.Resolved.Name); v {
			g.resolved++
		}
		if v, _ := r.Bool(specs.PatchApplied.Name); v {
			g.applied++
		}
		g.rho.add(r.Float(specs.Rho.Name))
		g.eps.add(r.Float(specs.Epsilon.Name))
		g.tok.add(r.Float(specs.ContextTokens.Name))
		g.f1.add(r.Float(specs.LocF1.Name))
		g.cost.add(r.Float(specs.CostUSD.Name))
		g.fallbackPct.add(boolAsFloat(r.Bool(specs.Fallback.Name)))
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
		s.MeanRho, s.HasRho = g.rho.get()
		s.MeanEpsilon, s.HasEpsilon = g.eps.get()
		s.MeanTokens, s.HasTokens = g.tok.get()
		s.MeanLocF1, s.HasLocF1 = g.f1.get()
		s.MeanCost, s.HasCost = g.cost.get()
		s.Fallback, s.HasFallback = g.fallbackPct.get()
		s.Fallback *= 100
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
