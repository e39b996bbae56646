// Command worker joins an existing Temporal cluster and serves some of ctxlab's task queues, for sweeps that need
// more than one machine. The starter runs the same workers in-process when it embeds its own server.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/client"

	"ctxlab/activities"
	"ctxlab/internal/logs"
	"ctxlab/internal/workers"
)

func main() {
	address := flag.String("address", "127.0.0.1:7233", "Temporal frontend `HOST:PORT`")
	namespace := flag.String("namespace", "default", "Temporal namespace")
	queues := flag.String("queues", strings.Join(workers.AllKinds, ","), "comma-separated kinds to serve")
	runs := flag.String("runs", "runs", "folder holding the run folders (shared with the starter)")
	flag.Parse()

	log, closeLog, _ := logs.New(logs.Options{Console: os.Stderr, ConsoleLevel: zerolog.InfoLevel})
	defer closeLog()
	c, err := client.Dial(client.Options{HostPort: *address, Namespace: *namespace, Logger: logs.Temporal{L: log}})
	if err != nil {
		fmt.Fprintf(os.Stderr, "worker: cannot reach Temporal at %s: %v\n", *address, err)
		os.Exit(1)
	}
	defer c.Close()
	stop, err := workers.Start(c, activities.New(*runs, log), workers.Options{Kinds: strings.Split(*queues, ",")})
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
	defer stop()
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	log.Info().Str("address", *address).Str("queues", *queues).Msg("worker running; Ctrl-C stops it")
	<-ctx.Done()
}
