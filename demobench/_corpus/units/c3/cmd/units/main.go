// Command units converts sizes and durations typed by people into numbers for scripts.
//
//	units size 1.5GiB          # prints 1610612736
//	units duration 1d12h       # prints 129600 (seconds)
//	units duration -h 1d12h    # prints 1d12h (normalised)
package main

import (
	"flag"
	"fmt"
	"os"

	"example.com/units/duration"
	"example.com/units/size"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: units size|duration [-h] VALUE")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	human := fs.Bool("h", false, "print the value normalised for people instead of as a number")
	_ = fs.Parse(os.Args[2:])
	if fs.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: units size|duration [-h] VALUE")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "size":
		n, err := size.Parse(fs.Arg(0))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if *human {
			fmt.Println(size.Format(n))
		} else {
			fmt.Println(int64(n))
		}
	case "duration":
		d, err := duration.Parse(fs.Arg(0))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if *human {
			fmt.Println(duration.Format(d))
		} else {
			fmt.Println(int64(d.Seconds()))
		}
	default:
		fmt.Fprintf(os.Stderr, "units: unknown kind %q\n", os.Args[1])
		os.Exit(2)
	}
}
