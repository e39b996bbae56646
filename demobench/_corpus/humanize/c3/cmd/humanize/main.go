// Command humanize prints numbers, sizes and durations in a human-friendly form.
//
//	humanize bytes 82854982        # 83 MB
//	humanize bytes --iec 82854982  # 79 MiB
//	humanize comma 1234567         # 1,234,567
//	humanize duration 200s         # 3m20s
//	humanize duration --long 200s  # 3 minutes 20 seconds
//	humanize ordinal 22            # 22nd
package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

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
		{Name: "duration", Summary: "format a Go duration such as 200s or 1.5h (--long to spell it out)", Run: runDuration},
		{Name: "ordinal", Summary: "print 1st, 2nd, 3rd, ...", Run: runOrdinal},
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

func runDuration(args []string, stdout, stderr io.Writer) error {
	fs := cliutil.NewFlagSet("duration", stderr)
	long := fs.Bool("long", false, "spell the units out")
	if err := fs.Parse(args); err != nil {
		return cliutil.Usagef("%v", err)
	}
	for _, a := range fs.Args() {
		d, err := time.ParseDuration(a)
		if err != nil {
			return cliutil.Usagef("not a duration: %q", a)
		}
		if *long {
			fmt.Fprintln(stdout, humanize.LongDuration(d))
		} else {
			fmt.Fprintln(stdout, humanize.Duration(d))
		}
	}
	return nil
}

func runOrdinal(args []string, stdout, _ io.Writer) error {
	for _, a := range args {
		n, err := strconv.ParseInt(a, 10, 64)
		if err != nil {
			return cliutil.Usagef("not an integer: %q", a)
		}
		fmt.Fprintln(stdout, humanize.Ordinal(n))
	}
	return nil
}
