package batch

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"ctxlab/dataset/swebench"
	"ctxlab/grading"
	"ctxlab/results"
	"ctxlab/results/predictions"
	"ctxlab/runfolder"
	"ctxlab/specs"
	"ctxlab/store/cas"
)

// Grader grades one prediction on its instance: its row and the stored log of its test runs. A failure is in the
// row's error field.
type Grader func(ctx context.Context, inst swebench.Instance, p predictions.Prediction) grading.Graded

// GradeAll grades the inputs' predictions, concurrency at once, logging each, and returns their rows and logs in
// their order.
func GradeAll(ctx context.Context, in Inputs, grade Grader, concurrency int, log zerolog.Logger) []grading.Graded {
	out := make([]grading.Graded, len(in.Predictions))
	var wg sync.WaitGroup
	sem := make(chan struct{}, concurrency)
	for i, p := range in.Predictions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			start := time.Now()
			out[i] = grade(ctx, in.ByID[p.InstanceID], p)
			row := out[i].Row
			ev := log.Info().Str("instance", p.InstanceID).Str("model", p.ModelNameOrPath)
			// A row that failed before grading has no grade_status: it says its error's kind instead of null.
			if status := row.String(specs.GradeStatus.Name); status != "" {
				ev = ev.Str("status", status)
			}
			if row.String(results.FieldError) != "" {
				ev = ev.Str("error", grading.Explanation(row))
			}
			ev.Int64("took_ms", time.Since(start).Milliseconds()).Msg("graded")
		}()
	}
	wg.Wait()
	return out
}

// Write records a batch's grades in its run folder runDir: their rows (in place of those an earlier run wrote for
// the same keys) and the harness's log tree and run report, the logs read from store. It returns the rows.
func Write(ctx context.Context, store cas.Store, runDir string, run grading.HarnessRun, in Inputs,
	done []grading.Graded) ([]results.Row, error) {
	rows := make([]results.Row, len(done))
	for i, d := range done {
		rows[i] = d.Row
	}
	if err := replaceRows(runfolder.Rows(runDir), rows); err != nil {
		return nil, err
	}
	if err := grading.WriteHarnessOutput(ctx, store, runDir, run, in.Dataset(), in.Predictions, done); err != nil {
		return nil, &HarnessError{err}
	}
	return rows, nil
}

// HarnessError is a failure to write the harness's logs and run report.
type HarnessError struct{ Err error }

func (e *HarnessError) Error() string {
	return "writing the SWE-bench harness's logs and run report: " + e.Err.Error()
}

func (e *HarnessError) Unwrap() error { return e.Err }

// replaceRows appends rows to the rows file at path in place of those an earlier run wrote for the same keys: the
// dataset or the grading settings may have changed since (every row was graded again, or taken from a memo of the
// same inputs).
func replaceRows(path string, rows []results.Row) error {
	keys := map[results.Key]bool{}
	for _, r := range rows {
		keys[r.Key()] = true
	}
	store := results.Store{Path: path}
	if _, err := store.Remove(func(r results.Row) bool { return keys[r.Key()] }); err != nil {
		return err
	}
	_, err := store.Append(rows)
	return err
}

// Errored are the instances, sorted, of the rows that errored before a test verdict.
func Errored(rows []results.Row) []string {
	var errored []string
	for _, r := range rows {
		if r.String(results.FieldError) != "" {
			errored = append(errored, r.String(results.FieldInstance))
		}
	}
	slices.Sort(errored)
	return errored
}

// Invalid are the rows of a validation (mode Gold or Empty) that fail it, in their order: for Gold, those not
// resolved; for Empty, those resolved.
func Invalid(mode string, rows []results.Row) []results.Row {
	var bad []results.Row
	for _, r := range rows {
		resolved, _ := r.Bool(specs.Resolved.Name)
		if resolved != (mode == Gold) {
			bad = append(bad, r)
		}
	}
	return bad
}
