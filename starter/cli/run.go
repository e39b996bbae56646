package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/rs/zerolog"
	"github.com/spf13/pflag"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"ctxlab/activities"
	"ctxlab/activities/api"
	"ctxlab/internal/cluster"
	"ctxlab/jsonnet"
	"ctxlab/results"
	"ctxlab/runfolder"
	"ctxlab/specs"
	"ctxlab/store/cas"
	"ctxlab/workflows"
)

type runOptions struct {
	// tookOver is set when this starter was attached to another's server and runs the sweep again after that
	// server went away (once).
	tookOver bool
	spec     string
	runs     string
	cluster  cluster.Options
	store    string
	quiet    bool
	json     bool
	noWorker bool
	cache    string
	noCache  bool
	ui       uiFlags
	// maxHistory overrides the sweep's continue-as-new threshold (for tests).
	maxHistory int
	// infraWaits overrides how often a node waits for the endpoint before its rows fail (-1: never; for tests).
	infraWaits int
	jsonnet.Flags

	// allowErrors exits 0 when the sweep finished although some rows have errors.
	allowErrors bool
	// retry names kinds and classes of failed rows that a re-run of the finished sweep runs again besides those
	// every re-run retries (the model's failures included when asked).
	retry    []string
	retrySel retrySelection
	// freshDB moves a damaged temporal.db aside and starts the sweep over on a new one.
	freshDB bool
	// noCheck skips the checks (check.go) that the sweep can finish, run before anything is paid.
	noCheck bool
	// retryOnly limits a round's retry to these rows: those that failed (of a kind a re-run retries) in a sweep this
	// starter resumed after a stopped starter left it running.
	retryOnly map[results.Key]bool
}

// runSweep runs the sweep; a sweep a stopped starter left running (a crash, a full disk) is resumed, and once it
// finishes, its rows that failed by no fault of the model are run again, once, as a re-run of a finished sweep runs
// them: the re-run after the fix completes the sweep, whichever moment the last starter stopped at.
func runSweep(o runOptions, stdout, stderr io.Writer) int {
	code, again := runSweepRound(o, stdout, stderr)
	if len(again) == 0 {
		return code
	}
	o.retryOnly = again
	code, _ = runSweepRound(o, stdout, stderr)
	return code
}

var runCommand = commandDef[runOptions, *runOptions]{
	use:   "run SPEC",
	short: "run (or attach to) the sweep a Jsonnet spec declares",
	long: "Runs the sweep SPEC declares into runs/NAME (results.jsonl, summary.md), or attaches to it when another " +
		"starter runs it.",
	run: runSweep,
}

func init() { commands = append(commands, runCommand.command()) }

func (o *runOptions) define(fs *pflag.FlagSet) {
	o.Flags.Register(fs)
	fs.StringVar(&o.runs, "runs", "runs", "folder that holds one output folder per experiment")
	defineCluster(fs, &o.cluster, "", "default")
	fs.Lookup("address").Usage = "use the Temporal server at `HOST:PORT` instead of an embedded one"
	fs.StringVar(&o.store, "store", os.Getenv(activities.StoreEnv), "content store: file:// or s3:// `URL`, or a "+
		"folder (default: the run folder's cas/; $"+activities.StoreEnv+")")
	fs.BoolVar(&o.quiet, "quiet", false, "print no progress, only the summary")
	fs.BoolVar(&o.json, "json", false, "for scripts: progress events and logs as JSON lines on stderr, the summary "+
		"as one JSON object on stdout")
	fs.StringVar(&o.cache, "cache", os.Getenv(activities.CacheEnv), "keep model answers in this shared `FOLDER`, "+
		"so several experiments reuse them (default: the run's content store folder; $"+activities.CacheEnv+")")
	fs.BoolVar(&o.noCache, "no-cache", false, "do not answer model calls from the response cache (answers are "+
		"still stored)")
	fs.BoolVar(&o.noWorker, "no-worker", false, "only submit and watch the sweep; workers run elsewhere")
	fs.BoolVar(&o.allowErrors, "allow-errors", false, "exit 0 when the sweep finished even if rows have errors "+
		"(by default such a sweep exits 4)")
	fs.StringSliceVar(&o.retry, "retry", nil, "when the sweep has finished, also run again its rows whose error "+
		"is of this `KIND` or CLASS (model, endpoint, configuration, environment; repeatable or comma-separated); "+
		"rows whose error is not the model's are retried without it")
	fs.BoolVar(&o.freshDB, "fresh-db", false, "move the run folder's Temporal database aside (kept as "+
		"temporal.db.damaged-TIME) and run the sweep on a new one, every finished step taken from its memo: for a "+
		"damaged database")
	fs.BoolVar(&o.noCheck, "no-check", false, "skip the checks starter check runs (graders, endpoints, model ids, "+
		"context windows) before anything is paid")
	fs.IntVar(&o.maxHistory, "max-history", 0, "history events before the sweep continues as new (0: default)")
	fs.IntVar(&o.infraWaits, "infra-waits", 0, "times a step waits for a failing endpoint before its rows record "+
		"the failure (0: default, -1: never; for tests)")
	o.ui.define(fs)
}

