// Command kvconf checks, queries and reformats kvconf configuration files.
//
//	kvconf lint [--strict] FILE...     # report syntax errors; exit status 1 if any
//	kvconf get FILE SECTION.KEY        # print one value
//	kvconf fmt [-w] FILE               # print (or rewrite) the file in canonical form
package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"

	"example.com/kvconf"
	"example.com/kvconf/internal/cliutil"
	"example.com/kvconf/internal/fsutil"
)

func main() {
	cliutil.Exit("kvconf", cliutil.Dispatch("kvconf", commands(), os.Args[1:], os.Stdout, os.Stderr))
}

func commands() []cliutil.Command {
	return []cliutil.Command{
		{Name: "lint", Summary: "check files for syntax errors (--strict also rejects duplicate keys)", Run: runLint},
		{Name: "get", Summary: "print the value of SECTION.KEY", Run: runGet},
		{Name: "fmt", Summary: "print a file in canonical form (-w to rewrite it)", Run: runFmt},
	}
}

func runLint(args []string, stdout, stderr io.Writer) error {
	fs := cliutil.NewFlagSet("lint", stderr)
	strict := fs.Bool("strict", false, "treat duplicate sections and keys as errors")
	envCheck := fs.Bool("env", false, "also expand ${VAR} references and report unset variables")
	if err := fs.Parse(args); err != nil {
		return cliutil.Usagef("%v", err)
	}
	if fs.NArg() == 0 {
		return cliutil.Usagef("lint: no files given")
	}
	failed := 0
	for _, name := range fs.Args() {
		f, err := kvconf.ParseFile(name, kvconf.Options{Strict: *strict})
		if err != nil {
			fmt.Fprintln(stderr, err)
			failed++
			continue
		}
		if *envCheck {
			missing := unsetVariables(f)
			if len(missing) > 0 {
				fmt.Fprintf(stderr, "%s: unset variables: %s\n", name, strings.Join(missing, ", "))
				failed++
				continue
			}
		}
		fmt.Fprintf(stdout, "%s: ok\n", name)
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d files have errors", failed, fs.NArg())
	}
	return nil
}

func unsetVariables(f *kvconf.File) []string {
	var missing []string
	seen := map[string]bool{}
	kvconf.ExpandEnv(f, func(name string) (string, bool) {
		v, ok := os.LookupEnv(name)
		if !ok && !seen[name] {
			seen[name] = true
			missing = append(missing, name)
		}
		return v, ok
	})
	return missing
}

func runGet(args []string, stdout, _ io.Writer) error {
	if len(args) != 2 {
		return cliutil.Usagef("usage: kvconf get FILE SECTION.KEY")
	}
	f, err := kvconf.ParseFile(args[0], kvconf.Options{})
	if err != nil {
		return err
	}
	i := strings.LastIndexByte(args[1], '.')
	if i < 0 {
		return cliutil.Usagef("get: want SECTION.KEY, got %q", args[1])
	}
	v, ok := f.Get(strings.ToLower(args[1][:i]), strings.ToLower(args[1][i+1:]))
	if !ok {
		return fmt.Errorf("%s: %s is not set", args[0], args[1])
	}
	fmt.Fprintln(stdout, v)
	return nil
}

func runFmt(args []string, stdout, stderr io.Writer) error {
	fs := cliutil.NewFlagSet("fmt", stderr)
	write := fs.Bool("w", false, "rewrite the file instead of printing it")
	if err := fs.Parse(args); err != nil {
		return cliutil.Usagef("%v", err)
	}
	if fs.NArg() != 1 {
		return cliutil.Usagef("usage: kvconf fmt [-w] FILE")
	}
	name := fs.Arg(0)
	f, err := kvconf.ParseFile(name, kvconf.Options{})
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := kvconf.Write(&buf, f); err != nil {
		return err
	}
	if *write {
		return fsutil.WriteFileAtomic(name, buf.Bytes(), 0o644)
	}
	_, err = stdout.Write(buf.Bytes())
	return err
}
