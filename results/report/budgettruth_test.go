package report

import (
	"strings"
	"testing"

	"ctxlab/results"
	"ctxlab/specs"
)

// TestBudgetTruth checks the budget truth table against values worked out by hand. bm25 (4 rows with a budget):
// errors (1010-1000)/1000 = +1%, (95-100)/100 = -5% (budget_error "the largest knob value ..."), (2200-2000)/2000 =
// +10% (budget reached, measured otherwise), (300-300)/300 = 0; a fifth row has no context_tokens (its measure
// failed) and is left out. Mean (1-5+10+0)/4 = +1.50%, mean |error| (1+5+10+0)/4 = 4.00%, worst +10.00%, 2 rows
// outside ±2%, one of each reason. The anchor's rows carry no budget: no line.
func TestBudgetTruth(t *testing.T) {
	row := func(inst, method string, fields map[string]any) results.Row {
		r := results.Row{results.FieldInstance: inst, results.FieldMethod: method, results.FieldModel: "m",
			specs.Resolved.Name: false, specs.Tokenizer.Name: "endpoint:m"}
		for k, v := range fields {
			r[k] = v
		}
		return r
	}
	rows := []results.Row{
		row("i1", "anchor", map[string]any{specs.ContextTokens.Name: 1000.0}),
		row("i1", "bm25", map[string]any{specs.BudgetTokens.Name: 1000.0, specs.ContextTokens.Name: 1010.0,
			specs.BudgetReached.Name: true}),
		row("i2", "bm25", map[string]any{specs.BudgetTokens.Name: 100.0, specs.ContextTokens.Name: 95.0,
			specs.BudgetReached.Name: false,
			specs.BudgetError.Name:   "the largest knob value 40 gives 95 tokens, under the budget 98-102"}),
		row("i3", "bm25", map[string]any{specs.BudgetTokens.Name: 2000.0, specs.ContextTokens.Name: 2200.0,
			specs.BudgetReached.Name: true}),
		row("i4", "bm25", map[string]any{specs.BudgetTokens.Name: 300.0, specs.ContextTokens.Name: 300.0}),
		row("i5", "bm25", map[string]any{specs.BudgetTokens.Name: 300.0}),
	}
	r, err := Build(rows, nil, Options{Title: "t", Source: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.BudgetFits) != 1 {
		t.Fatalf("budget fits %+v, want one (bm25)", r.BudgetFits)
	}
	md := r.Markdown()
	want := "| bm25 | m | endpoint:m | 4 | +1.50 | 4.00 | +10.00 | 2 | measured off the fit (1); not enough text (1) |"
	if !strings.Contains(md, want) || !strings.Contains(md, "## Budget truth") {
		t.Errorf("report.md lacks\n%s\n%s", want, md)
	}
	html, err := r.HTML(HTMLOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(html), `id="budget_fit"`) || !strings.Contains(string(html), "endpoint:m") {
		t.Errorf("report.html has no budget truth section")
	}
	for reason, why := range map[string]string{
		ReasonTooMuch:     "the smallest knob value 0 gives 900 tokens, over the budget 490-510",
		ReasonGranularity: "no knob value gives 98-102 tokens: 3 gives 97 and 4 gives 104",
		ReasonEvals:       "not within 98-102 tokens after 40 evaluations",
		ReasonOther:       "something else",
	} {
		if got := budgetReason(results.Row{specs.BudgetError.Name: why}); got != reason {
			t.Errorf("%q: reason %q, want %q", why, got, reason)
		}
	}
}
