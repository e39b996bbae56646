// Command worker joins an existing Temporal cluster and serves some of ctxlab's task queues, for sweeps that need
// more than one machine. The starter runs the same workers in-process when it embeds its own server.
//
// A worker that serves workflows also runs the cheap steps of the issues it drives (local activities: see
// specs.RunsLocally), so it needs the run folders (or the shared store) as the cpu workers do.
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
	"github.com/spf13/pflag"

	"ctxlab/activities"
	"ctxlab/grading/sandbox"
	"ctxlab/internal/cliflags"
	"ctxlab/internal/cluster"
	"ctxlab/internal/logs"
	"ctxlab/jsonnet"
	"ctxlab/store/bucket"
	"ctxlab/wiring"
)

func main() {
	// Same-user processes (graded tests among them) must not read the API keys in our environment.
	if err := sandbox.NonDumpable(); err != nil {
		fmt.Fprintln(os.Stderr, "worker: warning:", err)
	}
	var conn cluster.Options
	conn.Register(flag.CommandLine, "127.0.0.1:7233", "default")
	queues := flag.String("queues", strings.Join(wiring.AllKinds, ","), "comma-separated kinds to serve: "+
		strings.Join(wiring.AllKinds, ", "))
	runs := flag.String("runs", "runs", "folder holding the run folders (shared with the starter and other workers)")
	store := flag.String("store", os.Getenv(activities.StoreEnv), "content store: file:// or s3:// `URL`, or a "+
		"folder (default: each run folder's cas/; $"+activities.StoreEnv+")")
	spec := flag.String("spec", "", "take limits.queues (concurrency, rate) from this spec `FILE`")
	cache := flag.String("cache", os.Getenv(activities.CacheEnv), "keep model answers in this shared `FOLDER` "+
		"(default: each run's content store folder; $"+activities.CacheEnv+")")
	noCache := flag.Bool("no-cache", false, "do not answer model calls from the response cache")
	// --spec reads the spec as starter run does: the same -J/$JSONNET_PATH, --ext-str and --tla-str family.
	fs := pflag.NewFlagSet("worker", pflag.ExitOnError)
	fs.AddGoFlagSet(flag.CommandLine)
	var specFlags jsonnet.Flags
	specFlags.Register(fs)
	_ = fs.Parse(cliflags.GoStyleArgs(fs, os.Args[1:])) // ExitOnError: a bad flag exits 2
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "worker: unexpected arguments %q\n", fs.Args())
		os.Exit(2)
	}

	log, closeLog, _ := logs.New(logs.Options{Console: os.Stderr, ConsoleLevel: zerolog.InfoLevel})
	defer closeLog()
	if err := run(conn, *queues, *runs, *store, *spec, specFlags, *cache, *noCache, log); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
}

func run(conn cluster.Options, queues, runs, store, spec string, specFlags jsonnet.Flags, cache string, noCache bool,
	log zerolog.Logger) error {
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	o := wiring.Options{Kinds: strings.Split(queues, ",")}
	if spec != "" {
		e, err := jsonnet.Compile(spec, specFlags.Options())
		if err != nil {
			return err
		}
		o.Limits, o.Spec = e.Limits.Queues, e.Name
	}
	if err := bucket.Probe(ctx, store); err != nil {
		return err
	}
	c, err := cluster.Dial(ctx, conn, log)
	if err != nil {
		return err
	}
	defer c.Close()
	a := activities.New(runs, log)
	a.StoreURL, a.CacheDir, a.NoCache = store, cache, noCache
	stop, err := wiring.Start(c, a, o)
	if err != nil {
		return err
	}
	defer func() {
		stop()
		if err := a.Close(); err != nil { // the records not in the shared store yet
			log.Error().Err(err).Msg("records lost")
		}
	}()
	log.Info().Str("address", conn.Address).Str("namespace", conn.Namespace).Str("queues", queues).
		Msg("worker running; Ctrl-C stops it")
	<-ctx.Done()
	return nil
}
