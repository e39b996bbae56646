// Package cli implements the starter's subcommands on cobra. Each command has its own file with an options struct
// (its flags, declared on the cobra command's flag set, and its arguments) and a run function over the libraries
// that do the work (starter/sweepclient for run, status, audit, report and ui), so tests can drive either part.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"ctxlab/internal/cliflags"
	"ctxlab/starter/exitcode"
)

const usage = `usage: starter <command> [flags]

commands:
  run SPEC       run (or attach to) the sweep a Jsonnet spec declares; writes runs/NAME/results.jsonl and summary.md
  check SPEC     check, before anything is paid, that the sweep can finish: graders, endpoints, model ids, context
                 windows (starter run does it first; --no-check skips it)
  compile SPEC   print the compiled DAG of every method as JSON
  status NAME    where runs/NAME's sweep stands: per method done / failed / running / pending, spend, ETA
  audit NAME     every attempt of every activity of runs/NAME (--issue, --method, --json; --show REF opens an object;
                 --export DIR writes each row's context, patch and test log to DIR/MODEL/METHOD/INSTANCE/)
  ui NAME        serve the Temporal Web UI over runs/NAME's workflow histories until Ctrl-C (starter run --ui: while it runs)
  report NAME    tables, statistics and figures of a run (or of a results.jsonl): runs/NAME/report.md, tables/, figures/
  predict NAME   freeze a prediction of a method's resolve rate from its context features (--method M --fit M1,M2)
  grade --dataset FILE --predictions FILE
                 grade SWE-bench predictions with ctxlab's grader (no server needed)
  predictions NAME
                 export runs/NAME's patches as SWE-bench predictions JSONL, one file per model and method
  images build --dataset FILE
                 build instance images for the docker executor (repository at base_commit in /testbed), offline
  images pull --dataset FILE
                 pull the published instance images the docker executor needs and the engine lacks
  server --db postgres://USER@HOST:PORT/DB
                 run a standalone Temporal server on PostgreSQL for run --address and worker processes

  completion bash|zsh|fish|powershell
                 print a shell completion script (commands and flags)

run "starter <command> -h" for a command's flags.
`

// commandUsage is a command's help: its use line, what it does, and its flags written as the docs write them.
const commandUsage = `usage: {{.UseLine}}{{with .Long}}

{{.}}{{end}}{{if .HasAvailableLocalFlags}}

flags:
{{.LocalFlags.FlagUsages | trimTrailingWhitespaces}}{{end}}
`

// Main runs the CLI and returns the process exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitcode.Usage
	}
	switch args[0] {
	case "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return exitcode.OK
	case "help":
		if len(args) == 1 {
			fmt.Fprint(stdout, usage)
			return exitcode.OK
		}
		args = append(slices.Clone(args[1:]), "--help") // starter help COMMAND: starter COMMAND --help
	}
	code := exitcode.OK
	root := newRootCommand(stdout, stderr, &code)
	root.InitDefaultCompletionCmd(args...)
	isCompletionRequest := args[0] == cobra.ShellCompRequestCmd || args[0] == cobra.ShellCompNoDescRequestCmd
	found, _, err := root.Find(args)
	if !isCompletionRequest {
		if err != nil || found == root {
			fmt.Fprintf(stderr, "starter: unknown command %q\n\n%s", args[0], usage)
			return exitcode.Usage
		}
		found.InitDefaultHelpFlag()
		args = cliflags.GoStyleArgs(found.Flags(), args)
	}
	root.SetArgs(args)
	if err := root.Execute(); err != nil {
		fmt.Fprintln(stderr, "starter:", err)
		return exitcode.Usage
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
		cobraHelp(c, args)
	})
	for _, c := range commands {
		root.AddCommand(c.build(stdout, stderr, code))
	}
	images := &cobra.Command{
		Use:   "images",
		Short: "pull or build instance images for the docker executor",
		RunE: func(*cobra.Command, []string) error {
			*code = usageError(errors.New("usage: starter images pull|build --dataset FILE|--spec SPEC "+
				"[--namespace NS]"), stderr)
			return nil
		},
	}
	images.AddCommand(imagesBuildCommand.build(stdout, stderr, code), imagesPullCommand.build(stdout, stderr, code))
	root.AddCommand(images)
	return root
}

