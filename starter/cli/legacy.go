package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"reflect"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"ctxlab/internal/cliflags"
)

// This file is the bridge for a command still declared on the standard flag package (report): its parser reads
// its own flags (cobra's parsing is off) and cobra gets a copy of them for help and completion. Commands declared
// with commandDef need none of it.

// newCommand joins a flag-package command's parser of its options and its run function.
func newCommand[O any](name, short string, parse func(args []string, stderr io.Writer) (O, error),
	run func(o O, stdout, stderr io.Writer) int) command {
	parseThenRun := func(args []string, stderr io.Writer) (func(stdout, stderr io.Writer) int, error) {
		o, err := parse(args, stderr)
		if err != nil {
			return nil, err
		}
		return func(stdout, stderr io.Writer) int { return run(o, stdout, stderr) }, nil
	}
	return command{name: name, build: func(stdout, stderr io.Writer, code *int) *cobra.Command {
		return legacyCobra(name, short, parseThenRun, stdout, stderr, code)
	}}
}

func legacyCobra(name, short string, parse func(args []string, stderr io.Writer) (func(stdout, stderr io.Writer) int, error),
	stdout, stderr io.Writer, code *int) *cobra.Command {
	cmd := &cobra.Command{
		Use:                name,
		Short:              short,
		DisableFlagParsing: true,
		RunE: func(_ *cobra.Command, args []string) error {
			run, err := parse(args, stderr)
			if err != nil {
				*code = legacyUsageError(err, stderr)
				return nil
			}
			*code = run(stdout, stderr)
			return nil
		},
	}
	cmd.SetUsageFunc(func(*cobra.Command) error {
		_, err := parse([]string{"--help"}, stderr)
		if !errors.Is(err, flag.ErrHelp) {
			return err
		}
		return nil
	})
	if _, err := parse([]string{flagsProbe}, io.Discard); err != nil {
		var probe *flagSetProbe
		if errors.As(err, &probe) {
			cmd.Flags().AddFlagSet(pflagsOf(probe.fs))
		}
	}
	return cmd
}

func legacyUsageError(err error, stderr io.Writer) int {
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	return usageError(err, stderr)
}

// flagsProbe, as a parser's only argument, makes parseInterleaved return the parser's flag set (as a
// *flagSetProbe error) without parsing: how a command's flags reach cobra's completion.
const flagsProbe = "\x00flags"

type flagSetProbe struct{ fs *flag.FlagSet }

func (p *flagSetProbe) Error() string { return "flag set probe of " + p.fs.Name() }

// pflagsOf is fs as GNU-style flags: --name for every flag; a one-letter flag is -X, and becomes the shorthand of
// the long flag that sets the same variable.
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
	hideTestOnly(pfs)
	return pfs
}

// printFlags prints fs's flags as the docs write them (--name), without the test-only ones.
func printFlags(fs *flag.FlagSet) {
	fmt.Fprint(fs.Output(), pflagsOf(fs).FlagUsages())
}

// parseInterleaved parses flags that may come before or after positional arguments. Long flags take one dash or
// two (-runs, --runs).
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	if len(args) == 1 && args[0] == flagsProbe {
		return nil, &flagSetProbe{fs}
	}
	pfs := pflagsOf(fs)
	pfs.SetOutput(fs.Output())
	pfs.Usage = fs.Usage
	if err := pfs.Parse(cliflags.GoStyleArgs(pfs, args)); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil, flag.ErrHelp
		}
		return nil, err
	}
	return pfs.Args(), nil
}
