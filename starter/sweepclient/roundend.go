package sweepclient

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/client"

	"ctxlab/activities"
	"ctxlab/results"
	"ctxlab/runfolder"
	"ctxlab/starter/exitcode"
	"ctxlab/workflows"
)

// sweepEnd is how waiting for the sweep ended.
type sweepEnd struct {
	res workflows.SweepResult
	err error
	// ownerGone: the attached-to starter's server went away; diskFull: the run folder's disk filled up; paused:
	// every running issue waits for the spend cap (the progress sample that showed it).
	ownerGone bool
	diskFull  *error
	paused    *ProgressEvent
	// rowsErr is the failure to write the finished sweep's stored rows into results.jsonl.
	rowsErr error
}

// wait shows the sweep's progress until it ends, the owner's server goes away, the disk fills up or every running
// issue waits for the spend cap.
func (r *sweepRound) wait(run client.WorkflowRun) sweepEnd {
	getCtx, stopGet := context.WithCancel(r.ctx)
	defer stopGet()
	var ownerGone atomic.Bool
	if r.conn.attached {
		go watchOwner(getCtx, r.runDir, r.conn.address, func() { ownerGone.Store(true); stopGet() })
	}
	var diskFull atomic.Pointer[error]
	go watchDisk(getCtx, r.runDir, func(err error) { diskFull.Store(&err); stopGet() })
	guard := &pauseGuard{stop: stopGet}
	done := make(chan struct{})
	budget := "" // a run of offline models only has no spend to read
	if paysModels(r.e) {
		budget = r.e.Name
	}
	watched := watch(r.ctx, newSampler(r.conn.Client, run.GetID(), budget, r.runDir, len(r.plan.Arms), r.collector),
		progressDisplay(r.o, r.stderr, r.console), guard, done)
	var end sweepEnd
	end.err = run.Get(getCtx, &end.res)
	close(done)
	<-watched
	if end.err == nil {
		_ = r.acts.Flush(r.ctx) // this process's workers' last records, for the collector to gather
		end.rowsErr = r.collector.finish(r.ctx, end.res.Rows)
	}
	end.ownerGone, end.diskFull, end.paused = ownerGone.Load(), diskFull.Load(), guard.hit
	return end
}

// finish says how the sweep ended and returns the exit code; again holds the rows to run again in a second round
// when a resumed sweep finished with rows a re-run retries.
func (r *sweepRound) finish(end sweepEnd, resumed bool) (code int, again map[results.Key]bool) {
	if code, stopped := r.stopped(end); stopped {
		return code, nil
	}
	if end.err == nil && resumed && len(end.res.Failed) == 0 {
		if failed := retriedRows(r.runDir, r.plan, r.o.Retry); len(failed) > 0 {
			r.log.Info().Int("rows", len(failed)).Msg("the resumed sweep finished; running again, once, the rows " +
				"that failed by no fault of the model")
			return exitcode.OK, failed
		}
	}
	return r.finished(end), nil
}

// stopped handles a wait that ended before the sweep did and was not interrupted: the owner's server went away
// (this starter takes over, once), the disk filled up or the spend cap holds every issue.
func (r *sweepRound) stopped(end sweepEnd) (code int, stopped bool) {
	if end.err == nil || r.ctx.Err() != nil {
		return 0, false
	}
	switch {
	case end.ownerGone && !r.o.tookOver:
		// The owner's server went away before this starter read the sweep's end: it finished and stopped, or was
		// killed. Connecting again takes the run's lock once the owner has let go, and starts the server here: a
		// finished sweep is then shown, a running one resumed with this process's workers.
		r.log.Info().Msg("the starter that ran this sweep's server has stopped; carrying on with a server of this one")
		r.o.tookOver = true
		return Run(r.o, r.stdout, r.stderr), true
	case end.diskFull != nil:
		if r.o.JSON {
			writeJSONSummary(r.stdout, r.runDir, end.res, *end.diskFull)
		}
		fmt.Fprintln(r.stderr, "starter: the sweep stops:", *end.diskFull)
		return exitcode.Fail, true
	case end.paused != nil:
		spend, paused := r.e.Limits.SpendUSD, end.paused.IssuesPaused
		if r.o.JSON {
			writeJSONSummary(r.stdout, r.runDir, end.res, fmt.Errorf("spend cap reached (limits.spend_usd $%g): %d "+
				"issue(s) wait for it", spend, paused))
		}
		fmt.Fprintf(r.stderr, "starter: spend cap reached (limits.spend_usd $%g): %d issue(s) wait for it; the sweep "+
			"is saved in %s: raise limits.spend_usd in %s and run again to continue\n",
			spend, paused, r.runDir, r.o.Spec)
		return exitcode.Paused, true
	}
	return 0, false
}

