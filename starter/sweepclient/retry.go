package sweepclient

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"ctxlab/results"
	"ctxlab/runfolder"
	"ctxlab/specs"
	"ctxlab/starter/exitcode"
)

// rowErrorsExit is a finished sweep's exit code: exitcode.RowErrors when some of its rows have an error (unless
// --allow-errors), saying how many and of which kinds.
func rowErrorsExit(o Options, runDir string, stderr io.Writer) int {
	rows, _, err := results.ReadFile(runfolder.Rows(runDir))
	if errors.Is(err, os.ErrNotExist) { // a sweep of no issue writes no row
		return exitcode.OK
	}
	if err != nil {
		fmt.Fprintln(stderr, "starter: reading the rows:", err)
		return exitcode.Fail
	}
	tally := TallyRowErrors(rows)
	if tally.Errors == 0 {
		return exitcode.OK
	}
	fmt.Fprintf(stderr, "starter: %d of %d rows have errors (%s); see the error column of %s or starter status %s\n",
		tally.Errors, tally.Rows, tally, runfolder.Rows(runDir), filepath.Base(runDir))
	fmt.Fprintf(stderr, "starter: by cause: %s\n", tally.ByClass())
	if o.AllowErrors {
		return exitcode.OK
	}
	return exitcode.RowErrors
}

// takeRetriedRows takes the rows of a finished sweep that a re-run retries (their error is not the model's, or is
// of a kind or class sel names) out of results.jsonl, appending them to results.retried.jsonl, and returns them by
// instance as the sweep's Retry, with their tally. Rows of arms outside the plan stay.
func takeRetriedRows(runDir string, plan *specs.Plan, sel RetrySelection, only map[results.Key]bool) (
	map[string][]results.Key, RowErrorTally, error) {
	retries := retriesRow(plan, sel)
	tally := TallyRowErrors(nil)
	removed, err := results.Store{Path: runfolder.Rows(runDir)}.Remove(func(r results.Row) bool {
		return retries(r) && (only == nil || only[r.Key()])
	})
	if err != nil || len(removed) == 0 {
		return nil, tally, err
	}
	var b []byte
	retry := map[string][]results.Key{}
	for _, r := range removed {
		tally.add(r)
		line, err := json.Marshal(r)
		if err != nil {
			return nil, tally, err
		}
		b = append(append(b, line...), '\n')
		k := r.Key()
		arm := results.Key{Method: k.Method, Model: k.Model, Sample: k.Sample}
		if !slices.Contains(retry[k.Instance], arm) {
			retry[k.Instance] = append(retry[k.Instance], arm)
		}
	}
	f, err := runfolder.OpenFile(runfolder.Retried(runDir), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err == nil {
		_, err = f.Write(b)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return nil, tally, fmt.Errorf("keeping the retried rows in %s: %w", runfolder.Retried(runDir), err)
	}
	return retry, tally, nil
}

// retriesRow says whether a re-run retries a row: one of the plan's arms, failed of a kind sel retries.
func retriesRow(plan *specs.Plan, sel RetrySelection) func(results.Row) bool {
	arms := map[results.Key]bool{}
	for _, a := range plan.Arms {
		arms[results.Key{Method: a.Method, Model: a.Model}] = true
	}
	return func(r results.Row) bool {
		k := r.Key()
		return sel.retries(r) && arms[results.Key{Method: k.Method, Model: k.Model}]
	}
}

// retriedRows are the rows of results.jsonl that a re-run retries, left where they are (nil when there is none, or
// the file cannot be read: then nothing is retried early).
func retriedRows(runDir string, plan *specs.Plan, sel RetrySelection) map[results.Key]bool {
	rows, _, err := results.ReadFile(runfolder.Rows(runDir))
	if err != nil {
		return nil
	}
	retries := retriesRow(plan, sel)
	var keys map[results.Key]bool
	for _, r := range rows {
		if retries(r) {
			if keys == nil {
				keys = map[results.Key]bool{}
			}
			keys[r.Key()] = true
		}
	}
	return keys
}
