package report

import (
	"strings"
	"testing"

	"ctxlab/results"
	"ctxlab/specs"
)

// TestCostPerIssueSplit: the cost section averages each method and model's rows, split into input, cached input and
// output, by hand: two rows of A ($0.30 = 0.10 + 0.05 + 0.15 and $0.10 = 0.04 + 0.00 + 0.06; 500 of 2,000 prompt
// tokens cached) give $0.2000, $0.0700, $0.0250, $0.1050 and 25.0%. A row without the split (older, or offline)
// is left out; with none at all there is no section.
func TestCostPerIssueSplit(t *testing.T) {
	row := func(method string, total, in, cached, out, ct, pt float64) results.Row {
		return results.Row{results.FieldInstance: "i-" + method, results.FieldMethod: method, results.FieldModel: "m",
			specs.CostUSD.Name: total, specs.CostInputUSD.Name: in, specs.CostCachedUSD.Name: cached,
			specs.CostOutputUSD.Name: out, specs.CachedTokens.Name: ct, specs.PromptTokens.Name: pt}
	}
	r := &Report{rows: []results.Row{
		row("A", 0.30, 0.10, 0.05, 0.15, 500, 1200),
		row("A", 0.10, 0.04, 0, 0.06, 0, 800),
		{results.FieldMethod: "B", results.FieldModel: "m", specs.CostUSD.Name: 1.0},
	}}
	got := r.costSplitMarkdown()
	if want := "| A | m | 2 | $0.2000 | $0.0700 | $0.0250 | $0.1050 | 25.0 |"; !strings.Contains(got, want) {
		t.Errorf("section:\n%s\nwant the line %s", got, want)
	}
	if strings.Contains(got, "| B |") {
		t.Errorf("a row without the split was counted:\n%s", got)
	}
	if s := (&Report{rows: r.rows[2:]}).costSplitMarkdown(); s != "" {
		t.Errorf("no row carries the split, yet: %q", s)
	}
}
