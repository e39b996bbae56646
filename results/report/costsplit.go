package report

import (
	"fmt"
	"sort"
	"strings"

	"ctxlab/results"
	"ctxlab/specs"
)

// costSplitMarkdown is the report's "Cost per issue" section: for each method and model, the mean dollars a row
// (one issue) cost, split into input (cache writes included), cached input and output, over the rows that carry
// the split (rows written before it, and the offline stand-in's, do not). Empty when no row carries it.
func (r *Report) costSplitMarkdown() string {
	type sums struct {
		n                        int
		total, in, cached, out   float64
		cachedTokens, allPrompts float64
	}
	by := map[[2]string]*sums{}
	for _, row := range r.rows {
		in, ok := row.Float(specs.CostInputUSD.Name)
		if !ok {
			continue
		}
		k := [2]string{row.String(results.FieldMethod), row.String(results.FieldModel)}
		s := by[k]
		if s == nil {
			s = &sums{}
			by[k] = s
		}
		cached, _ := row.Float(specs.CostCachedUSD.Name)
		out, _ := row.Float(specs.CostOutputUSD.Name)
		total, _ := row.Float(specs.CostUSD.Name)
		ct, _ := row.Float(specs.CachedTokens.Name)
		pt, _ := row.Float(specs.PromptTokens.Name)
		s.n++
		s.total, s.in, s.cached, s.out = s.total+total, s.in+in, s.cached+cached, s.out+out
		s.cachedTokens, s.allPrompts = s.cachedTokens+ct, s.allPrompts+pt
	}
	if len(by) == 0 {
		return ""
	}
	keys := make([][2]string, 0, len(by))
	for k := range by {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i][0] != keys[j][0] {
			return keys[i][0] < keys[j][0]
		}
		return keys[i][1] < keys[j][1]
	})
	var b strings.Builder
	b.WriteString("## Cost per issue\n\nMean dollars per row (one issue) of each method and model, split by price: " +
		"input (cache writes included, at their price), cached input (prompt tokens read from the provider's " +
		"prompt cache, at theirs) and output; cached %: share of prompt tokens read from the cache. n: rows that " +
		"carry the split.\n\n")
	b.WriteString("| method | model | n | cost | input | cached input | output | cached % |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|\n")
	for _, k := range keys {
		s := by[k]
		n := float64(s.n)
		share := "–"
		if s.allPrompts > 0 {
			share = fmt.Sprintf("%.1f", 100*s.cachedTokens/s.allPrompts)
		}
		fmt.Fprintf(&b, "| %s | %s | %d | $%.4f | $%.4f | $%.4f | $%.4f | %s |\n", mdText(k[0]), mdText(k[1]), s.n,
			s.total/n, s.in/n, s.cached/n, s.out/n, share)
	}
	b.WriteString("\n")
	return b.String()
}
