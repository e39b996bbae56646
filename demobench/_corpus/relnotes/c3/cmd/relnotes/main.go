// Command relnotes prints release notes from the Unreleased section of a changelog.
//
//	relnotes [-width N] [CHANGELOG.md]
package main

import (
	"flag"
	"fmt"
	"os"

	"example.com/relnotes"
)

func main() {
	width := flag.Int("width", 72, "wrap lines at this many characters")
	flag.Parse()
	name := "CHANGELOG.md"
	if flag.NArg() > 0 {
		name = flag.Arg(0)
	}
	f, err := os.Open(name)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer f.Close()
	entries, err := relnotes.Parse(f)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if len(entries) == 0 {
		fmt.Fprintln(os.Stderr, "relnotes: the Unreleased section is empty")
		os.Exit(1)
	}
	if err := relnotes.Render(os.Stdout, entries, *width); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
