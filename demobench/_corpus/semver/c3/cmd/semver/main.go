// Command semver compares, sorts and bumps semantic versions from the shell.
//
//	semver compare 1.10.0 1.9.0     # prints 1
//	semver sort 1.10.0 1.9.0 1.9.1  # prints one version per line, lowest first
//	semver bump minor 1.4.2         # prints 1.5.0
package main

import (
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
