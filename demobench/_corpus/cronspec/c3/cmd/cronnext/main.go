// Command cronnext prints the next activations of a cron expression.
//
//	cronnext '*/15 9-17 * * MON-FRI'                 # the next 5 activations in local time
//	cronnext --count 3 --tz UTC '0 2 * * *'
//	cronnext --from 2024-03-01T00:00:00Z --describe '5/20 * * * *'
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"example.com/cronspec"
	"example.com/cronspec/internal/cliutil"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		cliutil.Exit("cronnext", err)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cronnext", flag.ContinueOnError)
	fs.SetOutput(stderr)
	count := fs.Int("count", 5, "number of activations to print")
	from := fs.String("from", "", "start time in RFC 3339 (default: now)")
	tz := fs.String("tz", "", "time zone of the expression, e.g. Europe/Berlin (default: local)")
	seconds := fs.Bool("seconds", false, "the expression has a leading seconds field")
	describe := fs.Bool("describe", false, "also print an English description")
	if err := fs.Parse(args); err != nil {
		return cliutil.Usagef("%v", err)
	}
	if fs.NArg() != 1 {
		return cliutil.Usagef("want one cron expression (quote it), got %d arguments", fs.NArg())
	}
	spec := fs.Arg(0)
	p := cronspec.Parser{Seconds: *seconds}
	if *tz != "" {
		loc, err := time.LoadLocation(*tz)
		if err != nil {
			return cliutil.Usagef("--tz: %v", err)
		}
		p.Location = loc
	}
	start := time.Now()
	if *from != "" {
		t, err := time.Parse(time.RFC3339, *from)
		if err != nil {
			return cliutil.Usagef("--from: %v", err)
		}
		start = t
	}
	s, err := p.Parse(spec)
	if err != nil {
		return err
	}
	if *describe && !*seconds {
		d, err := cronspec.Describe(spec)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "# %s\n", d)
	}
	times := s.NextN(start, *count)
	if len(times) == 0 {
		fmt.Fprintln(stdout, "# never fires within five years")
	}
	layout := "Mon 2006-01-02 15:04 MST"
	if *seconds {
		layout = "Mon 2006-01-02 15:04:05 MST"
	}
	for _, t := range times {
		fmt.Fprintln(stdout, strings.TrimSpace(t.Format(layout)))
	}
	return nil
}
