package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"ctxlab/starter/embedded"
	"ctxlab/starter/exitcode"
)

// serverOptions are `starter server`'s flags.
type serverOptions struct {
	db        string
	address   string
	namespace string
	logFile   string
}

func init() { commands = append(commands, serverCommand.command()) }

var serverCommand = commandDef[serverOptions, *serverOptions]{
	use:   "server --db postgres://USER@HOST:PORT/DB",
	short: "run a standalone Temporal server on PostgreSQL",
	long: "Runs a Temporal server on PostgreSQL until SIGINT or SIGTERM, for starter run --address and worker " +
		"processes.",
	run: func(o serverOptions, _, stderr io.Writer) int { return runServer(o, stderr) },
}

func (o *serverOptions) define(fs *pflag.FlagSet) {
	fs.StringVar(&o.db, "db", "", "PostgreSQL database `URL` postgres://USER@HOST:PORT/DB (password in the URL or "+
		"$PGPASSWORD; visibility goes to DB_visibility; both are created when missing)")
	fs.StringVar(&o.address, "address", "127.0.0.1:7233", "frontend `HOST:PORT` to listen on (HOST an IP address)")
	fs.StringVar(&o.namespace, "namespace", "default", "namespace to create when missing")
	fs.StringVar(&o.logFile, "log", "temporal-server.log", "the server's log `FILE`")
}

func (o *serverOptions) complete(pos []string, _ *pflag.FlagSet) error {
	if len(pos) > 0 {
		return fmt.Errorf("server: unexpected arguments %q", pos)
	}
	if o.db == "" {
		return fmt.Errorf("server: --db is required (postgres://USER@HOST:PORT/DB)")
	}
	return nil
}

func parseServer(args []string, stderr io.Writer) (serverOptions, error) {
	return serverCommand.parse(args, stderr)
}

// serverStartTimeout bounds the schema setup and the services' start; a database that does not answer fails then.
const serverStartTimeout = 3 * time.Minute

// runServer runs a Temporal server on PostgreSQL until SIGINT or SIGTERM: the server a cluster deployment of ctxlab
// points `starter run --address` and the standalone workers at. Its state is in the database, so it can be killed
// and started again; sweeps, workers and starters carry on once it is back.
func runServer(o serverOptions, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	startCtx, cancel := context.WithTimeout(ctx, serverStartTimeout)
	defer cancel()
	srv, err := embedded.StartPostgres(startCtx, embedded.PostgresOptions{
		URL: o.db, Address: o.address, Namespace: o.namespace, LogFile: o.logFile,
	})
	if err != nil {
		fmt.Fprintln(stderr, "starter:", err)
		return exitcode.Fail
	}
	fmt.Fprintf(stderr, "starter: Temporal server at %s (namespace %s, log %s); Ctrl-C stops it\n",
		srv.HostPort(), srv.Namespace(), o.logFile)
	<-ctx.Done()
	if err := srv.Stop(); err != nil {
		fmt.Fprintln(stderr, "starter: stopping the server:", err)
		return exitcode.Fail
	}
	return exitcode.OK
}
