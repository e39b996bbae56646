package sweepclient

import (
	"errors"
	"fmt"

	"go.temporal.io/sdk/client"

	"ctxlab/activities/limiter"
	"ctxlab/activities/steps"
	"ctxlab/results"
	"ctxlab/starter/exitcode"
	"ctxlab/store/bucket"
	"ctxlab/wiring"
	"ctxlab/workflows"
)

// connect connects to the run's server (starting it, or attaching to another starter's), refuses a sweep running
// from another spec, sets the limits on the run's budget and starts the Web UI and, unless another process runs
// them, the workers.
func (r *sweepRound) connect() error {
	conn, err := connectFresh(r.ctx, r.o.Cluster, r.runDir, r.o.FreshDB, r.log)
	if err != nil {
		lines := []string{"starter: " + explainDiskFull(err, r.runDir).Error()}
		if hint := damagedDBHint(err, r.o.Spec); hint != "" {
			lines = append(lines, "starter: "+hint)
		}
		return exitcode.With(exitcode.Fail, lines...)
	}
	r.conn = conn
	r.deferred(conn.Close)
	if err := refuseOtherSpec(r.ctx, conn.Client, "sweep/"+r.e.Name, r.hash); err != nil {
		return exitcode.Failed(exitCodeOf(err), r.explainConflict(err))
	}
	if err := SetBudget(r.ctx, conn.Client, r.e.Name, r.runDir, r.in.Queues.Workflow, steps.LimitsOf(r.e)); err != nil {
		return exitcode.Failed(exitcode.Fail, err)
	}
	r.deferred(startRunUI(r.ctx, conn, r.o.Cluster.Namespace, r.o.UI, r.stderr))
	if !r.o.NoWorker && (!conn.attached || conn.ownerIdle) {
		stopWorkers, err := wiring.Start(conn.Client, r.acts, wiring.Options{Kinds: wiring.AllKinds,
			Limits: r.e.Limits.Queues, Spec: r.e.Name})
		if err != nil {
			return exitcode.Failed(exitcode.Fail, err)
		}
		r.deferred(stopWorkers)
	}
	return r.checkWorkers()
}

// checkWorkers refuses to run the sweep when a worker polling its queues differs from this starter (handshake):
// its store, its build or its queue limits. Workers that started after it are held to the run's store by their
// activities (activities.Objects).
func (r *sweepRound) checkWorkers() error {
	objs, err := r.acts.Objects(r.e.Name)
	if err != nil {
		return exitcode.Failed(exitcode.Fail, err)
	}
	var budget *limiter.Limits // a run of offline models only pays for no call
	if paysModels(r.e) {
		lim := steps.LimitsOf(r.e)
		budget = &lim
	}
	res, err := Handshake(r.ctx, r.conn.Client, objs, r.e.Name, r.in.Queues, r.e.Limits.Queues, budget)
	if err != nil {
		r.log.Warn().Err(err).Msg("could not ask the workers what they serve")
		return nil
	}
	for _, w := range res.Silent {
		r.log.Warn().Str("worker", w).Msg("a worker Temporal saw polling the sweep's queues did not answer the " +
			"handshake (gone since, or an older ctxlab)")
	}
	if len(res.Problems) > 0 {
		lines := []string{fmt.Sprintf("starter: refusing to run the sweep: %d of the %d worker processes polling its "+
			"queues differ from this starter:", res.Differ, res.Workers)}
		for _, p := range res.Problems {
			lines = append(lines, "starter:   "+p)
		}
		return exitcode.With(exitcode.Usage, lines...)
	}
	if res.Workers > 0 {
		r.log.Info().Int("workers", res.Workers-len(res.Silent)).Bool("budget_asked", res.BudgetAsked).
			Msg("the workers share this starter's store, build and queue limits (and, asked, the run's budget)")
	}
	return nil
}

// explainConflict adds to a refusal of a sweep running from another spec what in this spec would reproduce the
// running one's hash, when the starter knows (formerDefaultHint); other errors pass unchanged.
func (r *sweepRound) explainConflict(err error) error {
	var conflict *specConflictError
	if errors.As(err, &conflict) {
		conflict.hint = formerDefaultHint(r.e, r.in, conflict.running)
	}
	return err
}

// start starts the sweep or attaches to it (see startOrAttach), repairs the rows file and wakes the issues that
// wait. resumed says the sweep was left running by a starter that stopped (a crash, a full disk): this is the re-run
// after the fix, so the rows filed as failures a re-run retries are run again once the sweep finishes, once. Their
// failures may predate this re-run even when their rows are written now: the Issue workflows record what their
// activities failed with before the stop.
func (r *sweepRound) start() (run client.WorkflowRun, resumed bool, err error) {
	repaired := false
	repair := func() {
		repairAtStart(r.ctx, r.conn.Client, r.acts, r.e.Name, r.plan, r.planRef, r.e.Dataset, r.instances, r.log)
		repaired = true
	}
	run, how, err := startOrAttach(r.ctx, r.conn.Client, "sweep/"+r.e.Name, r.in, r.hash, func(old string) error {
		if recordedUnderFormerDefault(r.e, r.in, old) {
			return &formerDefaultError{finished: old}
		}
		return archiveResults(r.runDir, old, r.log)
	}, func() (map[string][]results.Key, RowErrorTally, error) {
		// The finished sweep's histories are about to be replaced by the retry's: a row lost from results.jsonl
		// (a torn line) that only its Issue's history holds is taken back now, and so retried like any other.
		repair()
		return takeRetriedRows(r.runDir, r.plan, r.o.Retry, r.o.retryOnly)
	})
	r.unlockPrep()
	if err != nil {
		return nil, false, exitcode.Failed(exitCodeOf(err), r.explainConflict(err))
	}
	r.log.Info().Str("workflow", run.GetID()).Msg(how)
	store, err := r.acts.Store(r.e.Name)
	if err != nil {
		return nil, false, exitcode.Failed(exitcode.Fail, err)
	}
	r.collector = newRowCollector(r.conn.Client, run.GetID(), store, r.runDir)
	if bucket.Shared(r.o.Store) {
		if r.collector.records, err = r.acts.Objects(r.e.Name); err != nil {
			return nil, false, exitcode.Failed(exitcode.Fail, err)
		}
	}
	resumed = how == attachedHow && !r.conn.attached && r.o.retryOnly == nil
	if !repaired {
		repair() // a torn results.jsonl
	}
	// Issues waiting at the spend cap check it again now: the cap may have been raised since they stopped; those
	// waiting for the endpoint try it again now, saying what they waited for.
	_ = r.conn.Client.SignalWorkflow(r.ctx, run.GetID(), "", workflows.ResumeSignal, nil)
	wakeWaitingIssues(r.ctx, r.conn.Client, run.GetID(), r.log)
	if err := WriteSpecRecord(r.runDir, r.e); err != nil { // for starter report: method order, budget anchor
		r.log.Warn().Err(err).Msg("could not record the spec in the run folder")
	}
	return run, resumed, nil
}
