package cli

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"

	"ctxlab/activities"
	"ctxlab/starter/sweepclient"
)

func init() { commands = append(commands, auditCommand.command()) }

type auditOptions struct{ sweepclient.AuditOptions }

var auditCommand = commandDef[auditOptions, *auditOptions]{
	use:   "audit NAME",
	short: "every attempt of every activity of a run",
	long: "Every attempt of every activity (node x issue) of runs/NAME, from the run folder's records.\n" +
		"starter audit [NAME] --show REF prints a stored object; starter audit NAME --export DIR writes each row's\n" +
		"context, patch and test log to DIR/MODEL/METHOD/INSTANCE/.",
	run: func(o auditOptions, stdout, stderr io.Writer) int {
		return sweepclient.Audit(o.AuditOptions, stdout, stderr)
	},
}

func (o *auditOptions) define(fs *pflag.FlagSet) {
	fs.StringVar(&o.Runs, "runs", "runs", "folder that holds one output folder per experiment")
	fs.StringVar(&o.Store, "store", os.Getenv(activities.StoreEnv), "content store the run used: file:// or s3:// "+
		"`URL`, or a folder (default: the run folder's cas/; $"+activities.StoreEnv+")")
	fs.StringVar(&o.Issue, "issue", "", "show one instance `ID` only")
	fs.StringVar(&o.Method, "method", "", "show only the nodes `METHOD`'s steps use (or MODEL/METHOD)")
	fs.StringVar(&o.Show, "show", "", "print the stored object `REF` (pretty JSON when it is JSON); without NAME, "+
		"every run under --runs is searched")
	fs.BoolVar(&o.JSON, "json", false, "print one JSON document")
	fs.StringVar(&o.Export, "export", "", "write each row's context.txt, patch.diff, test_output.txt and row.json "+
		"to `DIR`/MODEL/METHOD/INSTANCE/, as the SWE-bench harness lays out its logs")
}

func (o *auditOptions) complete(pos []string, _ *pflag.FlagSet) error {
	switch {
	case len(pos) == 1:
		o.Name = pos[0]
	case len(pos) == 0 && o.Show != "":
	default:
		return fmt.Errorf("audit: want one run name (or --show REF), got %d arguments", len(pos))
	}
	return nil
}
