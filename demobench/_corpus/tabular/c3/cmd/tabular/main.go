// Command tabular reads CSV (or TSV) from files or standard input and prints it as an aligned table.
//
//	tabular data.csv
//	tabular --markdown --align 2=right report.csv > report.md
//	ps aux | tr -s ' ' '\t' | tabular --tsv --max-width 40
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"example.com/tabular"
	"example.com/tabular/internal/cliutil"
)

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr); err != nil {
		cliutil.Exit("tabular", err)
	}
}

type alignFlags map[int]tabular.Align

func (a alignFlags) String() string { return fmt.Sprint(map[int]tabular.Align(a)) }

// Set reads COLUMN=ALIGN, with one-based columns: "2=right".
func (a alignFlags) Set(s string) error {
	col, al, ok := strings.Cut(s, "=")
	n, err := strconv.Atoi(col)
	if !ok || err != nil || n < 1 {
		return fmt.Errorf("want COLUMN=left|right|center, got %q", s)
	}
	v, ok := tabular.ParseAlign(al)
	if !ok {
		return fmt.Errorf("unknown alignment %q", al)
	}
	a[n-1] = v
	return nil
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("tabular", flag.ContinueOnError)
	fs.SetOutput(stderr)
	markdown := fs.Bool("markdown", false, "print a Markdown table")
	box := fs.String("box", "", "draw a box: ascii or unicode")
	tsv := fs.Bool("tsv", false, "input is tab-separated")
	noHeader := fs.Bool("no-header", false, "the first line is data, not headers")
	maxWidth := fs.Int("max-width", 0, "cut cells to this many columns (0: no limit)")
	auto := fs.Bool("auto-align", true, "right-align numeric columns")
	aligns := alignFlags{}
	fs.Var(aligns, "align", "column alignment, e.g. 2=right (repeatable)")
	if err := fs.Parse(args); err != nil {
		return cliutil.Usagef("%v", err)
	}
	opts := tabular.CSVOptions{NoHeader: *noHeader}
	if *tsv {
		opts.Comma = '\t'
	}
	inputs := fs.Args()
	if len(inputs) == 0 {
		inputs = []string{"-"}
	}
	for i, name := range inputs {
		var r io.Reader = stdin
		if name != "-" {
			f, err := os.Open(name)
			if err != nil {
				return err
			}
			defer f.Close()
			r = f
		}
		t, err := tabular.FromCSV(r, opts)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		t.AutoAlign(*auto).SetMaxWidth(*maxWidth)
		for c, a := range aligns {
			t.SetAlign(c, a)
		}
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		switch {
		case *markdown:
			err = t.RenderMarkdown(stdout)
		case *box == "ascii":
			err = t.RenderBox(stdout, tabular.BorderASCII)
		case *box == "unicode":
			err = t.RenderBox(stdout, tabular.BorderBox)
		case *box != "":
			return cliutil.Usagef("--box: want ascii or unicode, got %q", *box)
		default:
			err = t.Render(stdout)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
