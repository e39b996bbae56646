package grading

import (
	"strings"

	"ctxlab/activities/api/errkind"
)

// SWE-bench 5.0 labels the instances of a run that have no verdict on the model, in its run report
// (schema_version 2): infrastructure failures (infra_failure_ids: the environment was broken, not the model's
// patch) and ambiguous failures (ambiguous_failure_ids, which stay unresolved: either side may be at fault), each
// with a reason (failure_reasons). The reasons below are 5.0's where it names one (ReasonOutOfMemory to
// ReasonTestsTimedOut) and otherwise the ctxlab kind or status the failure had. docs/grading.md ("SWE-bench 5.0")
// says what is cited and what is ctxlab's reading.
const (
	ReasonOutOfMemory      = "out_of_memory"
	ReasonMissingModule    = "missing_module"
	ReasonNoTestsCollected = StatusNoTests
	ReasonTestsTimedOut    = "tests_timed_out"
)

// Failure is an instance's place among 5.0's failure labels: Infra (no verdict: the environment failed), or
// Ambiguous (unresolved, and maybe not the model's doing), with a reason; neither for a verdict on the model.
type Failure struct {
	Infra, Ambiguous bool
	Reason           string
}

// KindFailure labels a grade that failed with an error of kind k (a row's error_kind): the environment's kinds
// (errkind.Environment) are infrastructure failures, a missing runner module being 5.0's missing_module; the
// configuration's, the endpoint's and the model's are the harness's errors (error_ids), with no label, but for a
// lost worker (the grading machine went away). The
// dataset's own faults (a test patch that does not apply: errkind.BadInput) are infrastructure failures as well,
// as 5.0's pre-flight check of the test patch's files makes them (SWE-bench#594).
func KindFailure(k errkind.Kind) Failure {
	switch {
	case k == errkind.MissingRunner, k == errkind.PythonEnvironment:
		// The runner, or a package or module the stated environment needs, is not on the machine.
		return Failure{Infra: true, Reason: ReasonMissingModule}
	case k == errkind.BadInput, k == errkind.LostWorker:
		return Failure{Infra: true, Reason: string(k)}
	case errkind.ClassOf(string(k)) == errkind.Environment:
		return Failure{Infra: true, Reason: string(k)}
	}
	return Failure{}
}

// StatusFailure labels a grade that ran the tests and did not resolve, from its status (grade_status: StatusTimeout
// and the others, pinned by TestFailureLabels) and what the run showed: a run killed at the timeout is ambiguous (tests_timed_out: a patch that loops, or a machine
// too slow), and so are a run that counted no test (no_tests_collected), one whose listed names match nothing
// the runner reported (tests_name_mismatch: the dataset's names or the runner, not the patch, as far as anyone
// can tell), one whose test command was killed by SIGKILL (exit code 137, or -1 for a local process killed by a
// signal) other than at the timeout (out_of_memory: the kernel's OOM killer sends it), and one whose log shows a
// module that could not be imported (missing_module: the image lacks it, or the patch imports it). Any other is a
// verdict on the model.
func StatusFailure(status string, exitCode int, exitKnown bool, log string) Failure {
	switch status {
	case StatusTimeout:
		return Failure{Ambiguous: true, Reason: ReasonTestsTimedOut}
	case StatusNoTests, StatusNameMismatch:
		return Failure{Ambiguous: true, Reason: status}
	}
	if exitKnown && (exitCode == 137 || exitCode == -1) {
		return Failure{Ambiguous: true, Reason: ReasonOutOfMemory}
	}
	if strings.Contains(log, "ModuleNotFoundError: No module named") {
		return Failure{Ambiguous: true, Reason: ReasonMissingModule}
	}
	return Failure{}
}
