package cli

import (
	"context"
	"flag"
	"io"
	"os"

	"github.com/spf13/pflag"

	"ctxlab/activities"
	"ctxlab/dataset/swebench"
	"ctxlab/internal/cluster"
	"ctxlab/specs"
	"ctxlab/starter/checks"
	"ctxlab/starter/sweepclient"
)

// runOptions are starter run's flags over the sweep client's options; retry is --retry as given.
type runOptions struct {
	sweepclient.Options
	retry []string
}

// runSweep runs the sweep with the checks starter check runs.
func runSweep(o runOptions, stdout, stderr io.Writer) int {
	o.Check = func(ctx context.Context, e *specs.Experiment, plan *specs.Plan, instances []swebench.Instance,
		runDir string, workers bool, spec string, w io.Writer) bool {
		// The repositories, graders and endpoints are this process's only when it works: with --no-worker they are
		// the workers', on their machines and with their environment (their key, their base URL), which this one
		// cannot judge.
		parts := checks.All
		if !workers {
			parts = checks.Parts{}
		}
		return checkBeforeRun(ctx, e, plan, instances, runDir, parts, spec, w)
	}
	return sweepclient.Run(o.Options, stdout, stderr)
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
	fs.StringVar(&o.Runs, "runs", "runs", "folder that holds one output folder per experiment")
	defineCluster(fs, &o.Cluster, "", "default")
	fs.Lookup("address").Usage = "use the Temporal server at `HOST:PORT` instead of an embedded one"
	fs.StringVar(&o.Store, "store", os.Getenv(activities.StoreEnv), "content store: file:// or s3:// `URL`, or a "+
		"folder (default: the run folder's cas/; $"+activities.StoreEnv+")")
	fs.BoolVar(&o.Quiet, "quiet", false, "print no progress, only the summary")
	fs.BoolVar(&o.JSON, "json", false, "for scripts: progress events and logs as JSON lines on stderr, the summary "+
		"as one JSON object on stdout")
	fs.StringVar(&o.Cache, "cache", os.Getenv(activities.CacheEnv), "keep model answers in this shared `FOLDER`, "+
		"so several experiments reuse them (default: the run's content store folder; $"+activities.CacheEnv+")")
	fs.BoolVar(&o.NoCache, "no-cache", false, "do not answer model calls from the response cache (answers are "+
		"still stored)")
	fs.BoolVar(&o.NoWorker, "no-worker", false, "only submit and watch the sweep; workers run elsewhere")
	fs.BoolVar(&o.AllowErrors, "allow-errors", false, "exit 0 when the sweep finished even if rows have errors "+
		"(by default such a sweep exits 4)")
	fs.StringSliceVar(&o.retry, "retry", nil, "when the sweep has finished, also run again its rows whose error "+
		"is of this `KIND` or CLASS (model, endpoint, configuration, environment; repeatable or comma-separated); "+
		"rows whose error is not the model's are retried without it")
	fs.BoolVar(&o.FreshDB, "fresh-db", false, "move the run folder's Temporal database aside (kept as "+
		"temporal.db.damaged-TIME) and run the sweep on a new one, every finished step taken from its memo: for a "+
		"damaged database")
	fs.BoolVar(&o.NoCheck, "no-check", false, "skip the checks starter check runs (graders, endpoints, model ids, "+
		"context windows) before anything is paid")
	fs.IntVar(&o.MaxHistory, "max-history", 0, "history events before the sweep continues as new (0: default)")
	fs.IntVar(&o.InfraWaits, "infra-waits", 0, "times a step waits for a failing endpoint before its rows record "+
		"the failure (0: default, -1: never; for tests)")
	defineRunUI(fs, &o.UI)
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
	if o.Spec, err = oneSpec("run", pos); err != nil {
		return err
	}
	o.Retry, err = sweepclient.ParseRetry(o.retry)
	return err
}

func parseRun(args []string, stderr io.Writer) (runOptions, error) {
	return runCommand.parse(args, stderr)
}
