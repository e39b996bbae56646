package cli

import (
	"fmt"
	"io"

	"ctxlab/grading"
	"ctxlab/grading/batch"
	"ctxlab/internal/listing"
	"ctxlab/results"
	"ctxlab/runfolder"
	"ctxlab/specs"
	"ctxlab/starter/exitcode"
)

// printGradeOutcome says, below the summary, how many rows were graded, where they are and, for gold or empty, how
// the dataset validates; it returns the exit code (exitcode.Fail when a row errored or the dataset does not validate).
func printGradeOutcome(o gradeOptions, runDir string, out []results.Row, stdout, stderr io.Writer) int {
	failed := printGradedAndErrored(stdout, out)
	fmt.Fprintf(stdout, "\nresults: %s\nsummary: %s\n", runfolder.Rows(runDir), runfolder.Summary(runDir))
	code := exitcode.OK
	if batch.IsValidation(o.predictions) && reportValidation(o.predictions, out, stdout) > 0 {
		code = exitcode.Fail
	}
	if failed > 0 {
		fmt.Fprintf(stderr, "starter: %d instance(s) could not be graded (see the error field of their rows)\n", failed)
		code = exitcode.Fail
	}
	return code
}

// printGradedAndErrored says, below the summary table, how many rows were graded and how many errored before a
// test verdict: the table's resolved and applied rates count an errored row as neither, which alone reads as a
// patch that did not apply. It returns the errored rows' count.
func printGradedAndErrored(stdout io.Writer, rows []results.Row) int {
	errored := batch.Errored(rows)
	fmt.Fprintf(stdout, "\ngraded: %d of %d predictions; errored: %d", len(rows)-len(errored), len(rows), len(errored))
	if len(errored) == 0 {
		fmt.Fprintln(stdout)
		return 0
	}
	fmt.Fprintf(stdout, " (no test verdict; the table counts them as not applied and not resolved): %s\n",
		listing.Some(errored, maxListed))
	return len(errored)
}

// maxListed is how many unknown instances a message names before it only counts the rest.
const maxListed = 20

// reportValidation prints the instances that fail validation (gold: not resolved; empty: resolved) with their
// grade_status and the first line of the reason, and returns how many there are.
func reportValidation(mode string, rows []results.Row, stdout io.Writer) int {
	bad := batch.Invalid(mode, rows)
	resolvedCount := len(rows) - len(bad)
	if mode == batch.Empty {
		resolvedCount = len(bad)
	}
	fmt.Fprintf(stdout, "\nvalidation: %d of %d %s patches resolve their instance", resolvedCount, len(rows), mode)
	if len(bad) == 0 {
		fmt.Fprintln(stdout, "; the dataset is valid")
		return 0
	}
	if mode == batch.Gold {
		fmt.Fprintf(stdout, "; %d gold patch(es) do not:\n", len(bad))
	} else {
		fmt.Fprintf(stdout, "; these instances' FAIL_TO_PASS tests pass without a fix:\n")
	}
	for _, r := range bad {
		status := r.String(specs.GradeStatus.Name)
		if status == "" && r.String(results.FieldError) != "" {
			status = "error"
		}
		fmt.Fprintf(stdout, "  %s\t%s\t%s\n", r.String(results.FieldInstance), status, grading.Explanation(r))
	}
	return len(bad)
}
