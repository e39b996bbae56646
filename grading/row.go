package grading

import (
	"strings"

	"ctxlab/grading/executor"
	"ctxlab/grading/testlog"
	"ctxlab/patch/diff"
	"ctxlab/specs"
)

// recordVerdict puts the runs' verdict on the row: resolved by a majority of the runs, the status, and for an
// unresolved patch the tests at fault in the last run.
func recordVerdict(row map[string]any, statuses []string, resolvedRuns int, last testlog.Verdict,
	lastReport testlog.Report) {
	resolved := 2*resolvedRuns > len(statuses)
	specs.Resolved.Set(row, resolved)
	status := statuses[0]
	if resolved {
		status = StatusResolved
	} else if statuses[0] == StatusResolved {
		status = StatusUnresolved
	}
	specs.GradeStatus.Set(row, status)
	if len(statuses) > 1 {
		specs.GradeRuns.Set(row, statuses)
		specs.GradeFlaky.Set(row, resolvedRuns > 0 && resolvedRuns < len(statuses))
	}
	if resolved {
		if len(last.Skipped) > 0 {
			// Resolved with listed tests that counted neither way (the harness's rule): the row says which.
			specs.TestsSkipped.Set(row, last.Skipped)
		}
		return
	}
	switch status {
	case StatusBuildFailed:
		specs.GradeBuildError.Set(row, headOf(lastReport.BuildOutput, maxBuildError))
	case StatusNameMismatch:
		specs.GradeNote.Set(row, "the dataset's test names do not match what the test runner reports: none of the "+
			"FAIL_TO_PASS/PASS_TO_PASS names has a result")
	}
	specs.TestsFailed.Set(row, last.Failed)
	specs.TestsMissing.Set(row, last.Missing)
	specs.TestsSkipped.Set(row, last.Skipped)
	if len(last.Regressed) > 0 {
		specs.TestsRegressed.Set(row, last.Regressed)
	}
}

// recordApply puts how the model patch applied on the row.
func recordApply(row map[string]any, res executor.Result) {
	rep := res.Apply
	specs.PatchApply.Set(row, string(rep.Outcome))
	if rep.Stage != "" {
		specs.PatchApplyStage.Set(row, rep.Stage)
	}
	fuzzed := 0
	for _, h := range rep.Shifted {
		if h.Fuzz > 0 {
			fuzzed++
		}
	}
	if len(rep.Shifted) > 0 {
		specs.PatchHunksShifted.Set(row, len(rep.Shifted))
		specs.PatchHunksFuzzed.Set(row, fuzzed)
	}
	if len(rep.Rejected) > 0 {
		reasons := make([]string, len(rep.Rejected))
		for i, h := range rep.Rejected {
			reasons[i] = h.Reason
		}
		specs.PatchRejected.Set(row, reasons)
	}
	// The model's changes to test files that were reset before the tests ran, and those it kept (model_tests keep).
	if len(res.TestFilesDropped) > 0 {
		specs.PatchTestFilesDropped.Set(row, res.TestFilesDropped)
	}
	if len(res.ModelTestFiles) > 0 {
		specs.PatchTestFilesKept.Set(row, res.ModelTestFiles)
	}
	if res.Ran {
		return
	}
	specs.GradeError.Set(row, res.ApplyErr)
	switch rep.Outcome {
	case diff.Empty:
		specs.GradeStatus.Set(row, StatusEmptyPatch)
	case diff.Malformed:
		specs.GradeStatus.Set(row, StatusMalformed)
	default:
		specs.GradeStatus.Set(row, StatusPatchFailed)
	}
}

// maxBuildError bounds grade_build_error on the row.
const maxBuildError = 2 << 10

// headOf returns the first whole lines of s that fit in n bytes (a cut line when the first one is longer).
func headOf(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := s[:n]
	if i := strings.LastIndexByte(cut, '\n'); i > 0 {
		cut = cut[:i+1]
	}
	return cut + "[...]\n"
}
