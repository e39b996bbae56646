package cli

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"

	"ctxlab/activities"
	"ctxlab/starter/sweepclient"
)

func init() { commands = append(commands, statusCommand.command()) }

type statusOptions struct{ sweepclient.StatusOptions }

var statusCommand = commandDef[statusOptions, *statusOptions]{
	use:   "status NAME",
	short: "where a run's sweep stands",
	long: "Reads runs/NAME's records, so it works while a sweep runs (from another shell) and after one " +
		"stopped, and the spend from the run's budget workflow: on the run's own starter's server while it runs, " +
		"or on the cluster --address names. With --address it first writes there the rows the sweep on that " +
		"Temporal server stored (read from --store), so that it tells the truth on any machine, not only the " +
		"starter's.",
	run: func(o statusOptions, stdout, stderr io.Writer) int {
		return sweepclient.Status(o.StatusOptions, stdout, stderr)
	},
}

func (o *statusOptions) define(fs *pflag.FlagSet) {
	fs.StringVar(&o.Runs, "runs", "runs", "folder that holds one output folder per experiment")
	fs.BoolVar(&o.JSON, "json", false, "print one JSON object")
	fs.StringVar(&o.Store, "store", os.Getenv(activities.StoreEnv), "shared store the run's workers used (file:// "+
		"or s3:// `URL`; $"+activities.StoreEnv+"): their attempt and call records are gathered from it first")
	defineCluster(fs, &o.Cluster, "", "default")
	fs.Lookup("address").Usage = "read the sweep's rows and its budget from the Temporal server at `HOST:PORT` " +
		"(and the rows from the store) into runs/NAME first: status on a machine other than the starter's"
}

func (o *statusOptions) complete(pos []string, _ *pflag.FlagSet) error {
	if len(pos) != 1 {
		return fmt.Errorf("status: want one run name, got %d arguments", len(pos))
	}
	o.Name = pos[0]
	return nil
}

func parseStatus(args []string, stderr io.Writer) (statusOptions, error) {
	return statusCommand.parse(args, stderr)
}