// command is one subcommand: build makes its cobra command, whose run stores the exit code in *code.
type command struct {
	name  string
	build func(stdout, stderr io.Writer, code *int) *cobra.Command
}

// commands are the top-level subcommands; each command's file registers itself in an init function.
var commands []command

// options are a command's flags and arguments. define declares the flags on the options' fields; complete takes
// the positional arguments once the flags are parsed and checks what the flags cannot check alone.
type options interface {
	define(fs *pflag.FlagSet)
	complete(args []string, fs *pflag.FlagSet) error
}

// commandDef declares a subcommand: its use line ("status NAME"), its one-line and longer help, and its run
// function over its options O.
type commandDef[O any, P interface {
	*O
	options
}] struct {
	use, short, long string
	run              func(o O, stdout, stderr io.Writer) int
}

func (d commandDef[O, P]) command() command {
	return command{name: strings.Fields(d.use)[0], build: d.build}
}

// build makes the cobra command over fresh options.
func (d commandDef[O, P]) build(stdout, stderr io.Writer, code *int) *cobra.Command {
	var o O
	cmd := &cobra.Command{
		Use:   d.use,
		Short: d.short,
		Long:  d.long,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := P(&o).complete(args, cmd.Flags()); err != nil {
				*code = usageError(err, stderr)
				return nil
			}
			*code = d.run(o, stdout, stderr)
			return nil
		},
	}
	cmd.SetUsageTemplate(commandUsage)
	cmd.SetHelpTemplate(`{{.UsageString}}`)
	P(&o).define(cmd.Flags())
	cmd.InitDefaultHelpFlag()
	finishFlags(cmd.Flags())
	return cmd
}

// parse reads args as Main does for this command, without running it (for tests).
func (d commandDef[O, P]) parse(args []string, stderr io.Writer) (O, error) {
	var o O
	fs := pflag.NewFlagSet(strings.Fields(d.use)[0], pflag.ContinueOnError)
	fs.SetOutput(stderr)
	P(&o).define(fs)
	if err := fs.Parse(cliflags.GoStyleArgs(fs, args)); err != nil {
		return o, err
	}
	err := P(&o).complete(fs.Args(), fs)
	return o, err
}

// testOnlyFlags are flags tests use to shorten timeouts; the help and the completions leave them out.
var testOnlyFlags = []string{"infra-waits", "max-history"}

// finishFlags hides the test-only flags and has help write a switch as the docs do, --json rather than
// --json[=true|false]. Parsing is unchanged: a switch without a value is true by its NoOptDefVal.
func finishFlags(fs *pflag.FlagSet) {
	hideTestOnly(fs)
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Value.Type() == "bool" && f.NoOptDefVal == "true" {
			f.Value = plainSwitch{f.Value}
		}
	})
}

// plainSwitch is a bool flag's value without its IsBoolFlag method, which is all pflag's help looks at to add
// [=true|false].
type plainSwitch struct{ pflag.Value }

func hideTestOnly(fs *pflag.FlagSet) {
	for _, name := range testOnlyFlags {
		if fs.Lookup(name) != nil {
			_ = fs.MarkHidden(name)
		}
	}
}

func usageError(err error, stderr io.Writer) int {
	if errors.Is(err, pflag.ErrHelp) {
		return exitcode.OK
	}
	fmt.Fprintln(stderr, "starter:", err)
	return exitcode.Usage
}

// commaList is a comma-separated list flag; repeating the flag adds to it.
type commaList []string

func (l *commaList) String() string { return strings.Join(*l, ",") }
func (l *commaList) Set(s string) error {
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			*l = append(*l, part)
		}
	}
	return nil
}
func (l *commaList) Type() string { return "list" }

// oneSpec checks that exactly one spec path was given.
func oneSpec(cmd string, positional []string) (string, error) {
	if len(positional) != 1 {
		return "", fmt.Errorf("%s: want exactly one spec file, got %d arguments", cmd, len(positional))
	}
	return positional[0], nil
}

// goFlagValue is a value written for the flag package (String, Set) as a pflag value: typ names it in help.
type goFlagValue struct {
	flag.Value
	typ string
}

func (v goFlagValue) Type() string { return v.typ }
