package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/client"

	"ctxlab/activities"
	"ctxlab/activities/limiter"
	"ctxlab/activities/steps"
	"ctxlab/dataset/swebench"
	"ctxlab/internal/flock"
	"ctxlab/internal/logs"
	"ctxlab/results"
	"ctxlab/runfolder"
	"ctxlab/specs"
	"ctxlab/starter/checks"
	"ctxlab/store/bucket"
	"ctxlab/store/cas"
	"ctxlab/wiring"
	"ctxlab/workflows"
)

// sweepRound is one round of starter run (see runSweep), in the steps of its methods below: open the run's log,
// prepare the run folder and the plan, store the plan, connect (and start the UI and workers), start or attach to the
// sweep, wait for it and say how it ended. The steps share what it holds; its cleanups run, last first, as the round
// ends.
type sweepRound struct {
	o              runOptions
	ctx            context.Context
	stdout, stderr io.Writer
	console        *consoleSwitch
	log            zerolog.Logger
	cleanups       []func()

	e          *specs.Experiment
	runDir     string
	unlockPrep func()
	instances  []swebench.Instance
	plan       *specs.Plan
	planRef    cas.Ref
	in         workflows.SweepInput
	hash       string
	acts       *activities.Activities
	conn       *connection
	collector  *rowCollector
}

// roundExit ends a round before its sweep ends: the round prints lines on stderr and exits with code.
type roundExit struct {
	code  int
	lines []string
}

func (x *roundExit) Error() string { return fmt.Sprint(x.lines) }

// exitWith is a roundExit of code that prints lines.
func exitWith(code int, lines ...string) *roundExit { return &roundExit{code: code, lines: lines} }

// starterFailed is a roundExit of code that prints err after "starter: ".
func starterFailed(code int, err error) *roundExit { return exitWith(code, "starter: "+err.Error()) }

// runSweepRound runs one round of the sweep; again holds the rows to retry in a second round (see runSweep).
func runSweepRound(o runOptions, stdout, stderr io.Writer) (code int, again map[results.Key]bool) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.json { // every stderr line is JSON, even the messages for people
		jl := &jsonLines{w: stderr}
		defer jl.Flush()
		stderr = jl
	}
	r := &sweepRound{o: o, ctx: ctx, stdout: stdout, stderr: stderr}
	defer r.close()
	code, again, err := r.run()
	var x *roundExit
	if errors.As(err, &x) {
		for _, line := range x.lines {
			fmt.Fprintln(r.stderr, line)
		}
		return x.code, nil
	}
	return code, again
}

// run does the round's steps in order; a roundExit says why it stopped before the sweep ended.
func (r *sweepRound) run() (int, map[results.Key]bool, error) {
	for _, step := range []func() error{r.openLog, r.prepare, r.storePlan, r.connect} {
		if err := step(); err != nil {
			return 0, nil, err
		}
	}
	run, resumed, err := r.start()
	if err != nil {
		return 0, nil, err
	}
	code, again := r.finish(r.wait(run), resumed)
	return code, again, nil
}

// deferred adds a cleanup to run as the round ends.
func (r *sweepRound) deferred(cleanup func()) { r.cleanups = append(r.cleanups, cleanup) }

func (r *sweepRound) close() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

// openLog compiles the spec and opens the run's log (console and ctxlab.log).
func (r *sweepRound) openLog() error {
	e, err := compileSpec(r.o.spec, r.o.Flags)
	if err != nil {
		return exitWith(exitUsage, err.Error())
	}
	r.e, r.runDir = e, filepath.Join(r.o.runs, e.Name)
	if err := checkStartSpace(r.runDir); err != nil {
		return starterFailed(exitFail, err)
	}
	consoleLevel := zerolog.InfoLevel
	if r.o.quiet {
		consoleLevel = zerolog.WarnLevel
	}
	r.console = &consoleSwitch{base: r.stderr, tty: logs.IsTerminal(r.stderr)}
	log, closeLog, err := logs.New(logs.Options{Console: r.console, ConsoleLevel: consoleLevel,
		ConsoleJSON: r.o.json, File: runfolder.Log(r.runDir)})
	if err != nil {
		return starterFailed(exitFail, err)
	}
	r.log = log
	r.deferred(func() { _ = closeLog() })
	return nil
}

