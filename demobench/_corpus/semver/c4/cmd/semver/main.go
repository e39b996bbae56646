// Command semver compares, sorts, bumps and checks semantic versions from the shell.
//
//	semver compare 1.10.0 1.9.0                      # prints 1
//	semver sort 1.10.0 1.9.0 1.9.1                   # one version per line, lowest first
//	semver bump minor 1.4.2                          # prints 1.5.0
//	semver satisfies --constraint '^1.2.0' 1.4.0     # prints "1.4.0 satisfies ^1.2.0", exit status 0
//	semver satisfies --json --constraint '~1.2' 1.3.0 1.2.5
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"example.com/semver"
	"example.com/semver/internal/cliutil"
)

func main() {
	cliutil.Exit("semver", cliutil.Dispatch("semver", commands(), os.Args[1:], os.Stdout, os.Stderr))
}

func commands() []cliutil.Command {
	return []cliutil.Command{
		{Name: "compare", Summary: "print -1, 0 or 1 for two versions", Run: runCompare},
		{Name: "sort", Summary: "print versions lowest first (--reverse for highest first)", Run: runSort},
		{Name: "bump", Summary: "print the next major, minor or patch release", Run: runBump},
		{Name: "satisfies", Summary: "check versions against --constraint; exit status 1 if one does not match", Run: runSatisfies},
	}
}

func runCompare(args []string, stdout, _ io.Writer) error {
	if len(args) != 2 {
		return cliutil.Usagef("compare wants two versions, got %d", len(args))
	}
	c, err := semver.CompareStrings(args[0], args[1])
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, c)
	return nil
}

func runSort(args []string, stdout, stderr io.Writer) error {
	fs := cliutil.NewFlagSet("sort", stderr)
	reverse := fs.Bool("reverse", false, "highest first")
	if err := fs.Parse(args); err != nil {
		return cliutil.Usagef("%v", err)
	}
	vs, err := semver.ParseAll(fs.Args())
	if err != nil {
		return err
	}
	semver.Sort(vs)
	if *reverse {
		for i, j := 0, len(vs)-1; i < j; i, j = i+1, j-1 {
			vs[i], vs[j] = vs[j], vs[i]
		}
	}
	for _, v := range vs {
		fmt.Fprintln(stdout, v)
	}
	return nil
}

func runBump(args []string, stdout, _ io.Writer) error {
	if len(args) != 2 {
		return cliutil.Usagef("usage: semver bump major|minor|patch VERSION")
	}
	v, err := semver.Parse(args[1])
	if err != nil {
		return err
	}
	switch args[0] {
	case "major":
		v = v.IncMajor()
	case "minor":
		v = v.IncMinor()
	case "patch":
		v = v.IncPatch()
	default:
		return cliutil.Usagef("bump: want major, minor or patch, got %q", args[0])
	}
	fmt.Fprintln(stdout, v)
	return nil
}

type satisfiesResult struct {
	Version    string `json:"version"`
	Constraint string `json:"constraint"`
	Satisfies  bool   `json:"satisfies"`
}

// errUnsatisfied makes the command exit with status 1 after printing its results.
var errUnsatisfied = fmt.Errorf("some versions do not satisfy the constraint")

func runSatisfies(args []string, stdout, stderr io.Writer) error {
	fs := cliutil.NewFlagSet("satisfies", stderr)
	constraint := fs.String("constraint", "", "version constraint, e.g. '>=1.2.0, <2.0.0' or '^1.4'")
	asJSON := fs.Bool("json", false, "print one JSON object per version")
	if err := fs.Parse(args); err != nil {
		return cliutil.Usagef("%v", err)
	}
	if *constraint == "" {
		return cliutil.Usagef("satisfies: --constraint is required")
	}
	c, err := semver.ParseConstraint(*constraint)
	if err != nil {
		return err
	}
	vs, err := semver.ParseAll(fs.Args())
	if err != nil {
		return err
	}
	all := true
	enc := json.NewEncoder(stdout)
	for _, v := range vs {
		ok := c.Check(v)
		all = all && ok
		if *asJSON {
			if err := enc.Encode(satisfiesResult{Version: v.String(), Constraint: c.String(), Satisfies: ok}); err != nil {
				return err
			}
			continue
		}
		if ok {
			fmt.Fprintf(stdout, "%s satisfies %s\n", v, c)
		} else {
			fmt.Fprintf(stdout, "%s does not satisfy %s\n", v, c)
		}
	}
	if !all {
		return errUnsatisfied
	}
	return nil
}
