// Package cli implements the starter's subcommands. Each has an options struct, a parser for its flags, and a run
// function that does the work, so tests can drive either part.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
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

  completion bash|zsh|fish|powershell
                 print a shell completion script (commands and flags)

run "starter <command> -h" for a command's flags.
`

// Main runs the CLI and returns the process exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	case "help":
		if len(args) == 1 {
			fmt.Fprint(stdout, usage)
			return exitOK
		}
		args = append(slices.Clone(args[1:]), "--help") // starter help COMMAND: starter COMMAND --help
	}
	code := exitOK
	root := newRootCommand(stdout, stderr, &code)
	root.InitDefaultCompletionCmd(args...)
	isCompletionRequest := args[0] == cobra.ShellCompRequestCmd || args[0] == cobra.ShellCompNoDescRequestCmd
	if found, _, err := root.Find(args); !isCompletionRequest && (err != nil || found == root) {
		fmt.Fprintf(stderr, "starter: unknown command %q\n\n%s", args[0], usage)
		return exitUsage
	}
	root.SetArgs(args)
	if err := root.Execute(); err != nil {
		fmt.Fprintln(stderr, "starter:", err)
		return exitUsage
	}
	return code
}

// newRootCommand builds the starter's cobra command tree; each subcommand stores its exit code in *code.
func newRootCommand(stdout, stderr io.Writer, code *int) *cobra.Command {
	root := &cobra.Command{
		Use:           "starter",
		Short:         "run context-selection experiments for coding agents",
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	cobraHelp := root.HelpFunc()
	root.SetHelpFunc(func(c *cobra.Command, args []string) {
		if c == root {
			fmt.Fprint(c.OutOrStdout(), usage)
			return
		}
		cobraHelp(c, args) // cobra's own commands (completion); ours parse -h themselves
	})
	for _, c := range commands {
		root.AddCommand(c.cobra(stdout, stderr, code))
	}
	images := &cobra.Command{
		Use:   "images",
		Short: "build instance images for the docker executor",
		RunE: func(*cobra.Command, []string) error {
			*code = usageError(errors.New("usage: starter images build --dataset FILE|--spec SPEC [--base IMAGE] "+
				"[--namespace NS]"), stderr)
			return nil
		},
	}
	images.AddCommand(imagesBuildCommand.cobra(stdout, stderr, code))
	root.AddCommand(images)
	return root
}

// command is one subcommand: parse reads its flags and arguments (printing its usage on -h), run does the work
// and returns the exit code.
type command struct {
	name, short string
	parse       func(args []string, stderr io.Writer) (run func(stdout, stderr io.Writer) int, err error)
}

// commands are the top-level subcommands; each command's file registers itself in an init function.
var commands []command

func init() {
	commands = append(commands,
		newCommand("run", "run (or attach to) the sweep a Jsonnet spec declares", parseRun, runSweep),
		newCommand("compile", "print the compiled DAG of every method as JSON", parseCompile, compile))
}

// newCommand joins a command's parser of its options and its run function.
func newCommand[O any](name, short string, parse func(args []string, stderr io.Writer) (O, error),
	run func(o O, stdout, stderr io.Writer) int) command {
	parseThenRun := func(args []string, stderr io.Writer) (func(stdout, stderr io.Writer) int, error) {
		o, err := parse(args, stderr)
		if err != nil {
			return nil, err
		}
		return func(stdout, stderr io.Writer) int { return run(o, stdout, stderr) }, nil
	}
	return command{name: name, short: short, parse: parseThenRun}
}

// cobra wraps c in a cobra command. The command's own parser reads the flags (cobra's parsing is off), so the flag
// definitions, defaults and checks stay in one place; cobra gets a copy of the flags for completion.
func (c command) cobra(stdout, stderr io.Writer, code *int) *cobra.Command {
	cmd := &cobra.Command{
		Use:                c.name,
		Short:              c.short,
		DisableFlagParsing: true,
		RunE: func(_ *cobra.Command, args []string) error {
			run, err := c.parse(args, stderr)
			if err != nil {
				*code = usageError(err, stderr)
				return nil
			}
			*code = run(stdout, stderr)
			return nil
		},
	}
	cmd.SetUsageFunc(func(*cobra.Command) error {
		_, err := c.parse([]string{"--help"}, stderr)
		if !errors.Is(err, flag.ErrHelp) {
			return err
		}
		return nil
	})
	if _, err := c.parse([]string{flagsProbe}, io.Discard); err != nil {
		var probe *flagSetProbe
		if errors.As(err, &probe) {
			cmd.Flags().AddFlagSet(pflagsOf(probe.fs))
		}
	}
	return cmd
}

// flagsProbe, as a parser's only argument, makes parseInterleaved return the parser's flag set (as a
// *flagSetProbe error) without parsing: how a command's flags reach cobra's completion.
const flagsProbe = "\x00flags"

type flagSetProbe struct{ fs *flag.FlagSet }

func (p *flagSetProbe) Error() string { return "flag set probe of " + p.fs.Name() }

// testOnlyFlags are flags tests use to shorten timeouts; the help does not list them.
var testOnlyFlags = []string{"infra-waits", "max-history"}

// pflagsOf is fs as GNU-style flags: --name for every flag; a one-letter flag is -X, and becomes the shorthand of
// the long flag that sets the same variable (-J, --jpath).
func pflagsOf(fs *flag.FlagSet) *pflag.FlagSet {
	pfs := pflag.NewFlagSet(fs.Name(), pflag.ContinueOnError)
	// Pointer Values only: comparing map-typed ones would panic.
	isPointer := func(f *flag.Flag) bool { return reflect.TypeOf(f.Value).Kind() == reflect.Pointer }
	longOf := map[flag.Value]string{}
	fs.VisitAll(func(f *flag.Flag) {
		if len(f.Name) > 1 && isPointer(f) {
			longOf[f.Value] = f.Name
		}
	})
	shorthand := map[string]string{} // long name -> its one-letter twin
	fs.VisitAll(func(f *flag.Flag) {
		if len(f.Name) == 1 && isPointer(f) {
			if long, ok := longOf[f.Value]; ok && shorthand[long] == "" {
				shorthand[long] = f.Name
			}
		}
	})
	fs.VisitAll(func(f *flag.Flag) {
		if len(f.Name) == 1 && isPointer(f) && shorthand[longOf[f.Value]] == f.Name {
			return // the long flag's shorthand
		}
		pf := pflag.PFlagFromGoFlag(f)
		pf.DefValue = f.DefValue // the default, not the value parsed so far
		if pf.DefValue == "[]" {
			pf.DefValue = "" // an empty list: no default worth printing
		}
		if s := shorthand[f.Name]; s != "" {
			pf.Shorthand = s
		}
		pfs.AddFlag(pf)
	})
	for _, name := range testOnlyFlags {
		if pfs.Lookup(name) != nil {
			_ = pfs.MarkHidden(name)
		}
	}
	return pfs
}

// printFlags prints fs's flags as the README writes them (--name), without the test-only ones.
func printFlags(fs *flag.FlagSet) {
	fmt.Fprint(fs.Output(), pflagsOf(fs).FlagUsages())
}

func usageError(err error, stderr io.Writer) int {
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	fmt.Fprintln(stderr, "starter:", err)
	return exitUsage
}

// parseInterleaved parses flags that may come before or after positional arguments, as people type them. Long
// flags take one dash or two (-runs, --runs), as Go's flag package accepts them.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	positional, _, err := parseFlags(fs, args)
	return positional, err
}

// parseFlags is parseInterleaved that also returns the names of the flags given.
func parseFlags(fs *flag.FlagSet, args []string) (positional []string, set map[string]bool, err error) {
	if len(args) == 1 && args[0] == flagsProbe {
		return nil, nil, &flagSetProbe{fs}
	}
	pfs := pflagsOf(fs)
	pfs.SetOutput(fs.Output())
	pfs.Usage = fs.Usage
	if err := pfs.Parse(doubleDashLongFlags(pfs, args)); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil, nil, flag.ErrHelp
		}
		return nil, nil, err
	}
	set = map[string]bool{}
	pfs.Visit(func(f *pflag.Flag) { set[f.Name] = true })
	return pfs.Args(), set, nil
}

// doubleDashLongFlags rewrites -name to --name for pfs's long flags (pflag would read -name as the one-letter
// flags n, a, m, e), leaving flag values and everything after "--" alone.
func doubleDashLongFlags(pfs *pflag.FlagSet, args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			return append(out, args[i:]...)
		}
		if len(arg) < 2 || arg[0] != '-' {
			out = append(out, arg)
			continue
		}
		body := strings.TrimPrefix(arg[1:], "-")
		name, _, hasValue := strings.Cut(body, "=")
		f := pfs.Lookup(name)
		if f == nil && name != "" && arg[1] != '-' {
			// A one-letter flag, perhaps with its value attached (-J lib, -Jlib).
			f = pfs.ShorthandLookup(name[:1])
			hasValue = hasValue || len(name) > 1
		}
		if f != nil && len(name) > 1 && arg[1] != '-' && f.Name == name {
			arg = "-" + arg
		}
		out = append(out, arg)
		if f != nil && !hasValue && f.NoOptDefVal == "" && i+1 < len(args) {
			i++ // the flag's value, even if it starts with a dash
			out = append(out, args[i])
		}
	}
	return out
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
