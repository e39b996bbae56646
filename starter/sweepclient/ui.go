package sweepclient

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/rs/zerolog"

	"ctxlab/internal/cluster"
	"ctxlab/internal/logs"
	"ctxlab/runfolder"
	"ctxlab/starter/embedded"
	"ctxlab/starter/exitcode"
)

// UIOptions are `starter run`'s Web UI flags: On serves it, on Port of 127.0.0.1 (0: a free one; a non-zero port
// implies On).
type UIOptions struct {
	On   bool
	Port int
}

func (f UIOptions) Wanted() bool { return f.On || f.Port != 0 }

// startRunUI serves the Web UI for a sweep when asked to, and returns what stops it. A UI that cannot start is
// reported and left out: the sweep matters more than its view.
func startRunUI(ctx context.Context, conn *Connection, namespace string, f UIOptions, stderr io.Writer) (stop func()) {
	if !f.Wanted() {
		return func() {}
	}
	if conn.server == nil && !conn.attached {
		fmt.Fprintln(stderr, "starter: --ui serves the Web UI of the embedded server only;", ExternalUIHint(conn.address))
		return func() {}
	}
	ui, err := embedded.StartUI(ctx, conn.address, namespace, f.Port)
	if err != nil {
		fmt.Fprintf(stderr, "starter: %v; the sweep goes on without it\n", err)
		return func() {}
	}
	printUI(stderr, ui)
	return ui.Stop
}

// ExternalUIHint says where the Web UI of a cluster the starter did not start usually is.
func ExternalUIHint(address string) string {
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

// ServeUI opens the embedded server of the run folder runDir of run name and serves the Web UI over it until interrupted, so the
// histories of a finished or interrupted sweep can be read without running anything. When a starter is running
// the sweep, the UI shows that starter's server instead.
func ServeUI(runDir, name, namespace string, port int, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if _, err := os.Stat(runfolder.TemporalDBPath(runDir)); err != nil {
		fmt.Fprintf(stderr, "starter ui: %s has no temporal.db: no sweep named %q ran there on the embedded server\n",
			runDir, name)
		return exitcode.Usage
	}
	log, closeLog, err := logs.New(logs.Options{Console: stderr, ConsoleLevel: zerolog.InfoLevel})
	if err != nil {
		fmt.Fprintln(stderr, "starter:", err)
		return exitcode.Fail
	}
	defer closeLog()
	conn, err := Connect(ctx, cluster.Options{Namespace: namespace}, runDir, log)
	if err != nil {
		fmt.Fprintln(stderr, "starter:", err)
		return exitcode.Fail
	}
	defer conn.Close()
	if !conn.attached {
		if err := markViewer(runDir); err != nil {
			log.Warn().Err(err).Msg("could not mark the server as the viewer's; a starter run attaching to it " +
				"would wait for workers")
		}
	}
	ui, err := embedded.StartUI(ctx, conn.address, namespace, port)
	if err != nil {
		fmt.Fprintln(stderr, "starter:", err)
		return exitcode.Fail
	}
	defer ui.Stop()
	printUI(stderr, ui)
	fmt.Fprintln(stderr, "serving until Ctrl-C")
	<-ctx.Done()
	return exitcode.OK
}

// markViewer records in server.json that this process runs no workers, so a `starter run` of the same sweep that
// attaches to the server brings its own instead of waiting.
func markViewer(runDir string) error {
	path := runfolder.Server(runDir)
	b, err := runfolder.ReadFile(path)
	if err != nil {
		return err
	}
	var sf ServerFile
	if err := json.Unmarshal(b, &sf); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	sf.Viewer = true
	if b, err = json.Marshal(sf); err != nil {
		return err
	}
	return runfolder.WriteAtomic(path, b)
}