// defineCluster declares the connection flags on fs. They are declared once, in package cluster, on the flag
// package's type, which the worker also uses; pflag takes them over as they are.
func defineCluster(fs *pflag.FlagSet, o *cluster.Options, address, namespace string) {
	gfs := flag.NewFlagSet("cluster", flag.ContinueOnError)
	o.Register(gfs, address, namespace)
	fs.AddGoFlagSet(gfs)
}

func (o *runOptions) complete(pos []string, _ *pflag.FlagSet) error {
	var err error
	if o.spec, err = oneSpec("run", pos); err != nil {
		return err
	}
	o.retrySel, err = parseRetry(o.retry)
	return err
}

func parseRun(args []string, stderr io.Writer) (runOptions, error) {
	return runCommand.parse(args, stderr)
}

// rowErrorsExit is a finished sweep's exit code: exitRowErrors when some of its rows have an error (unless
// --allow-errors), saying how many and of which kinds.
func rowErrorsExit(o runOptions, runDir string, stderr io.Writer) int {
	rows, _, err := results.ReadFile(runfolder.Rows(runDir))
	if errors.Is(err, os.ErrNotExist) { // a sweep of no issue writes no row
		return exitOK
	}
	if err != nil {
		fmt.Fprintln(stderr, "starter: reading the rows:", err)
		return exitFail
	}
	tally := tallyRowErrors(rows)
	if tally.Errors == 0 {
		return exitOK
	}
	fmt.Fprintf(stderr, "starter: %d of %d rows have errors (%s); see the error column of %s or starter status %s\n",
		tally.Errors, tally.Rows, tally, runfolder.Rows(runDir), filepath.Base(runDir))
	fmt.Fprintf(stderr, "starter: by cause: %s\n", tally.byClass())
	if o.allowErrors {
		return exitOK
	}
	return exitRowErrors
}

