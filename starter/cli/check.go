package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rs/zerolog"
	"github.com/spf13/pflag"

	"ctxlab/activities"
	"ctxlab/dataset/swebench"
	"ctxlab/internal/cluster"
	"ctxlab/jsonnet"
	"ctxlab/specs"
	"ctxlab/starter/checks"
	"ctxlab/starter/exitcode"
	"ctxlab/starter/sweepclient"
	"ctxlab/store/bucket"
	"ctxlab/workflows"
)

var checkCommand = commandDef[checkOptions, *checkOptions]{
	use:   "check SPEC",
	short: "check, before anything is paid, that the sweep a spec declares can finish",
	long: "Checks what the sweep SPEC declares needs of this machine and its endpoints, before anything runs: per " +
		"instance, that its repository holds its base_commit and the executor can run its tests (interpreter and " +
		"runner module, Go toolchain and module proxy, Docker engine and image); per model, that the endpoint " +
		"(OPENAI_BASE_URL, OPENAI_API_KEY; for an anthropic model ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL) serves its " +
		"id and that its context window, where the server says it, " +
		"holds the prompts; per method, that its embeddings endpoint or compression server answers. Each problem " +
		"names the instance, model or method and the fix; it exits 2 when there is one. starter run runs the same " +
		"checks first (--no-check skips them), starter grade the executor's.",
	run: checkSpec,
}

func init() { commands = append(commands, checkCommand.command()) }

type checkOptions struct {
	spec     string
	runs     string
	cluster  cluster.Options
	store    string
	noWorker bool
	jsonnet.Flags
}

func (o *checkOptions) define(fs *pflag.FlagSet) {
	o.Flags.Register(fs)
	fs.StringVar(&o.runs, "runs", "runs", "folder that holds one output folder per experiment (the demo's "+
		"dataset is generated into it, and repositories cloned by an earlier run are read from it)")
	defineCluster(fs, &o.cluster, "", "default")
	fs.Lookup("address").Usage = "also ask the workers polling this Temporal server at `HOST:PORT` whether they " +
		"share this starter's store, build and queue limits (the handshake starter run makes)"
	fs.StringVar(&o.store, "store", os.Getenv(activities.StoreEnv), "the store the sweep runs with: file:// or "+
		"s3:// `URL`, or a folder ($"+activities.StoreEnv+"); a shared one is probed, and the workers are asked "+
		"whether it is theirs")
	fs.BoolVar(&o.noWorker, "no-worker", false, "check only what starter run --no-worker needs of this machine: "+
		"the rest is the workers' (ask them with --address)")
}

func (o *checkOptions) complete(pos []string, _ *pflag.FlagSet) error {
	var err error
	o.spec, err = oneSpec("check", pos)
	return err
}

func checkSpec(o checkOptions, stdout, stderr io.Writer) int {
	ctx, cancel := context.WithTimeout(context.Background(), checks.Timeout)
	defer cancel()
	e, err := compileSpec(o.spec, o.Flags)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitcode.Usage
	}
	runDir := filepath.Join(o.runs, e.Name)
	instances, datasetErr := sweepclient.PrepareDataset(e, runDir)
	plan, err := specs.BuildPlan(e)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", o.spec, err)
		return exitcode.Usage
	}
	parts := checks.All
	if o.noWorker {
		parts = checks.Parts{}
	}
	rep := checks.New().Sweep(ctx, e, plan, instances, runDir, parts)
	if datasetErr != nil {
		rep.Problems = slices.Insert(rep.Problems, 0, checks.Problem{Kind: "dataset",
			Text: strings.TrimPrefix(datasetErr.Error(), "dataset: "), Fix: "name an existing dataset file (the " +
				"spec's dataset, or --ext-str dataset=FILE where the spec reads one)"})
	}
	checkWorkers(ctx, rep, o, e, runDir)
	if !rep.Print(stdout, stderr, o.spec, true) {
		return exitcode.Usage
	}
	return exitcode.OK
}

// checkWorkers probes the shared store and, with --address, makes starter run's handshake with the workers polling
// the sweep's queues: each that differs (its store, its build, its queue limits) is a problem naming it.
func checkWorkers(ctx context.Context, r *checks.Report, o checkOptions, e *specs.Experiment, runDir string) {
	if err := bucket.Probe(ctx, o.store); err != nil {
		r.Fail("store", o.store, err.Error(), "give --store (or $CTXLAB_STORE) a store this machine can write")
		return
	}
	if o.cluster.Address == "" {
		return
	}
	c, err := cluster.Dial(ctx, o.cluster, zerolog.Nop())
	if err != nil {
		r.Fail("workers", o.cluster.Address, err.Error(), "start the Temporal server, or name it with --address")
		return
	}
	defer c.Close()
	objs, err := bucket.OpenObjects(ctx, o.store, e.Name, runDir)
	if err == nil && bucket.Shared(o.store) {
		err = sweepclient.WriteRunMarker(ctx, o.store, e.Name, runDir)
	}
	var res sweepclient.HandshakeResult
	if err == nil {
		// The run's budget is not asked: check sets no limits on it, and a running sweep's may differ.
		res, err = sweepclient.Handshake(ctx, c, objs, e.Name, workflows.DefaultQueues, e.Limits.Queues, nil)
	}
	if err != nil {
		r.Fail("workers", o.cluster.Address, err.Error(), "check the Temporal server and the store")
		return
	}
	r.Checked = append(r.Checked, fmt.Sprintf("%d worker process(es) at %s", res.Workers, o.cluster.Address))
	switch {
	case res.Workers == 0:
		r.Note("no worker polls the sweep's queues at %s yet: start them before the sweep, or they are checked "+
			"by each of their nodes", o.cluster.Address)
	case len(res.Problems) > 0:
		for _, p := range res.Problems {
			r.Fail("workers", o.cluster.Address, p, "start the workers as the starter runs: the same --store, "+
				"build and --spec")
		}
	}
	for _, w := range res.Silent {
		r.Note("a worker Temporal saw polling at %s did not answer the handshake: %s", o.cluster.Address, w)
	}
}

// checkBeforeRun runs a sweep's checks at the start of starter run, writing the notes and problems to w; it reports
// whether there was no problem.
func checkBeforeRun(ctx context.Context, e *specs.Experiment, plan *specs.Plan, instances []swebench.Instance,
	runDir string, parts checks.Parts, spec string, w io.Writer) bool {
	ctx, cancel := context.WithTimeout(ctx, checks.Timeout)
	defer cancel()
	return checks.New().Sweep(ctx, e, plan, instances, runDir, parts).Print(w, w, spec, false)
}

// checkGraders runs the executor's checks of the instances starter grade grades, as checkBeforeRun does.
func checkGraders(ctx context.Context, ds specs.Dataset, g specs.Grading, instances []swebench.Instance,
	reposDir, what string, w io.Writer) bool {
	ctx, cancel := context.WithTimeout(ctx, checks.Timeout)
	defer cancel()
	return checks.New().Graders(ctx, ds, g, instances, reposDir).Print(w, w, what, false)
}