// prepare takes the run folder's prepare lock (held until the sweep is started or attached to), prepares the
// dataset, builds the plan and checks, before anything is paid, that the sweep can finish.
func (r *sweepRound) prepare() error {
	// Two starters of one sweep started at once prepare the same run folder (dataset, limits) and start or attach
	// to its sweep one at a time: one of another spec sees the first's sweep before it writes anything.
	unlockPrep, err := flock.Lock(r.ctx, runfolder.PrepareLockPath(r.runDir), 100*time.Millisecond)
	if err != nil {
		return starterFailed(exitFail, err)
	}
	r.unlockPrep = sync.OnceFunc(unlockPrep)
	r.deferred(r.unlockPrep)
	if err := checkRunFolder(r.runDir); err != nil {
		return starterFailed(exitFail, err)
	}
	if r.instances, err = prepareDataset(r.e, r.runDir); err != nil {
		if isDiskFull(err) { // the machine's failure, not the dataset's
			return exitWith(exitFail, explainDiskFull(err, r.runDir).Error())
		}
		return exitWith(exitUsage, err.Error())
	}
	if r.plan, err = specs.BuildPlan(r.e); err != nil {
		return exitWith(exitUsage, fmt.Sprintf("%s: %v", r.o.spec, err))
	}
	// The repositories, graders and endpoints are this process's only when it works: with --no-worker they are
	// the workers', on their machines and with their environment (their key, their base URL), which this one
	// cannot judge.
	parts := checks.All
	if r.o.noWorker {
		parts = checks.Parts{}
	}
	if !r.o.noCheck && !checkBeforeRun(r.ctx, r.e, r.plan, r.instances, r.runDir, parts, r.o.spec, r.stderr) {
		return exitWith(exitUsage)
	}
	return nil
}

// storePlan puts the plan in the run's content store and makes the sweep's input and spec hash.
func (r *sweepRound) storePlan() error {
	if err := bucket.Probe(r.ctx, r.o.store); err != nil {
		return starterFailed(exitFail, err)
	}
	r.acts = activities.New(r.o.runs, r.log)
	r.acts.StoreURL, r.acts.CacheDir, r.acts.NoCache = r.o.store, r.o.cache, r.o.noCache
	r.deferred(func() { // after the workers stopped (cleanups run last first)
		if err := r.acts.Close(); err != nil {
			r.log.Warn().Err(err).Msg("records of this process's workers not in the shared store")
		}
	})
	store, err := r.acts.Store(r.e.Name)
	if err != nil {
		return starterFailed(exitFail, err)
	}
	if r.planRef, err = cas.PutJSON(r.ctx, store, r.plan); err != nil {
		return starterFailed(exitFail, err)
	}
	r.in = sweepInput(r.e, r.plan, r.planRef, r.o.maxHistory)
	r.in.InfraWaits = r.o.infraWaits
	if r.in.Instances, err = instanceRefs(r.ctx, store, r.instances); err != nil {
		return starterFailed(exitFail, err)
	}
	if bucket.Shared(r.o.store) {
		if err := writeRunMarker(r.ctx, r.o.store, r.e.Name, r.runDir); err != nil {
			return starterFailed(exitFail, err)
		}
		if r.in.Shipped, err = shipFolders(r.ctx, store, r.e, r.instances, r.log); err != nil {
			return starterFailed(exitFail, err)
		}
	}
	if r.hash, err = specHash(r.in, r.plan); err != nil {
		return starterFailed(exitFail, err)
	}
	r.log.Info().Str("spec", r.o.spec).Int("instances", len(r.instances)).Int("methods", len(r.plan.Arms)).
		Int("nodes_per_issue", len(r.plan.Nodes)).Str("run", r.runDir).Msg("sweep")
	return nil
}

