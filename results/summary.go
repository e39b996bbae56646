package results

import (
	"fmt"
	"sort"
	"strings"

	"ctxlab/specs"
)

// MethodSummary aggregates the rows of one method under one model.
type MethodSummary struct {
	Method, Model string
	// N counts rows; Errors those whose error field is set.
	N, Errors int
	// Samples is the patch samples per issue of a method of samples (highest sample index + 1); 0 for a method of
	// one sample.
	Samples int
	// Stats are the values of SummaryColumns, in their order.
	Stats []Value
}

// SummaryColumns are the columns the declared row fields add to summary.md's table (specs.SummaryTable).
var SummaryColumns = specs.Columns(specs.SummaryTable)

// Stat returns the summary's statistic of field f (its first SummaryColumns column); missing when it has none.
func (s MethodSummary) Stat(f specs.AnyField) Value {
	for i, c := range SummaryColumns {
		if c.Field.Name == f.Declaration().Name && i < len(s.Stats) {
			return s.Stats[i]
		}
	}
	return Value{}
}

// Summarize groups rows by (method, model). Methods named in order come first, in that order; others follow sorted.
func Summarize(rows []Row, order []Key) []MethodSummary {
	groups := map[Key][]Row{}
	var keys []Key
	for _, r := range rows {
		k := Key{Method: r.String(FieldMethod), Model: r.String(FieldModel)}
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], r)
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
		s := MethodSummary{Method: k.Method, Model: k.Model, N: len(groups[k])}
		for _, r := range groups[k] {
			if r.String(FieldError) != "" {
				s.Errors++
			}
			if i, ok := r.Float(FieldSample); ok {
				s.Samples = max(s.Samples, int(i)+1)
			}
		}
		for _, c := range SummaryColumns {
			s.Stats = append(s.Stats, StatOf(c, groups[k]))
		}
		out = append(out, s)
	}
	return out
}

// Markdown renders summaries as the summary.md table. title heads the page.
func Markdown(title string, sums []MethodSummary) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", title)
	b.WriteString("| method | model | n | ")
	var legend []string
	for _, c := range SummaryColumns {
		b.WriteString(c.Heading() + " | ")
		if c.Legend != "" {
			legend = append(legend, c.Legend)
		}
	}
	b.WriteString("errors |\n|---|---|---:|" + strings.Repeat("---:|", len(SummaryColumns)) + "---:|\n")
	for _, s := range sums {
		fmt.Fprintf(&b, "| %s | %s | %d | ", s.Method, s.Model, s.N)
		for i, c := range SummaryColumns {
			b.WriteString(Show(c, s.Stats[i]) + " | ")
		}
		fmt.Fprintf(&b, "%d |\n", s.Errors)
	}
	b.WriteString("\n" + strings.Join(legend, "; ") + ". Computed from results.jsonl.\n")
	var sampled []string
	for _, s := range sums {
		if s.Samples > 0 {
			sampled = append(sampled, fmt.Sprintf("%s (%d)", s.Method, s.Samples))
		}
	}
	if len(sampled) > 0 {
		fmt.Fprintf(&b, "\nMethods of k patch samples per issue (k): %s. Their n counts rows, k per issue, so their "+
			"resolved %% is the per-issue mean resolve rate (pass@1); `starter report` gives pass@k, majority-of-k, "+
			"any-of-k and flip rates.\n", strings.Join(sampled, ", "))
	}
	return b.String()
}
