// Command ratebench simulates a client sending requests at a fixed interval through a limiter and reports how
// many get through, to try out rate and burst settings without a server.
//
//	ratebench --rate 30/m --burst 5 --every 100ms --for 1m
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"example.com/ratelimit"
	"example.com/ratelimit/internal/cliutil"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		cliutil.Exit("ratebench", err)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("ratebench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	rateFlag := fs.String("rate", "10/s", "limit, as COUNT/PERIOD")
	burst := fs.Int("burst", 1, "bucket capacity")
	every := fs.Duration("every", 100*time.Millisecond, "interval between simulated requests")
	total := fs.Duration("for", time.Minute, "simulated time")
	verbose := fs.Bool("v", false, "print every refused request")
	if err := fs.Parse(args); err != nil {
		return cliutil.Usagef("%v", err)
	}
	rate, err := ratelimit.ParseRate(*rateFlag)
	if err != nil {
		return cliutil.Usagef("%v", err)
	}
	if *every <= 0 {
		return cliutil.Usagef("--every must be positive")
	}
	start := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := ratelimit.NewFakeClock(start)
	l := ratelimit.New(rate, *burst, ratelimit.WithClock(clk))
	sent, allowed := 0, 0
	for elapsed := time.Duration(0); elapsed < *total; elapsed += *every {
		clk.Set(start.Add(elapsed))
		sent++
		if l.Allow() {
			allowed++
		} else if *verbose {
			fmt.Fprintf(stdout, "%8v refused, retry in %v\n", elapsed, l.Delay())
		}
	}
	expected := rate*total.Seconds() + float64(*burst)
	fmt.Fprintf(stdout, "rate %s, burst %d: %d of %d requests allowed (at most %.0f expected)\n",
		ratelimit.FormatRate(rate), *burst, allowed, sent, expected)
	return nil
}
