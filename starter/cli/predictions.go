package cli

import (
	"context"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"ctxlab/results/predictions"
	"ctxlab/runfolder"
	"ctxlab/starter/exitcode"
	"ctxlab/starter/sweepclient"
)

type predictionsOptions struct {
	name, runs string
}

var predictionsCommand = commandDef[predictionsOptions, *predictionsOptions]{
	use:   "predictions NAME",
	short: "export a run's patches as SWE-bench predictions",
	long: "Writes runs/NAME/predictions/MODEL__METHOD.jsonl (SWE-bench's format) and, beside each, the same " +
		"predictions in Multi-SWE-bench's format.",
	run: exportPredictions,
}

func init() { commands = append(commands, predictionsCommand.command()) }

func (o *predictionsOptions) define(fs *pflag.FlagSet) {
	fs.StringVar(&o.runs, "runs", "runs", "folder that holds one output folder per experiment")
}

func (o *predictionsOptions) complete(pos []string, _ *pflag.FlagSet) error {
	if len(pos) != 1 {
		return fmt.Errorf("predictions: want exactly one run name, got %d arguments", len(pos))
	}
	o.name = pos[0]
	return nil
}

func exportPredictions(o predictionsOptions, stdout, stderr io.Writer) int {
	dir := filepath.Join(o.runs, o.name)
	sweepclient.RepairRunFolder("predictions", dir, runfolder.Rows(dir), stderr)
	res, err := predictions.Export(context.Background(), dir)
	if err != nil {
		fmt.Fprintln(stderr, "starter:", err)
		return exitcode.Fail
	}
	for _, path := range slices.Sorted(maps.Keys(res.Files)) {
		fmt.Fprintf(stdout, "%s\t%d predictions\n", path, res.Files[path])
	}
	if res.NoPatch > 0 {
		fmt.Fprintf(stderr, "starter: %d row(s) have no patch_ref (their patch step failed, or the method has no "+
			"grade step); written with an empty model_patch\n", res.NoPatch)
	}
	if n := len(res.NotMultiSWEBench); n > 0 {
		fmt.Fprintf(stderr, "starter: %d instance id(s) are not org__repo-number, so the Multi-SWE-bench files leave them out: %s\n",
			n, strings.Join(res.NotMultiSWEBench[:min(n, 10)], ", "))
	}
	return exitcode.OK
}