// takeRetriedRows takes the rows of a finished sweep that a re-run retries (their error is not the model's, or is
// of a kind or class sel names) out of results.jsonl, appending them to results.retried.jsonl, and returns them by
// instance as the sweep's Retry, with their tally. Rows of arms outside the plan stay.
func takeRetriedRows(runDir string, plan *specs.Plan, sel retrySelection, only map[results.Key]bool) (
	map[string][]results.Key, rowErrorTally, error) {
	retries := retriesRow(plan, sel)
	tally := tallyRowErrors(nil)
	removed, err := results.Store{Path: runfolder.Rows(runDir)}.Remove(func(r results.Row) bool {
		return retries(r) && (only == nil || only[r.Key()])
	})
	if err != nil || len(removed) == 0 {
		return nil, tally, err
	}
	var b []byte
	retry := map[string][]results.Key{}
	for _, r := range removed {
		tally.add(r)
		line, err := json.Marshal(r)
		if err != nil {
			return nil, tally, err
		}
		b = append(append(b, line...), '\n')
		k := r.Key()
		arm := results.Key{Method: k.Method, Model: k.Model, Sample: k.Sample}
		if !slices.Contains(retry[k.Instance], arm) {
			retry[k.Instance] = append(retry[k.Instance], arm)
		}
	}
	f, err := runfolder.OpenFile(runfolder.Retried(runDir), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err == nil {
		_, err = f.Write(b)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return nil, tally, fmt.Errorf("keeping the retried rows in %s: %w", runfolder.Retried(runDir), err)
	}
	return retry, tally, nil
}

// retriesRow says whether a re-run retries a row: one of the plan's arms, failed of a kind sel retries.
func retriesRow(plan *specs.Plan, sel retrySelection) func(results.Row) bool {
	arms := map[results.Key]bool{}
	for _, a := range plan.Arms {
		arms[results.Key{Method: a.Method, Model: a.Model}] = true
	}
	return func(r results.Row) bool {
		k := r.Key()
		return sel.retries(r) && arms[results.Key{Method: k.Method, Model: k.Model}]
	}
}

// retriedRows are the rows of results.jsonl that a re-run retries, left where they are (nil when there is none, or
// the file cannot be read: then nothing is retried early).
func retriedRows(runDir string, plan *specs.Plan, sel retrySelection) map[results.Key]bool {
	rows, _, err := results.ReadFile(runfolder.Rows(runDir))
	if err != nil {
		return nil
	}
	retries := retriesRow(plan, sel)
	var keys map[results.Key]bool
	for _, r := range rows {
		if retries(r) {
			if keys == nil {
				keys = map[results.Key]bool{}
			}
			keys[r.Key()] = true
		}
	}
	return keys
}

func sweepInput(e *specs.Experiment, plan *specs.Plan, planRef cas.Ref, maxHistory int) workflows.SweepInput {
	in := workflows.SweepInput{
		Run: e.Name, Title: "ctxlab: " + e.Name, Plan: planRef, Dataset: e.Dataset, Grading: e.Grading,
		Concurrency: e.Limits.Concurrency, Retries: e.Limits.Retries, Debug: e.Debug, Queues: workflows.DefaultQueues,
		MaxHistory: maxHistory,
	}
	for _, arm := range plan.Arms {
		in.Order = append(in.Order, results.ArmKey(arm))
	}
	return in
}

const specHashMemo = "spec_hash"

// attachedHow is what startOrAttach says of a sweep it found running.
const attachedHow = "attached to the running sweep"

// startOrAttach attaches to a running sweep, or to a finished one of the same spec; otherwise it starts a new run.
// Before a new run replaces a finished sweep of another spec, replaced is called with that spec's hash, so its rows
// can be put aside instead of being mistaken for the new spec's. A finished sweep of the same spec is run again
// for the rows retry takes out of its results (failed by no fault of the model, or of a kind --retry names), and
// only for them.
func startOrAttach(ctx context.Context, c client.Client, id string, in workflows.SweepInput, hash string,
	replaced func(oldHash string) error, retry func() (map[string][]results.Key, rowErrorTally, error)) (
	client.WorkflowRun, string, error) {
	how := "started the sweep"
	desc, err := c.DescribeWorkflowExecution(ctx, id, "")
	var notFound *serviceerror.NotFound
	switch {
	case err == nil:
		info := desc.GetWorkflowExecutionInfo()
		old := memoSpecHash(info)
		switch info.GetStatus() {
		case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
			if old != "" && old != hash {
				return nil, "", &specConflictError{id: id, running: old, this: hash}
			}
			return c.GetWorkflow(ctx, id, ""), attachedHow, nil
		case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
			if old == hash {
				again, tally, err := retry()
				if err != nil {
					return nil, "", fmt.Errorf("taking out the rows to retry: %w", err)
				}
				if len(again) == 0 {
					return c.GetWorkflow(ctx, id, ""), "the sweep had already finished; showing its results", nil
				}
				in.Retry = again
				// Only the issues with rows to retry run again (the sweep filters what it loads itself).
				in.Instances = slices.DeleteFunc(slices.Clone(in.Instances), func(i api.InstanceRef) bool {
					return len(again[i.ID]) == 0
				})
				how = fmt.Sprintf("the sweep had finished with %d row(s) to retry: %s (kept in %s); running them "+
					"again", tally.Errors, tally.classes(), runfolder.RetriedFile)
			}
		}
		if old != "" && old != hash {
			if err := replaced(old); err != nil {
				return nil, "", err
			}
		}
	case errors.As(err, &notFound):
	default:
		return nil, "", fmt.Errorf("looking up workflow %s: %w", id, err)
	}
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       id,
		TaskQueue:                in.Queues.Workflow,
		Memo:                     map[string]any{specHashMemo: hash},
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
	}, workflows.SweepName, in)
	if err != nil {
		return nil, "", fmt.Errorf("starting workflow %s: %w", id, err)
	}
	// The conflict policy returns a sweep another starter started in between: it must be of this spec.
	if err := refuseOtherSpec(ctx, c, id, hash); err != nil {
		return nil, "", err
	}
	return run, how, nil
}

// archiveResults puts aside the rows and summary of a sweep of another spec (runfolder.PutAside), so the new
// sweep's results.jsonl holds only its own rows. Node outputs stay: they are keyed by content, so the new sweep
// reuses every node the two specs share.
func archiveResults(runDir, oldHash string, log zerolog.Logger) error {
	dest, err := runfolder.PutAside(runDir, oldHash)
	if dest != "" {
		log.Info().Str("moved_to", dest).Msg("the spec changed since the last sweep; its results were put aside")
	}
	return err
}
