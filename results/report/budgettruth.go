package report

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"ctxlab/results"
	"ctxlab/specs"
)

// BudgetFit is one (method, model) arm fitted to a per-issue budget: how close its contexts came to their targets,
// counted in the tokenizer its rows name (the model's own, unless the spec pinned one).
type BudgetFit struct {
	Method, Model string
	// Tokenizers are the tokenizers the rows say counted (one, unless the rows come from sweeps that differ).
	Tokenizers []string
	// N counts the rows with both a budget (budget_tokens) and a measured context (context_tokens).
	N int
	// MeanError is the mean relative error (context_tokens - budget_tokens) / budget_tokens; MeanAbsError the mean
	// of its absolute value; WorstError the error of largest absolute value, with its sign (under: negative).
	MeanError, MeanAbsError, WorstError results.Value
	// Outside counts the rows more than the tolerance (±2%) off, by reason (Reasons).
	Outside int
	Reasons map[string]int
}

// fitTolerance is the budget fit's tolerance (activities/budget.DefaultTolerance, PAPER.md's ±2%).
const fitTolerance = 0.02

// Reasons a row's context is outside the budget's tolerance.
const (
	ReasonTooLittle   = "not enough text"      // even the whole ranked text is under the budget
	ReasonTooMuch     = "issue alone too long" // the smallest context (the issue, no code) is over it
	ReasonGranularity = "knob too coarse"      // two neighbouring knob values straddle the band
	ReasonEvals       = "out of evaluations"   // the search stopped before reaching it
	ReasonMeasured    = "measured off the fit" // the fit said reached; measure counted otherwise
	ReasonOther       = "other"                // a budget_error of another kind
)

// budgetReason names the reason of a row outside the tolerance from its budget_error.
func budgetReason(r results.Row) string {
	why := r.String(specs.BudgetError.Name)
	switch {
	case why == "":
		return ReasonMeasured
	case strings.Contains(why, "largest knob value"):
		return ReasonTooLittle
	case strings.Contains(why, "smallest knob value"):
		return ReasonTooMuch
	case strings.HasPrefix(why, "no knob value gives"):
		return ReasonGranularity
	case strings.Contains(why, "evaluations"):
		return ReasonEvals
	}
	return ReasonOther
}

// budgetFits computes BudgetFit for every arm whose rows carry budgets.
func budgetFits(g grouped) []BudgetFit {
	var out []BudgetFit
	for _, k := range g.keys {
		f := BudgetFit{Method: k.Method, Model: k.Model, Reasons: map[string]int{}}
		toks := map[string]bool{}
		var errs []float64
		for _, r := range g.rows_[k] {
			budget, ok1 := r.Float(specs.BudgetTokens.Name)
			got, ok2 := r.Float(specs.ContextTokens.Name)
			if !ok1 || !ok2 || budget <= 0 {
				continue
			}
			if t := r.String(specs.Tokenizer.Name); t != "" {
				toks[t] = true
			}
			e := (got - budget) / budget
			errs = append(errs, e)
			if math.Abs(e) > fitTolerance+1e-9 {
				f.Outside++
				f.Reasons[budgetReason(r)]++
			}
		}
		if len(errs) == 0 {
			continue
		}
		f.N = len(errs)
		f.Tokenizers = slices.Sorted(maps.Keys(toks))
		abs := make([]float64, len(errs))
		worst := errs[0]
		for i, e := range errs {
			abs[i] = math.Abs(e)
			if math.Abs(e) > math.Abs(worst) {
				worst = e
			}
		}
		f.MeanError, f.MeanAbsError, f.WorstError = mean(errs), mean(abs), some(worst)
		out = append(out, f)
	}
	return out
}

// budgetFitTable is the budget truth table: per fitted arm, achieved tokens against the target.
func (r *Report) budgetFitTable() Table {
	t := Table{Name: "budget_fit", Caption: fmt.Sprintf("Budget truth: per fitted method, context tokens against "+
		"the per-issue budget, both counted in the tokenizer the rows name; outside: rows more than ±%.0f%% off, "+
		"with the reason", 100*fitTolerance),
		Head: []string{"method", "model", "tokenizer", "n", "mean error %", "mean |error| %", "worst error %",
			"outside ±2%", "why outside"}}
	for _, f := range r.BudgetFits {
		var why []string
		for _, reason := range slices.Sorted(maps.Keys(f.Reasons)) {
			why = append(why, fmt.Sprintf("%s (%d)", reason, f.Reasons[reason]))
		}
		tok := strings.Join(f.Tokenizers, ", ")
		if tok == "" {
			tok = missing
		}
		pct := func(v results.Value) results.Value {
			if v.OK {
				v.V *= 100
			}
			return v
		}
		t.rows = append(t.rows, []cell{txt(f.Method), txt(f.Model), txt(tok), integer(f.N),
			opt(pct(f.MeanError), "%+.2f"), opt(pct(f.MeanAbsError), "%.2f"), opt(pct(f.WorstError), "%+.2f"),
			integer(f.Outside), txt(strings.Join(why, "; "))})
	}
	return t
}
