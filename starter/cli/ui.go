package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/rs/zerolog"
	"github.com/spf13/pflag"

	"ctxlab/internal/cluster"
	"ctxlab/internal/logs"
	"ctxlab/runfolder"
	"ctxlab/starter/embedded"
)

// uiFlags are `starter run`'s Web UI flags.
type uiFlags struct {
	on   bool
	port int
}

func (f *uiFlags) define(fs *pflag.FlagSet) {
	fs.BoolVar(&f.on, "ui", false, "serve the Temporal Web UI of the sweep's embedded server while it runs (URL on stderr)")
	fs.IntVar(&f.port, "ui-port", 0, "`PORT` of the Web UI on 127.0.0.1 (0: a free one; a non-zero port implies --ui)")
}

func (f uiFlags) wanted() bool { return f.on || f.port != 0 }

// startRunUI serves the Web UI for a sweep when asked to, and returns what stops it. A UI that cannot start is
// reported and left out: the sweep matters more than its view.
func startRunUI(ctx context.Context, conn *connection, namespace string, f uiFlags, stderr io.Writer) (stop func()) {
	if !f.wanted() {
		return func() {}
	}
	if conn.server == nil && !conn.attached {
		fmt.Fprintln(stderr, "starter: --ui serves the Web UI of the embedded server only;", externalUIHint(conn.address))
		return func() {}
	}
	ui, err := embedded.StartUI(ctx, conn.address, namespace, f.port)
	if err != nil {
		fmt.Fprintf(stderr, "starter: %v; the sweep goes on without it\n", err)
		return func() {}
	}
	printUI(stderr, ui)
	return ui.Stop
}

// externalUIHint says where the Web UI of a cluster the starter did not start usually is.
func externalUIHint(address string) string {
	host, _, err := net.SplitHostPort(address)
	if err != nil || host == "" {
		host = "HOST"
	}
	return fmt.Sprintf("the cluster at %s serves its own (a `temporal server start-dev` at http://%s:8233; "+
		"Temporal Cloud at https://cloud.temporal.io)", address, host)
}

func printUI(w io.Writer, ui *embedded.UI) {
	fmt.Fprintf(w, "Temporal Web UI: %s\n  workflows: %s\n", ui.URL(), ui.WorkflowsURL())
}

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
	run: func(o uiOptions, _, stderr io.Writer) int { return serveUI(o, stderr) },
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

// serveUI opens the embedded server of a run folder and serves the Web UI over it until interrupted, so the
// histories of a finished or interrupted sweep can be read without running anything. When a starter is running
// the sweep, the UI shows that starter's server instead.
func serveUI(o uiOptions, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	runDir := filepath.Join(o.runs, o.name)
	if _, err := os.Stat(runfolder.TemporalDBPath(runDir)); err != nil {
		fmt.Fprintf(stderr, "starter ui: %s has no temporal.db: no sweep named %q ran there on the embedded server\n",
			runDir, o.name)
		return exitUsage
	}
	log, closeLog, err := logs.New(logs.Options{Console: stderr, ConsoleLevel: zerolog.InfoLevel})
	if err != nil {
		fmt.Fprintln(stderr, "starter:", err)
		return exitFail
	}
	defer closeLog()
	conn, err := connect(ctx, cluster.Options{Namespace: o.namespace}, runDir, log)
	if err != nil {
		fmt.Fprintln(stderr, "starter:", err)
		return exitFail
	}
	defer conn.close()
	if !conn.attached {
		if err := markViewer(runDir); err != nil {
			log.Warn().Err(err).Msg("could not mark the server as the viewer's; a starter run attaching to it " +
				"would wait for workers")
		}
	}
	ui, err := embedded.StartUI(ctx, conn.address, o.namespace, o.port)
	if err != nil {
		fmt.Fprintln(stderr, "starter:", err)
		return exitFail
	}
	defer ui.Stop()
	printUI(stderr, ui)
	fmt.Fprintln(stderr, "serving until Ctrl-C")
	<-ctx.Done()
	return exitOK
}

// markViewer records in server.json that this process runs no workers, so a `starter run` of the same sweep that
// attaches to the server brings its own instead of waiting.
func markViewer(runDir string) error {
	path := runfolder.Server(runDir)
	b, err := runfolder.ReadFile(path)
	if err != nil {
		return err
	}
	var sf serverFile
	if err := json.Unmarshal(b, &sf); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	sf.Viewer = true
	if b, err = json.Marshal(sf); err != nil {
		return err
	}
	return runfolder.WriteAtomic(path, b)
}

func init() { commands = append(commands, uiCommand.command()) }