// connect connects to the run's server (starting it, or attaching to another starter's), refuses a sweep running
// from another spec, sets the limits on the run's budget and starts the Web UI and, unless another process runs
// them, the workers.
func (r *sweepRound) connect() error {
	conn, err := connectFresh(r.ctx, r.o.cluster, r.runDir, r.o.freshDB, r.log)
	if err != nil {
		lines := []string{"starter: " + explainDiskFull(err, r.runDir).Error()}
		if hint := damagedDBHint(err, r.o.spec); hint != "" {
			lines = append(lines, "starter: "+hint)
		}
		return exitWith(exitFail, lines...)
	}
	r.conn = conn
	r.deferred(conn.close)
	if err := refuseOtherSpec(r.ctx, conn.client, "sweep/"+r.e.Name, r.hash); err != nil {
		return starterFailed(exitCodeOf(err), r.explainConflict(err))
	}
	if err := setBudget(r.ctx, conn.client, r.e.Name, r.runDir, r.in.Queues.Workflow, steps.LimitsOf(r.e)); err != nil {
		return starterFailed(exitFail, err)
	}
	r.deferred(startRunUI(r.ctx, conn, r.o.cluster.Namespace, r.o.ui, r.stderr))
	if !r.o.noWorker && (!conn.attached || conn.ownerIdle) {
		stopWorkers, err := wiring.Start(conn.client, r.acts, wiring.Options{Kinds: wiring.AllKinds,
			Limits: r.e.Limits.Queues, Spec: r.e.Name})
		if err != nil {
			return starterFailed(exitFail, err)
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
		return starterFailed(exitFail, err)
	}
	var budget *limiter.Limits // a run of offline models only pays for no call
	if paysModels(r.e) {
		lim := steps.LimitsOf(r.e)
		budget = &lim
	}
	res, err := handshake(r.ctx, r.conn.client, objs, r.e.Name, r.in.Queues, r.e.Limits.Queues, budget)
	if err != nil {
		r.log.Warn().Err(err).Msg("could not ask the workers what they serve")
		return nil
	}
	for _, w := range res.silent {
		r.log.Warn().Str("worker", w).Msg("a worker Temporal saw polling the sweep's queues did not answer the " +
			"handshake (gone since, or an older ctxlab)")
	}
	if len(res.problems) > 0 {
		lines := []string{fmt.Sprintf("starter: refusing to run the sweep: %d of the %d worker processes polling its "+
			"queues differ from this starter:", res.differ, res.workers)}
		for _, p := range res.problems {
			lines = append(lines, "starter:   "+p)
		}
		return exitWith(exitUsage, lines...)
	}
	if res.workers > 0 {
		r.log.Info().Int("workers", res.workers-len(res.silent)).Bool("budget_asked", res.budgetAsked).
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
		repairAtStart(r.ctx, r.conn.client, r.acts, r.e.Name, r.plan, r.planRef, r.e.Dataset, r.instances, r.log)
		repaired = true
	}
	run, how, err := startOrAttach(r.ctx, r.conn.client, "sweep/"+r.e.Name, r.in, r.hash, func(old string) error {
		if recordedUnderFormerDefault(r.e, r.in, old) {
			return &formerDefaultError{finished: old}
		}
		return archiveResults(r.runDir, old, r.log)
	}, func() (map[string][]results.Key, rowErrorTally, error) {
		// The finished sweep's histories are about to be replaced by the retry's: a row lost from results.jsonl
		// (a torn line) that only its Issue's history holds is taken back now, and so retried like any other.
		repair()
		return takeRetriedRows(r.runDir, r.plan, r.o.retrySel, r.o.retryOnly)
	})
	r.unlockPrep()
	if err != nil {
		return nil, false, starterFailed(exitCodeOf(err), r.explainConflict(err))
	}
	r.log.Info().Str("workflow", run.GetID()).Msg(how)
	store, err := r.acts.Store(r.e.Name)
	if err != nil {
		return nil, false, starterFailed(exitFail, err)
	}
	r.collector = newRowCollector(r.conn.client, run.GetID(), store, r.runDir)
	if bucket.Shared(r.o.store) {
		if r.collector.records, err = r.acts.Objects(r.e.Name); err != nil {
			return nil, false, starterFailed(exitFail, err)
		}
	}
	resumed = how == attachedHow && !r.conn.attached && r.o.retryOnly == nil
	if !repaired {
		repair() // a torn results.jsonl
	}
	// Issues waiting at the spend cap check it again now: the cap may have been raised since they stopped; those
	// waiting for the endpoint try it again now, saying what they waited for.
	_ = r.conn.client.SignalWorkflow(r.ctx, run.GetID(), "", workflows.ResumeSignal, nil)
	wakeWaitingIssues(r.ctx, r.conn.client, run.GetID(), r.log)
	if err := writeSpecRecord(r.runDir, r.e); err != nil { // for starter report: method order, budget anchor
		r.log.Warn().Err(err).Msg("could not record the spec in the run folder")
	}
	return run, resumed, nil
}

// sweepEnd is how waiting for the sweep ended.
type sweepEnd struct {
	res workflows.SweepResult
	err error
	// ownerGone: the attached-to starter's server went away; diskFull: the run folder's disk filled up; paused:
	// every running issue waits for the spend cap (the progress sample that showed it).
	ownerGone bool
	diskFull  *error
	paused    *progressEvent
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
	watched := watch(r.ctx, newSampler(r.conn.client, run.GetID(), budget, r.runDir, len(r.plan.Arms), r.collector),
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
		if failed := retriedRows(r.runDir, r.plan, r.o.retrySel); len(failed) > 0 {
			r.log.Info().Int("rows", len(failed)).Msg("the resumed sweep finished; running again, once, the rows " +
				"that failed by no fault of the model")
			return exitOK, failed
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
		return runSweep(r.o, r.stdout, r.stderr), true
	case end.diskFull != nil:
		if r.o.json {
			writeJSONSummary(r.stdout, r.runDir, end.res, *end.diskFull)
		}
		fmt.Fprintln(r.stderr, "starter: the sweep stops:", *end.diskFull)
		return exitFail, true
	case end.paused != nil:
		spend, paused := r.e.Limits.SpendUSD, end.paused.IssuesPaused
		if r.o.json {
			writeJSONSummary(r.stdout, r.runDir, end.res, fmt.Errorf("spend cap reached (limits.spend_usd $%g): %d "+
				"issue(s) wait for it", spend, paused))
		}
		fmt.Fprintf(r.stderr, "starter: spend cap reached (limits.spend_usd $%g): %d issue(s) wait for it; the sweep "+
			"is saved in %s: raise limits.spend_usd in %s and run again to continue\n",
			spend, paused, r.runDir, r.o.spec)
		return exitPaused, true
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
	return overCapExit(r.ctx, r.conn.client, r.e.Name, r.stderr)
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
	if r.o.json {
		jsonErr := end.err
		if jsonErr == nil {
			jsonErr = lost
		}
		writeJSONSummary(r.stdout, r.runDir, end.res, jsonErr)
	}
	if end.err != nil {
		if r.ctx.Err() != nil {
			fmt.Fprintln(r.stderr, "starter: interrupted; the sweep is saved in", r.runDir, "and continues when run again")
			return exitFail
		}
		fmt.Fprintln(r.stderr, "starter: sweep failed:", end.err)
		return exitFail
	}
	res := end.res
	r.log.Info().Int("issues", res.Issues).Int("failed", len(res.Failed)).Int("generations", res.Generations).
		Msg("sweep finished")
	if !r.o.json {
		fmt.Fprint(r.stdout, res.Summary)
		fmt.Fprintf(r.stdout, "\nresults: %s\nsummary: %s\n", runfolder.Rows(r.runDir), runfolder.Summary(r.runDir))
	}
	if len(res.Failed) > 0 {
		fmt.Fprintf(r.stderr, "starter: %d issue(s) failed without rows: %v (see %s)\n", len(res.Failed), res.Failed,
			runfolder.Log(r.runDir))
		return exitFail
	}
	overCode, over := r.overCap()
	if lost != nil {
		fmt.Fprintln(r.stderr, "starter:", lost)
		return exitFail
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
