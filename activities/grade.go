package activities

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"

	"ctxlab/activities/diff"
	"ctxlab/activities/repo"
	"ctxlab/activities/testlog"
	"ctxlab/activities/testrun"
	"ctxlab/specs"
)

// GradeParams are the grade step's parameters; Grading is filled in by the plan.
type GradeParams struct {
	Grading specs.Grading `json:"grading"`
}

// Grade statuses recorded on the row.
const (
	GradeResolved     = "resolved"
	GradeUnresolved   = "unresolved"    // tests ran; some listed test did not pass
	GradeEmptyPatch   = "empty_patch"   // nothing to apply: never resolved
	GradePatchFailed  = "patch_failed"  // the model patch does not apply
	GradeTimeout      = "timeout"       // the tests ran past the grading timeout and were killed
	GradeTestsMissing = "tests_missing" // the run produced no result for some listed test
)

// Grade applies the test patch and the model patch to a fresh worktree at base_commit, runs FAIL_TO_PASS and
// PASS_TO_PASS, and decides resolved from the per-test results, never from the exit code. Its output is the test log.
func (a *Activities) Grade(ctx context.Context, in NodeInput) (NodeOutput, error) {
	return a.node(ctx, in, "grade", func(ctx context.Context, j *job) (NodeOutput, error) {
		var p GradeParams
		if err := j.params(&p); err != nil {
			return NodeOutput{}, err
		}
		if p.Grading.Executor != "" && p.Grading.Executor != "local" {
			return NodeOutput{}, permanentf(ErrUnsupported, "grading executor %q is not available", p.Grading.Executor)
		}
		inst, err := j.instance(ctx)
		if err != nil {
			return NodeOutput{}, err
		}
		m, err := j.snapshot(ctx)
		if err != nil {
			return NodeOutput{}, err
		}
		pin, err := j.input("patch")
		if err != nil {
			return NodeOutput{}, err
		}
		patch, err := j.store.Get(ctx, pin.Ref)
		if err != nil {
			return NodeOutput{}, err
		}
		row := map[string]any{"resolved": false}
		if strings.TrimSpace(string(patch)) == "" {
			row["grade_status"] = GradeEmptyPatch
			return NodeOutput{Row: row}, nil
		}

		dir, err := os.MkdirTemp("", "ctxlab-grade-")
		if err != nil {
			return NodeOutput{}, err
		}
		defer os.RemoveAll(dir)
		if err := repo.Materialize(ctx, j.store, m, dir); err != nil {
			return NodeOutput{}, err
		}
		if _, err := diff.ApplyDir(dir, inst.TestPatch); err != nil {
			return NodeOutput{}, permanentf(ErrBadInput, "instance %s: test patch does not apply: %v", inst.InstanceID, err)
		}
		if _, err := diff.ApplyDir(dir, string(patch)); err != nil {
			row["grade_status"] = GradePatchFailed
			row["grade_error"] = err.Error()
			if errors.Is(err, diff.ErrEmpty) {
				row["grade_status"] = GradeEmptyPatch
			}
			return NodeOutput{Row: row}, nil
		}

		timeout := p.Grading.Timeout.D()
		if timeout <= 0 {
			timeout = 30 * time.Minute
		}
		tests := append(append([]string{}, inst.FailToPass...), inst.PassToPass...)
		res, err := testrun.Go(ctx, testrun.Options{
			Dir: dir, Tests: tests, Timeout: timeout,
			Heartbeat: func() {
				if activity.IsActivity(ctx) {
					activity.RecordHeartbeat(ctx)
				}
			},
		})
		if err != nil {
			return NodeOutput{}, fmt.Errorf("instance %s: running tests: %w", inst.InstanceID, err)
		}
		logRef, err := j.store.Put(ctx, res.Output)
		if err != nil {
			return NodeOutput{}, err
		}
		v := testlog.Decide(inst.FailToPass, inst.PassToPass, res.Report)
		row["resolved"] = v.Resolved
		row["grade_seconds"] = res.Duration.Seconds()
		switch {
		case res.TimedOut:
			row["grade_status"] = GradeTimeout
			row["resolved"] = false
		case v.Resolved:
			row["grade_status"] = GradeResolved
		case len(v.Missing) > 0 && len(v.Failed) == 0:
			row["grade_status"] = GradeTestsMissing
		default:
			row["grade_status"] = GradeUnresolved
		}
		if !v.Resolved {
			row["tests_failed"] = v.Failed
			row["tests_missing"] = v.Missing
		}
		return NodeOutput{Ref: logRef, Row: row}, nil
	})
}
