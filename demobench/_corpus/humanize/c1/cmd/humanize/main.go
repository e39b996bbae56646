// Command humanize prints numbers, sizes and durations in a human-friendly form.
//
//	humanize bytes 82854982        # 83 MB
//	humanize bytes --iec 82854982  # 79 MiB
//	humanize comma 1234567         # 1,234,567
package main

import (
	"fmt"
	"io"
	"os"
	"strconv"

	"example.com/humanize"
	"example.com/humanize/internal/cliutil"
)

func main() {
	cliutil.Exit("humanize", cliutil.Dispatch("humanize", commands(), os.Args[1:], os.Stdout, os.Stderr))
}

func commands() []cliutil.Command {
	return []cliutil.Command{
		{Name: "bytes", Summary: "format a byte count (--iec for KiB, MiB, ...)", Run: runBytes},
		{Name: "comma", Summary: "add thousands separators to an integer", Run: runComma},
	}
}

func runBytes(args []string, stdout, stderr io.Writer) error {
	fs := cliutil.NewFlagSet("bytes", stderr)
	iec := fs.Bool("iec", false, "use binary units (KiB, MiB, ...)")
	if err := fs.Parse(args); err != nil {
		return cliutil.Usagef("%v", err)
	}
	for _, a := range fs.Args() {
		n, err := humanize.ParseBytes(a)
		if err != nil {
			return err
		}
		if *iec {
			fmt.Fprintln(stdout, humanize.IBytes(n))
		} else {
			fmt.Fprintln(stdout, humanize.Bytes(n))
		}
	}
	return nil
}

func runComma(args []string, stdout, _ io.Writer) error {
	for _, a := range args {
		n, err := strconv.ParseInt(a, 10, 64)
		if err != nil {
			return cliutil.Usagef("not an integer: %q", a)
		}
		fmt.Fprintln(stdout, humanize.Comma(n))
	}
	return nil
}
