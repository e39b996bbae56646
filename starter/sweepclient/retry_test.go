package sweepclient

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"ctxlab/results"
	"ctxlab/specs"
)

// TestRetrySelection: a plain re-run takes out every failed row whose error is not the model's (the endpoint's, the
// configuration's, the environment's, and rows of older versions whose step failure had no kind), and keeps the
// model's; --retry names more, by kind or by class. Unknown names are refused, listing the valid ones.
func TestRetrySelection(t *testing.T) {
	row := func(inst, errText, kind string) results.Row {
		r := results.Row{results.FieldInstance: inst, results.FieldMethod: "m", results.FieldModel: "x",
			results.FieldError: nil}
		if errText != "" {
			r[results.FieldError] = errText
		}
		if kind != "" {
			r[results.FieldErrorKind] = kind
		}
		return r
	}
	rows := []results.Row{
		row("ok", "", ""),
		row("toolong", "step patch: model call failed (context_length)", "context_length"),
		row("nopytest", "step grade: no python3 that can import pytest", "missing_runner"),
		row("limited", "step patch: model call failed (rate_limit, HTTP 429)", "rate_limit"),
		row("badmodel", "step patch: model call failed (model_not_found, HTTP 404)", "model_not_found"),
		row("old", "step grade: instance old: no python3 that can import pytest", ""), // written before kinds
	}
	plan := &specs.Plan{Arms: []specs.Arm{{Method: "m", Model: "x"}}}
	take := func(sel RetrySelection) []string {
		t.Helper()
		dir := t.TempDir()
		if _, err := (results.Store{Path: filepath.Join(dir, "results.jsonl")}).Append(rows); err != nil {
			t.Fatal(err)
		}
		retry, tally, err := takeRetriedRows(dir, plan, sel, nil)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for inst := range retry {
			got = append(got, inst)
		}
		slices.Sort(got)
		if tally.Errors != len(got) {
			t.Errorf("the tally counts %d rows, %d were taken", tally.Errors, len(got))
		}
		return got
	}
	if got, want := take(nil), []string{"badmodel", "limited", "nopytest", "old"}; !slices.Equal(got, want) {
		t.Errorf("a plain re-run retries %v, want %v", got, want)
	}
	for _, v := range []string{"model", "context_length"} {
		sel, err := ParseRetry([]string{v})
		if err != nil {
			t.Fatal(err)
		}
		if got := take(sel); !slices.Contains(got, "toolong") || len(got) != 5 {
			t.Errorf("--retry %s retries %v, want the model's row too", v, got)
		}
	}
	if _, err := ParseRetry([]string{"environment,bogus"}); err == nil || !strings.Contains(err.Error(), "bogus") ||
		!strings.Contains(err.Error(), "missing_runner") {
		t.Errorf("an unknown --retry name: %v", err)
	}
}
