package sweepclient

import (
	"testing"

	"ctxlab/results"
)

// TestTallyRowErrors checks the kinds the exit message names, and that a row written again counts once (its last
// version).
func TestTallyRowErrors(t *testing.T) {
	row := func(inst, err string) results.Row {
		r := results.Row{results.FieldInstance: inst, results.FieldMethod: "m", results.FieldModel: "x",
			results.FieldError: nil}
		if err != "" {
			r[results.FieldError] = err
		}
		return r
	}
	withKind := row("f", "step patch: whatever")
	withKind[results.FieldErrorKind] = "rate_limit"
	tally := TallyRowErrors([]results.Row{
		row("a", "step patch: m.patch: model gpt: model call failed (auth, HTTP 401): bad key"),
		row("b", "step patch: m.patch: model gpt: model call failed (auth, HTTP 401): bad key"),
		row("c", "step localize0: timed out (StartToClose)"),
		row("d", "step context: instance d: no such commit"),
		row("e", "step patch: m.patch: model gpt: model call failed (quota): out of credit"),
		row("e", ""), // written again without the error: the last row counts
		withKind,
		row("g", ""),
	})
	if tally.Rows != 7 || tally.Errors != 5 {
		t.Errorf("rows %d, errors %d; want 7 rows, 5 with errors", tally.Rows, tally.Errors)
	}
	if got, want := tally.String(), "auth 2, rate_limit 1, step context 1, timeout 1"; got != want {
		t.Errorf("kinds %q, want %q", got, want)
	}
	// A step's failure of no kind is the machine's, never the model's (before, "step context" was filed as the
	// model's, final).
	if got, want := tally.ByClass(), "endpoint 2 (rate_limit 1, timeout 1; a re-run retries them), "+
		"configuration 2 (auth 2; a re-run retries them), environment 1 (step context 1; a re-run retries them)"; got != want {
		t.Errorf("by class %q, want %q", got, want)
	}
}
