package cli

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"ctxlab/activities"
	"ctxlab/results/report"
	"ctxlab/results/stats"
	"ctxlab/starter/sweepclient"
)

func init() { commands = append(commands, reportCommand.command()) }

var reportCommand = commandDef[reportOptions, *reportOptions]{
	use:   "report NAME|RESULTS.jsonl",
	short: "tables, statistics and figures of a run",
	long:  "NAME is a run folder under --runs; a path to a results.jsonl works too.",
	run: func(o reportOptions, stdout, stderr io.Writer) int {
		return sweepclient.Report(o.ReportOptions, stdout, stderr)
	},
}

type reportOptions struct{ sweepclient.ReportOptions }

func (o *reportOptions) define(fs *pflag.FlagSet) {
	fs.StringVar(&o.Runs, "runs", "runs", "folder that holds one output folder per experiment")
	fs.StringVar(&o.Out, "out", "", "write the report here instead of next to the results (default: the run folder)")
	fs.StringVar(&o.Anchor, "anchor", "", "compare every method against `METHOD` (default: the spec's budget anchor, else the first method)")
	fs.Var((*commaList)(&o.Fit), "fit", "fit the regression on these `METHODS` (comma-separated; default: all)")
	fs.Var((*commaList)(&o.Features), "features", "regression `FEATURES` (comma-separated row fields, or log_tokens; default: "+strings.Join(report.DefaultFeatures, ",")+")")
	fs.Var((*commaList)(&o.Predictions), "prediction", "also check this frozen prediction `FILE` (repeatable; the run's predictions/ folder is always read)")
	fs.StringVar(&o.Alternative, "alternative", report.AltObserved, "one-sided McNemar direction: observed (the side with more wins) or anchor (the anchor resolves more)")
	fs.IntVar(&o.Resamples, "resamples", stats.DefaultResamples, "issue-level bootstrap resamples")
	fs.Uint64Var(&o.Seed, "seed", 1, "bootstrap seed (the same seed gives the same report)")
	fs.BoolVar(&o.NoFigures, "no-figures", false, "write tables only")
	fs.Var((*commaList)(&o.Pairs), "pair", "also list the disagreements of methods `A,B` (repeatable; every comparison's are listed)")
	fs.StringVar(&o.Store, "store", os.Getenv(activities.StoreEnv), "content store the run used, for report.html's "+
		"drill-down: file:// or s3:// `URL`, or a folder (default: the run folder's cas/; $"+activities.StoreEnv+")")
	defineCluster(fs, &o.Cluster, "", "default")
	fs.Lookup("address").Usage = "read the sweep's rows from the Temporal server at `HOST:PORT` (and --store) into " +
		"runs/NAME first: a report on a machine other than the starter's"
}

func (o *reportOptions) complete(pos []string, _ *pflag.FlagSet) error {
	if len(pos) != 1 {
		return fmt.Errorf("report: want one run name or results file, got %d arguments", len(pos))
	}
	o.Name = pos[0]
	if o.Alternative != report.AltObserved && o.Alternative != report.AltAnchor {
		return fmt.Errorf("report: --alternative %q: want observed or anchor", o.Alternative)
	}
	if len(o.Pairs)%2 != 0 {
		return fmt.Errorf("report: --pair wants two methods, A,B")
	}
	if o.Resamples < 100 {
		return fmt.Errorf("report: --resamples %d: want at least 100", o.Resamples)
	}
	return nil
}

func parseReport(args []string, stderr io.Writer) (reportOptions, error) {
	return reportCommand.parse(args, stderr)
}
