package grading

import (
	"testing"

	"ctxlab/activities/api/errkind"
)

// TestFailureLabels pins ctxlab's failure classes to SWE-bench 5.0's labels in its run report (schema_version 2):
// infra_failure_ids / ambiguous_failure_ids and failure_reasons. Cited: the labels and the reasons out_of_memory,
// missing_module, no_tests_collected and tests_timed_out (ctxlab issue 38, from SWE-bench#586, #594, #601 and
// PR#620); infra failures as the broken environment a pre-flight check finds, a repository, its test files or git
// missing (SWE-bench/SWE-bench PR#594's description); infra_failure_ids and ambiguous_failure_ids as run-report
// fields (SWE-bench/SWE-bench#637). 5.0's classifier itself was not found in the searchable copies of the
// harness, so which side each ctxlab kind and status falls on is ctxlab's reading (docs/grading.md, "SWE-bench
// 5.0"); every kind and every status a grade can end with is listed, so a new one must be placed.
func TestFailureLabels(t *testing.T) {
	infra := func(reason string) Failure { return Failure{Infra: true, Reason: reason} }
	ambiguous := func(reason string) Failure { return Failure{Ambiguous: true, Reason: reason} }
	none := Failure{}
	kinds := map[errkind.Kind]Failure{
		// The model's and the endpoint's failures, and the configuration's: the harness's errors, no label.
		errkind.ContextLength: none, errkind.RateLimit: none, errkind.Server: none, errkind.Timeout: none,
		errkind.BadResponse: none, errkind.RepeatedError: none, errkind.ContextCapacity: none,
		errkind.LostWorker: infra("lost_worker"),
		errkind.Auth:       none, errkind.Quota: none, errkind.ModelNotFound: none, errkind.ContextWindow: none,
		errkind.BadRequest: none, errkind.Unsupported: none, errkind.StoreMismatch: none,
		// The dataset's row (a test patch that does not apply): a broken environment, as 5.0's pre-flight says.
		errkind.BadInput: infra("bad_input"),
		// The grading machine's.
		errkind.MissingRunner: infra(ReasonMissingModule),
		// What a row's or spec's install_config needs and the machine lacks (a Debian or Python package, a module).
		errkind.PythonEnvironment: infra(ReasonMissingModule),
		errkind.Toolchain:         infra("toolchain"),
		errkind.ModuleDownload:    infra("module_download"),
		errkind.DockerImage:       infra("docker_image"),
		errkind.DockerDaemon:      infra("docker_daemon"),
		errkind.DiskFull:          infra("disk_full"),
		errkind.Permission:        infra("permission"),
		errkind.MissingCommit:     infra("missing_commit"),
		errkind.SymlinkRefused:    infra("symlink_refused"),
		errkind.RepoUnavailable:   infra("repo_unavailable"),
		errkind.Sandbox:           infra("sandbox"),
		errkind.StepTimeout:       infra("step_timeout"),
		errkind.Internal:          infra("internal"),
		errkind.StepFailed:        infra("step_failed"),
	}
	for _, k := range errkind.Kinds() {
		want, ok := kinds[k]
		if !ok {
			t.Errorf("kind %s has no 5.0 label in this table: place it", k)
			continue
		}
		if got := KindFailure(k); got != want {
			t.Errorf("kind %s: %+v, want %+v", k, got, want)
		}
	}

	for _, c := range []struct {
		status    string
		exit      int
		exitKnown bool
		log       string
		want      Failure
	}{
		{StatusUnresolved, 1, true, "", none},
		{StatusTestsMissing, 2, true, "", none},
		{StatusBuildFailed, 1, true, "", none},
		{StatusExitCodeMismatch, 1, true, "", none}, // a forgery the exit code caught is the model's doing
		{StatusTimeout, -1, true, "", ambiguous(ReasonTestsTimedOut)},
		{StatusNoTests, 5, true, "", ambiguous(ReasonNoTestsCollected)},
		{StatusNameMismatch, 0, true, "", ambiguous("tests_name_mismatch")},
		{StatusUnresolved, 137, true, "", ambiguous(ReasonOutOfMemory)},
		{StatusTestsMissing, -1, true, "", ambiguous(ReasonOutOfMemory)},
		{StatusUnresolved, 137, false, "", none},
		{StatusTestsMissing, 2, true, "E   ModuleNotFoundError: No module named 'numpy'\n",
			ambiguous(ReasonMissingModule)},
	} {
		if got := StatusFailure(c.status, c.exit, c.exitKnown, c.log); got != c.want {
			t.Errorf("%s (exit %d, known %v): %+v, want %+v", c.status, c.exit, c.exitKnown, got, c.want)
		}
	}
}
