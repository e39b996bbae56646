package cli

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/pflag"

	"ctxlab/starter/sweepclient"
)

func init() { commands = append(commands, uiCommand.command()) }

type uiOptions struct {
	name      string
	runs      string
	namespace string
	port      int
}

var uiCommand = commandDef[uiOptions, *uiOptions]{
	use:   "ui NAME",
	short: "serve the Temporal Web UI over a run's workflow histories",
	long: "Opens the embedded server of runs/NAME (finished or interrupted) and serves the Temporal Web UI over it " +
		"until Ctrl-C, running no workers; when a starter runs the sweep, it shows that starter's server.",
	run: func(o uiOptions, _, stderr io.Writer) int {
		return sweepclient.ServeUI(filepath.Join(o.runs, o.name), o.name, o.namespace, o.port, stderr)
	},
}

func (o *uiOptions) define(fs *pflag.FlagSet) {
	fs.StringVar(&o.runs, "runs", "runs", "folder that holds one output folder per experiment")
	fs.StringVar(&o.namespace, "namespace", "default", "Temporal namespace the sweep ran in")
	fs.IntVar(&o.port, "ui-port", 0, "`PORT` of the Web UI on 127.0.0.1 (0: a free one)")
}

func (o *uiOptions) complete(pos []string, _ *pflag.FlagSet) error {
	if len(pos) != 1 {
		return fmt.Errorf("ui: want exactly one run name, got %d arguments", len(pos))
	}
	o.name = pos[0]
	return nil
}

func parseUI(args []string, stderr io.Writer) (uiOptions, error) {
	return uiCommand.parse(args, stderr)
}

// defineRunUI declares starter run's Web UI flags on f.
func defineRunUI(fs *pflag.FlagSet, f *sweepclient.UIOptions) {
	fs.BoolVar(&f.On, "ui", false, "serve the Temporal Web UI of the sweep's embedded server while it runs (URL on stderr)")
	fs.IntVar(&f.Port, "ui-port", 0, "`PORT` of the Web UI on 127.0.0.1 (0: a free one; a non-zero port implies --ui)")
}
