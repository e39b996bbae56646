package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"ctxlab/results"
	"ctxlab/results/report"
	"ctxlab/runfolder"
	"ctxlab/starter/exitcode"
	"ctxlab/starter/sweepclient"
)

var predictCommand = commandDef[predictOptions, *predictOptions]{
	use:   "predict NAME|RESULTS.jsonl --method M --fit M1,M2",
	short: "freeze a prediction of a method's resolve rate",
	long: "Freezes a prediction of M's resolve rate into a file named by its SHA-256; starter report checks it\n" +
		"against M's outcomes once they exist.",
	run: runPredict,
}

func init() { commands = append(commands, predictCommand.command()) }

type predictOptions struct {
	name, runs, out string
	method, model   string
	fit, features   commaList
	replicates      int
	seed            uint64
}

func (o *predictOptions) define(fs *pflag.FlagSet) {
	fs.StringVar(&o.runs, "runs", "runs", "folder that holds one output folder per experiment")
	fs.StringVar(&o.out, "out", "", "folder for the frozen prediction (default: the run folder's predictions/)")
	fs.StringVar(&o.method, "method", "", "the `METHOD` to predict, from its rows' context features (required)")
	fs.StringVar(&o.model, "model", "", "the model whose rows to use (needed when the method ran under several)")
	fs.Var(&o.fit, "fit", "fit the regression on these graded `METHODS` (comma-separated, required)")
	fs.Var(&o.features, "features", "regression `FEATURES` (default: "+strings.Join(report.DefaultFeatures, ",")+")")
	fs.IntVar(&o.replicates, "replicates", 2000, "bootstrap refits behind the prediction interval")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the refits")
}

func (o *predictOptions) complete(pos []string, _ *pflag.FlagSet) error {
	if len(pos) != 1 {
		return fmt.Errorf("predict: want one run name or results file, got %d arguments", len(pos))
	}
	o.name = pos[0]
	if o.method == "" || len(o.fit) == 0 {
		return fmt.Errorf("predict: --method and --fit are required")
	}
	if o.replicates < 100 {
		return fmt.Errorf("predict: --replicates %d: want at least 100", o.replicates)
	}
	return nil
}

func parsePredict(args []string, stderr io.Writer) (predictOptions, error) {
	return predictCommand.parse(args, stderr)
}

func runPredict(o predictOptions, stdout, stderr io.Writer) int {
	file, dir, err := sweepclient.LocateResults(o.name, o.runs)
	if err != nil {
		fmt.Fprintln(stderr, "starter predict:", err)
		return exitcode.Usage
	}
	sweepclient.RepairRunFolder("predict", dir, file, stderr)
	rows, bad, err := results.ReadFile(file)
	if err != nil {
		fmt.Fprintln(stderr, "starter predict:", err)
		return exitcode.Fail
	}
	for _, b := range bad {
		fmt.Fprintf(stderr, "starter predict: %s line %d is not a row, skipped: %v\n", file, b.Line, b.Err)
	}
	p, err := report.Predict(rows, report.PredictOptions{Method: o.method, Model: o.model, Fit: o.fit,
		Features: o.features, Replicates: o.replicates, Seed: o.seed, Source: file, Now: time.Now()})
	if err != nil {
		fmt.Fprintln(stderr, "starter", err)
		return exitcode.Usage
	}
	out := runfolder.Predictions(dir)
	if o.out != "" {
		out = o.out
	}
	path, err := p.Freeze(out)
	if err != nil {
		fmt.Fprintln(stderr, "starter", err)
		return exitcode.Fail
	}
	fmt.Fprintf(stdout, "%s (%s): predicted resolve %.1f%%, %.0f%% prediction interval [%.1f, %.1f] on %d issues\n",
		p.Method, p.Model, p.PredictedPct, 100*p.Level, p.Interval.Lo, p.Interval.Hi, len(p.Issues))
	fmt.Fprintf(stdout, "fitted on %s (%d rows); features %s\n", strings.Join(p.FitMethods, ", "), p.FitRows,
		strings.Join(p.Features, ", "))
	if len(p.Dropped) > 0 {
		fmt.Fprintf(stdout, "features left out: %s\n", strings.Join(p.Dropped, "; "))
	}
	if len(p.SkippedIssues) > 0 {
		fmt.Fprintf(stdout, "%d rows of %s lack a feature and got no prediction\n", len(p.SkippedIssues), p.Method)
	}
	if p.OutcomesSeen > 0 {
		fmt.Fprintf(stderr, "starter predict: warning: %d rows of %s already have outcomes; the prediction is not blind\n",
			p.OutcomesSeen, p.Method)
	}
	fmt.Fprintf(stdout, "frozen: %s\n", path)
	return exitcode.OK
}