// overCap is overCapExit for a run that pays for calls, once this process's calls' last costs reached its budget.
func (r *sweepRound) overCap() (int, bool) {
	if !paysModels(r.e) {
		return 0, false
	}
	flushCtx, cancel := context.WithTimeout(r.ctx, 10*time.Second)
	_ = r.acts.FlushBudgets(flushCtx)
	cancel()
	return overCapExit(r.ctx, r.conn.Client, r.e.Name, r.stderr)
}

// finished says how the sweep ended (or that it was interrupted or failed) and returns the exit code. The summary
// is written here, from the rows the starter wrote; a finished sweep whose rows are not all in results.jsonl fails,
// as one whose budget counts more than its cap does.
func (r *sweepRound) finished(end sweepEnd) int {
	var lost error
	if end.err == nil {
		lost = r.checkRows(end)
		summary, err := activities.WriteSummary(r.runDir, r.in.Title, r.in.Order)
		if err != nil && lost == nil {
			lost = fmt.Errorf("writing %s: %w", runfolder.Summary(r.runDir), err)
		}
		end.res.Summary = summary
	}
	if r.o.JSON {
		jsonErr := end.err
		if jsonErr == nil {
			jsonErr = lost
		}
		writeJSONSummary(r.stdout, r.runDir, end.res, jsonErr)
	}
	if end.err != nil {
		if r.ctx.Err() != nil {
			fmt.Fprintln(r.stderr, "starter: interrupted; the sweep is saved in", r.runDir, "and continues when run again")
			return exitcode.Fail
		}
		fmt.Fprintln(r.stderr, "starter: sweep failed:", end.err)
		return exitcode.Fail
	}
	res := end.res
	r.log.Info().Int("issues", res.Issues).Int("failed", len(res.Failed)).Int("generations", res.Generations).
		Msg("sweep finished")
	if !r.o.JSON {
		fmt.Fprint(r.stdout, res.Summary)
		fmt.Fprintf(r.stdout, "\nresults: %s\nsummary: %s\n", runfolder.Rows(r.runDir), runfolder.Summary(r.runDir))
	}
	if len(res.Failed) > 0 {
		fmt.Fprintf(r.stderr, "starter: %d issue(s) failed without rows: %v (see %s)\n", len(res.Failed), res.Failed,
			runfolder.Log(r.runDir))
		return exitcode.Fail
	}
	overCode, over := r.overCap()
	if lost != nil {
		fmt.Fprintln(r.stderr, "starter:", lost)
		return exitcode.Fail
	}
	if over {
		return overCode
	}
	return rowErrorsExit(r.o, r.runDir, r.stderr)
}

// checkRows says what is wrong when a finished sweep's rows are not all in results.jsonl: every (instance, method,
// model) of the spec must be there once the sweep ends, or the run did not do its work, whatever its issues said.
func (r *sweepRound) checkRows(end sweepEnd) error {
	ids := make([]string, 0, len(r.instances))
	for _, in := range r.instances {
		if !slices.Contains(end.res.Failed, in.InstanceID) { // reported as failed issues already
			ids = append(ids, in.InstanceID)
		}
	}
	missing, err := missingRows(r.runDir, r.plan, ids)
	if err != nil {
		return fmt.Errorf("reading %s to check every row is there: %w", runfolder.Rows(r.runDir), err)
	}
	if len(missing) == 0 {
		return nil
	}
	why := "their issues finished without storing them where this starter reads"
	if end.rowsErr != nil {
		why = end.rowsErr.Error()
	}
	k := missing[0]
	return fmt.Errorf("%d of %d rows are missing from %s (the first: instance %s, method %s, model %s): %s",
		len(missing), len(ids)*len(r.plan.Arms), runfolder.Rows(r.runDir), k.Instance, k.Method, k.Model, why)
}
