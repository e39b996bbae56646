package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"ctxlab/starter/embedded"
)

// serverOptions are `starter server`'s flags.
type serverOptions struct {
	db        string
	address   string
	namespace string
	logFile   string
}

func init() {
	commands = append(commands, newCommand("server", "run a standalone Temporal server on PostgreSQL", parseServer,
		func(o serverOptions, _, stderr io.Writer) int { return runServer(o, stderr) }))
}

func parseServer(args []string, stderr io.Writer) (serverOptions, error) {
	var o serverOptions
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.db, "db", "", "PostgreSQL database `URL` postgres://USER@HOST:PORT/DB (password in the URL or "+
		"$PGPASSWORD; visibility goes to DB_visibility; both are created when missing)")
	fs.StringVar(&o.address, "address", "127.0.0.1:7233", "frontend `HOST:PORT` to listen on (HOST an IP address)")
	fs.StringVar(&o.namespace, "namespace", "default", "namespace to create when missing")
	fs.StringVar(&o.logFile, "log", "temporal-server.log", "the server's log `FILE`")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: starter server --db postgres://USER@HOST:PORT/DB [flags]")
		printFlags(fs)
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return o, err
	}
	if len(pos) > 0 {
		return o, fmt.Errorf("server: unexpected arguments %q", pos)
	}
	if o.db == "" {
		return o, fmt.Errorf("server: --db is required (postgres://USER@HOST:PORT/DB)")
	}
	return o, nil
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
		return exitFail
	}
	fmt.Fprintf(stderr, "starter: Temporal server at %s (namespace %s, log %s); Ctrl-C stops it\n",
		srv.HostPort(), srv.Namespace(), o.logFile)
	<-ctx.Done()
	if err := srv.Stop(); err != nil {
		fmt.Fprintln(stderr, "starter: stopping the server:", err)
		return exitFail
	}
	return exitOK
}
