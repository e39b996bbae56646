package sweepclient

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"ctxlab/activities"
	"ctxlab/dataset/swebench"
	"ctxlab/internal/flock"
	"ctxlab/internal/logs"
	"ctxlab/jsonnet"
	"ctxlab/results"
	"ctxlab/runfolder"
	"ctxlab/specs"
	"ctxlab/starter/exitcode"
	"ctxlab/store/bucket"
	"ctxlab/store/cas"
	"ctxlab/workflows"
)

// sweepRound is one round of starter run (see Run), in the steps of its methods below: open the run's log,
// prepare the run folder and the plan, store the plan, connect (and start the UI and workers), start or attach to the
// sweep, wait for it and say how it ended. The steps share what it holds; its cleanups run, last first, as the round
// ends.
type sweepRound struct {
	o              Options
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
	conn       *Connection
	collector  *rowCollector
}

// runSweepRound runs one round of the sweep; again holds the rows to retry in a second round (see Run).
func runSweepRound(o Options, stdout, stderr io.Writer) (code int, again map[results.Key]bool) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.JSON { // every stderr line is JSON, even the messages for people
		jl := &jsonLines{w: stderr}
		defer jl.Flush()
		stderr = jl
	}
	r := &sweepRound{o: o, ctx: ctx, stdout: stdout, stderr: stderr}
	defer r.close()
	code, again, err := r.run()
	if err != nil {
		return exitcode.Saying(code, err, r.stderr), nil
	}
	return code, again
}

// run does the round's steps in order; an exitcode.Exit says why it stopped before the sweep ended.
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
	e, err := jsonnet.Compile(r.o.Spec, r.o.Flags.Options())
	if err != nil {
		return exitcode.With(exitcode.Usage, err.Error())
	}
	r.e, r.runDir = e, filepath.Join(r.o.Runs, e.Name)
	if err := checkStartSpace(r.runDir); err != nil {
		return exitcode.Failed(exitcode.Fail, err)
	}
	consoleLevel := zerolog.InfoLevel
	if r.o.Quiet {
		consoleLevel = zerolog.WarnLevel
	}
	r.console = &consoleSwitch{base: r.stderr, tty: logs.IsTerminal(r.stderr)}
	log, closeLog, err := logs.New(logs.Options{Console: r.console, ConsoleLevel: consoleLevel,
		ConsoleJSON: r.o.JSON, File: runfolder.Log(r.runDir)})
	if err != nil {
		return exitcode.Failed(exitcode.Fail, err)
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
		return exitcode.Failed(exitcode.Fail, err)
	}
	r.unlockPrep = sync.OnceFunc(unlockPrep)
	r.deferred(r.unlockPrep)
	if err := checkRunFolder(r.runDir); err != nil {
		return exitcode.Failed(exitcode.Fail, err)
	}
	if r.instances, err = PrepareDataset(r.e, r.runDir); err != nil {
		if isDiskFull(err) { // the machine's failure, not the dataset's
			return exitcode.With(exitcode.Fail, explainDiskFull(err, r.runDir).Error())
		}
		return exitcode.With(exitcode.Usage, err.Error())
	}
	if r.plan, err = specs.BuildPlan(r.e); err != nil {
		return exitcode.With(exitcode.Usage, fmt.Sprintf("%s: %v", r.o.Spec, err))
	}
	if !r.o.NoCheck && r.o.Check != nil &&
		!r.o.Check(r.ctx, r.e, r.plan, r.instances, r.runDir, !r.o.NoWorker, r.o.Spec, r.stderr) {
		return exitcode.With(exitcode.Usage)
	}
	return nil
}

// storePlan puts the plan in the run's content store and makes the sweep's input and spec hash.
func (r *sweepRound) storePlan() error {
	if err := bucket.Probe(r.ctx, r.o.Store); err != nil {
		return exitcode.Failed(exitcode.Fail, err)
	}
	r.acts = activities.New(r.o.Runs, r.log)
	r.acts.StoreURL, r.acts.CacheDir, r.acts.NoCache = r.o.Store, r.o.Cache, r.o.NoCache
	r.deferred(func() { // after the workers stopped (cleanups run last first)
		if err := r.acts.Close(); err != nil {
			r.log.Warn().Err(err).Msg("records of this process's workers not in the shared store")
		}
	})
	store, err := r.acts.Store(r.e.Name)
	if err != nil {
		return exitcode.Failed(exitcode.Fail, err)
	}
	if r.planRef, err = cas.PutJSON(r.ctx, store, r.plan); err != nil {
		return exitcode.Failed(exitcode.Fail, err)
	}
	r.in = sweepInput(r.e, r.plan, r.planRef, r.o.MaxHistory)
	r.in.InfraWaits = r.o.InfraWaits
	if r.in.Instances, err = instanceRefs(r.ctx, store, r.instances); err != nil {
		return exitcode.Failed(exitcode.Fail, err)
	}
	if bucket.Shared(r.o.Store) {
		if err := WriteRunMarker(r.ctx, r.o.Store, r.e.Name, r.runDir); err != nil {
			return exitcode.Failed(exitcode.Fail, err)
		}
		if r.in.Shipped, err = shipFolders(r.ctx, store, r.e, r.instances, r.log); err != nil {
			return exitcode.Failed(exitcode.Fail, err)
		}
	}
	if r.hash, err = specHash(r.in, r.plan); err != nil {
		return exitcode.Failed(exitcode.Fail, err)
	}
	r.log.Info().Str("spec", r.o.Spec).Int("instances", len(r.instances)).Int("methods", len(r.plan.Arms)).
		Int("nodes_per_issue", len(r.plan.Nodes)).Str("run", r.runDir).Msg("sweep")
	return nil
}
