package cli

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"ctxlab/results"
	"ctxlab/results/figures"
	"ctxlab/results/report"
	"ctxlab/results/stats"
	"ctxlab/specs"
)

func init() {
	commands = append(commands, newCommand("report", "tables, statistics and figures of a run", parseReport,
		runReport))
}

// specRecord is the file in a run folder that keeps the compiled spec of the last `starter run`, so a report knows
// the method order and the budget anchor.
const specRecord = "spec.json"

// writeSpecRecord saves the compiled experiment into the run folder.
func writeSpecRecord(runDir string, e *specs.Experiment) error {
	b, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return err
	}
	tmp := filepath.Join(runDir, specRecord+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(runDir, specRecord))
}

type reportOptions struct {
	name        string
	runs        string
	out         string
	anchor      string
	fit         listFlag
	features    listFlag
	predictions listFlag
	alternative string
	resamples   int
	seed        uint64
	noFigures   bool
}

// listFlag is a comma-separated list; repeating the flag adds to it.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error {
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			*l = append(*l, part)
		}
	}
	return nil
}

func parseReport(args []string, stderr io.Writer) (reportOptions, error) {
	var o reportOptions
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.runs, "runs", "runs", "folder that holds one output folder per experiment")
	fs.StringVar(&o.out, "out", "", "write the report here instead of next to the results (default: the run folder)")
	fs.StringVar(&o.anchor, "anchor", "", "compare every method against `METHOD` (default: the spec's budget anchor, else the first method)")
	fs.Var(&o.fit, "fit", "fit the regression on these `METHODS` (comma-separated; default: all)")
	fs.Var(&o.features, "features", "regression `FEATURES` (comma-separated row fields, or log_tokens; default: "+strings.Join(report.DefaultFeatures, ",")+")")
	fs.Var(&o.predictions, "prediction", "also check this frozen prediction `FILE` (repeatable; the run's predictions/ folder is always read)")
	fs.StringVar(&o.alternative, "alternative", report.AltObserved, "one-sided McNemar direction: observed (the side with more wins) or anchor (the anchor resolves more)")
	fs.IntVar(&o.resamples, "resamples", stats.DefaultResamples, "issue-level bootstrap resamples")
	fs.Uint64Var(&o.seed, "seed", 1, "bootstrap seed (the same seed gives the same report)")
	fs.BoolVar(&o.noFigures, "no-figures", false, "write tables only")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: starter report NAME|RESULTS.jsonl [flags]\n\nNAME is a run folder under --runs; a path to a results.jsonl works too.")
		printFlags(fs)
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return o, err
	}
	if len(pos) != 1 {
		return o, fmt.Errorf("report: want one run name or results file, got %d arguments", len(pos))
	}
	o.name = pos[0]
	if o.alternative != report.AltObserved && o.alternative != report.AltAnchor {
		return o, fmt.Errorf("report: --alternative %q: want observed or anchor", o.alternative)
	}
	if o.resamples < 100 {
		return o, fmt.Errorf("report: --resamples %d: want at least 100", o.resamples)
	}
	return o, nil
}

// locateResults finds the results file and the run folder NAME means: an existing results file, a folder holding
// results.jsonl, or a run folder under runs.
func locateResults(name, runs string) (file, dir string, err error) {
	if st, err := os.Stat(name); err == nil {
		if !st.IsDir() {
			return name, filepath.Dir(name), nil
		}
		if _, err := os.Stat(filepath.Join(name, "results.jsonl")); err == nil {
			return filepath.Join(name, "results.jsonl"), name, nil
		}
	}
	dir = filepath.Join(runs, name)
	file = filepath.Join(dir, "results.jsonl")
	if _, err := os.Stat(file); err != nil {
		return "", "", fmt.Errorf("no results at %s (run the spec first, or name a results.jsonl)", file)
	}
	return file, dir, nil
}

// readSpecRecord returns the run's recorded spec, or nil when the run folder has none.
func readSpecRecord(dir string) (*specs.Experiment, error) {
	b, err := os.ReadFile(filepath.Join(dir, specRecord))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var e specs.Experiment
	if err := json.Unmarshal(b, &e); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, specRecord), err)
	}
	return &e, nil
}

func runReport(o reportOptions, stdout, stderr io.Writer) int {
	file, dir, err := locateResults(o.name, o.runs)
	if err != nil {
		fmt.Fprintln(stderr, "starter report:", err)
		return exitUsage
	}
	repairRunFolder("report", dir, file, stderr)
	rows, bad, err := results.ReadFile(file)
	if err != nil {
		fmt.Fprintln(stderr, "starter report:", err)
		return exitFail
	}
	if len(rows) == 0 {
		fmt.Fprintf(stderr, "starter report: %s holds no rows yet\n", file)
		return exitFail
	}
	opts := report.Options{Title: "Report: " + filepath.Base(dir), Source: file, Resamples: o.resamples, Seed: o.seed,
		Alternative: o.alternative, Fit: o.fit, Features: o.features, Anchor: o.anchor, AnchorFrom: "--anchor"}
	e, err := readSpecRecord(dir)
	if err != nil {
		fmt.Fprintln(stderr, "starter report:", err)
		return exitFail
	}
	if e != nil {
		opts.Title = "Report: " + e.Name
		for _, m := range e.Models {
			for _, meth := range e.Methods {
				opts.Order = append(opts.Order, results.Key{Method: meth.Name, Model: m.Name})
			}
		}
		if opts.Anchor == "" && e.Anchor != "" {
			opts.Anchor, opts.AnchorFrom = e.Anchor, "the spec's budget anchor"
		}
	}
	preds, problems, err := report.LoadPredictions(filepath.Join(dir, "predictions"))
	if err != nil {
		fmt.Fprintln(stderr, "starter report:", err)
		return exitFail
	}
	for _, f := range o.predictions {
		p, err := report.LoadPrediction(f)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		preds = append(preds, *p)
	}
	for _, p := range problems {
		fmt.Fprintln(stderr, "starter report: skipping", p)
	}
	opts.Predictions = preds
	rep, err := report.Build(rows, bad, opts)
	if err != nil {
		fmt.Fprintln(stderr, "starter report:", err)
		return exitUsage
	}
	for _, p := range problems {
		rep.Notes = append(rep.Notes, "prediction skipped: "+p)
	}
	out := dir
	if o.out != "" {
		out = o.out
	}
	var written []string
	if !o.noFigures {
		figs, err := figures.Write(rep, filepath.Join(out, "figures"))
		if err != nil {
			fmt.Fprintln(stderr, "starter report:", err)
			return exitFail
		}
		for _, f := range figs {
			rel, _ := filepath.Rel(out, f)
			rep.Figures = append(rep.Figures, rel)
		}
		written = append(written, figs...)
	}
	files, err := rep.Write(out)
	if err != nil {
		fmt.Fprintln(stderr, "starter report:", err)
		return exitFail
	}
	written = append(files, written...)
	for _, t := range rep.Tables() {
		if t.Name == "methods" || t.Name == "comparisons" {
			fmt.Fprintf(stdout, "%s\n\n%s\n", t.Caption, t.Markdown())
		}
	}
	for _, n := range rep.Notes {
		fmt.Fprintln(stdout, "note:", n)
	}
	fmt.Fprintf(stdout, "\nreport: %s\n", filepath.Join(out, "report.md"))
	for _, f := range written {
		if !strings.HasSuffix(f, "report.md") {
			fmt.Fprintln(stdout, "  "+f)
		}
	}
	return exitOK
}
