package cliutil

import (
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
)

// Command is one subcommand of a tool.
type Command struct {
	Name    string
	Summary string
	Run     func(args []string, stdout, stderr io.Writer) error
}

// PrintUsage writes a help screen listing the commands in name order.
func PrintUsage(w io.Writer, prog, synopsis string, cmds []Command) {
	fmt.Fprintf(w, "usage: %s %s\n\ncommands:\n", prog, synopsis)
	sorted := append([]Command(nil), cmds...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	width := 0
	for _, c := range sorted {
		if len(c.Name) > width {
			width = len(c.Name)
		}
	}
	for _, c := range sorted {
		fmt.Fprintf(w, "  %-*s  %s\n", width, c.Name, c.Summary)
	}
}

// Dispatch runs the command named by args[0].
func Dispatch(prog string, cmds []Command, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		PrintUsage(stdout, prog, "<command> [flags] [args]", cmds)
		return nil
	}
	for _, c := range cmds {
		if c.Name == args[0] {
			return c.Run(args[1:], stdout, stderr)
		}
	}
	return Usagef("unknown command %q (try %s help)", args[0], prog)
}

// NewFlagSet returns a flag set that reports errors instead of exiting.
func NewFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// Join lists names as "a, b and c".
func Join(names []string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
