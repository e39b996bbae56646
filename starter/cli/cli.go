// Package cli implements the starter's subcommands. Each has an options struct, a parser for its flags, and a run
// function that does the work, so tests can drive either part.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
)

// Exit codes.
const (
	exitOK    = 0
	exitFail  = 1 // the work ran and failed
	exitUsage = 2 // bad flags, a bad spec or dataset: nothing ran
	// exitPaused: the sweep stopped at its spend cap (limits.spend_usd); raising it and running again continues.
	exitPaused = 3
	// exitRowErrors: the sweep finished, but some rows have an error (starter run --allow-errors exits 0 instead).
	exitRowErrors = 4
)

const usage = `usage: starter <command> [flags]

commands:
  run SPEC       run (or attach to) the sweep a Jsonnet spec declares; writes runs/NAME/results.jsonl and summary.md
  compile SPEC   print the compiled DAG of every method as JSON
  status NAME    where runs/NAME's sweep stands: per method done / failed / running / pending, spend, ETA
  audit NAME     every attempt of every activity of runs/NAME (--issue, --method, --json; --show REF opens an object)
  ui NAME        serve the Temporal Web UI over runs/NAME's workflow histories until Ctrl-C (starter run --ui: while it runs)
  report NAME    tables, statistics and figures of a run (or of a results.jsonl): runs/NAME/report.md, tables/, figures/
  predict NAME   freeze a prediction of a method's resolve rate from its context features (--method M --fit M1,M2)
  grade --dataset FILE --predictions FILE
                 grade SWE-bench predictions with ctxlab's grader (no server needed)
  predictions NAME
                 export runs/NAME's patches as SWE-bench predictions JSONL, one file per model and method
  images build --dataset FILE
                 build instance images for the docker executor (repository at base_commit in /testbed), offline
  server --db postgres://USER@HOST:PORT/DB
                 run a standalone Temporal server on PostgreSQL for run --address and worker processes

run "starter <command> -h" for a command's flags.
`

// Main runs the CLI and returns the process exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "starter: unknown command %q\n\n%s", args[0], usage)
		return exitUsage
	}
	return cmd(args[1:], stdout, stderr)
}

// commands maps each subcommand to its entry point; each command's file registers itself in an init function.
var commands = map[string]func(args []string, stdout, stderr io.Writer) int{}

func init() {
	commands["run"] = func(args []string, stdout, stderr io.Writer) int {
		o, err := parseRun(args, stderr)
		if err != nil {
			return usageError(err, stderr)
		}
		return runSweep(o, stdout, stderr)
	}
	commands["compile"] = func(args []string, stdout, stderr io.Writer) int {
		o, err := parseCompile(args, stderr)
		if err != nil {
			return usageError(err, stderr)
		}
		return compile(o, stdout, stderr)
	}
}

func usageError(err error, stderr io.Writer) int {
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	fmt.Fprintln(stderr, "starter:", err)
	return exitUsage
}

// parseInterleaved parses flags that may come before or after positional arguments, as people type them.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		if rest[0] == "--" {
			return append(positional, rest[1:]...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// kvFlag collects repeated K=V flags.
type kvFlag map[string]string

func (kv kvFlag) String() string {
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + kv[k]
	}
	return strings.Join(parts, ",")
}

func (kv kvFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("want KEY=VALUE, got %q", s)
	}
	kv[k] = v
	return nil
}

// oneSpec checks that exactly one spec path was given.
func oneSpec(cmd string, positional []string) (string, error) {
	if len(positional) != 1 {
		return "", fmt.Errorf("%s: want exactly one spec file, got %d arguments", cmd, len(positional))
	}
	return positional[0], nil
}
