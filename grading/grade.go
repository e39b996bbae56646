package grading

import (
	"context"
	"fmt"
	"strings"
	"time"

	"ctxlab/dataset/swebench"
	"ctxlab/grading/executor"
	"ctxlab/grading/testlog"
	"ctxlab/specs"
	"ctxlab/store/cas"
)

// DefaultTimeout is the per-run timeout when a spec sets none.
const DefaultTimeout = 30 * time.Minute

// Request is one patch to grade, under a spec's grading settings.
type Request struct {
	Instance swebench.Instance
	Patch    string
	// PatchRef is recorded on the row (patch_ref), so predictions can be exported from the rows.
	PatchRef    cas.Ref
	Grading     specs.Grading
	Materialize func(ctx context.Context, dir string) error
	// Heartbeat, if set, is called while the tests run.
	Heartbeat func()
}

// Outcome is a grade: the stored log of every run of the tests ("" when none ran) and the row's fields.
type Outcome struct {
	Log cas.Ref
	Row map[string]any
}

// ExecutorConfig is the executors' part of a spec's grading section.
func ExecutorConfig(g specs.Grading) executor.Config {
	return executor.Config{TestCmd: g.TestCmd.All, TestCmds: g.TestCmd.By, ModelTests: g.ModelTests, Tests: g.Tests,
		LogParser: g.LogParser, Python: g.Python, Namespace: g.Namespace, Network: g.Network, Docker: g.Docker,
		GoProxy: g.GoProxy, Isolation: g.Isolation, InstallConfig: g.InstallConfig, PythonWheels: g.PythonWheels}
}

// Grade grades one patch: the grade step's work (and so `starter grade`'s). It runs the executor once (prepare the
// worktree, apply, run, parse), decides the run's status, and runs it again up to Grading.Reruns times while the
// patch applied but did not resolve (the flake guard); resolved then needs a majority of the runs. Failures of the
// machine come back as errors marked with their kind (errkind), never as a status.
func Grade(ctx context.Context, exec executor.Executor, store cas.Store, r Request) (Outcome, error) {
	row := map[string]any{}
	specs.Resolved.Set(row, false)
	specs.GradeExecutor.Set(row, r.Grading.Executor)
	if r.PatchRef != "" {
		specs.PatchRef.Set(row, string(r.PatchRef))
	}
	timeout := r.Grading.Timeout.D()
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	req := executor.Request{Instance: r.Instance, Patch: r.Patch, Materialize: r.Materialize, Timeout: timeout,
		Config: ExecutorConfig(r.Grading), Heartbeat: r.Heartbeat}

	var logs strings.Builder
	var statuses []string
	resolvedRuns := 0
	var last testlog.Verdict
	var lastReport testlog.Report
	for attempt := 0; attempt <= max(r.Grading.Reruns, 0); attempt++ {
		res, err := exec.Run(ctx, req)
		if err != nil {
			return Outcome{}, err
		}
		if attempt == 0 {
			recordApply(row, res)
			if !res.Ran {
				return Outcome{Row: row}, nil
			}
		}
		v := testlog.DecideInstance(r.Instance, res.Report)
		status := runStatus(res, v)
		if status == StatusBuildFailed {
			if err := moduleDownloadFailure(r, res); err != nil {
				return Outcome{}, err
			}
		}
		statuses = append(statuses, status)
		if status == StatusResolved {
			resolvedRuns++
		}
		last, lastReport = v, res.Report
		fmt.Fprintf(&logs, "===== ctxlab grade run %d of instance %s: %s (%s, %.1fs) =====\n", attempt+1,
			r.Instance.InstanceID, status, strings.Join(res.Command, " "), res.Duration.Seconds())
		logs.Write(res.Output)
		if !strings.HasSuffix(logs.String(), "\n") {
			logs.WriteByte('\n')
		}
		if res.Note != "" {
			specs.GradeNote.Set(row, res.Note)
		}
		if res.Isolation != "" {
			specs.GradeIsolation.Set(row, res.Isolation)
		}
		specs.GradeSeconds.Set(row, res.Duration.Seconds())
		if res.ExitCodeKnown {
			specs.GradeExitCode.Set(row, res.ExitCode)
		}
		if status == StatusResolved && attempt == 0 {
			break // only failing grades are re-run; once re-run, every rerun counts
		}
	}
	logRef, err := store.Put(ctx, []byte(logs.String()))
	if err != nil {
		return Outcome{}, err
	}
	recordVerdict(row, statuses, resolvedRuns, last, lastReport)
	return Outcome{Log: logRef, Row: row}, nil
}
