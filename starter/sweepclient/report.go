package sweepclient

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"ctxlab/internal/cluster"
	"ctxlab/results"
	"ctxlab/results/figures"
	"ctxlab/results/report"
	"ctxlab/runfolder"
	"ctxlab/specs"
	"ctxlab/starter/exitcode"
	"ctxlab/store/bucket"
	"ctxlab/store/cas"
)

// ReportOptions are what starter report was asked: the run Name under Runs (or a results.jsonl), its Store and the
// Cluster whose Temporal server holds the sweep, and report.Options' choices (Out, Anchor, Fit, Features, the
// frozen Predictions, Alternative, Resamples, Seed, NoFigures, the method Pairs whose disagreements to list).
type ReportOptions struct {
	Name, Runs  string
	Store       string
	Cluster     cluster.Options
	Pairs       []string
	Out         string
	Anchor      string
	Fit         []string
	Features    []string
	Predictions []string
	Alternative string
	Resamples   int
	Seed        uint64
	NoFigures   bool
}

// Report writes the tables, statistics and figures of a run (or of a results.jsonl) and says where they are.
func Report(o ReportOptions, stdout, stderr io.Writer) int {
	code, err := reportRun(o, stdout, stderr)
	return exitcode.Saying(code, err, stderr)
}

// reportFailed is an exitcode.Exit of code that prints err after "starter report: ".
func reportFailed(code int, err error) *exitcode.Exit {
	return exitcode.With(code, "starter report: "+err.Error())
}

// reportRun reads the rows, builds the report with the recorded spec's order and anchor and the frozen predictions,
// writes its files and says where they are.
func reportRun(o ReportOptions, stdout, stderr io.Writer) (int, error) {
	if o.Cluster.Address != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		view, err := readSweep(ctx, o.Cluster, o.Store, o.Name, filepath.Join(o.Runs, o.Name))
		cancel()
		if err != nil {
			return 0, reportFailed(exitcode.Fail, err)
		}
		if view.State != "completed" {
			fmt.Fprintf(stderr, "starter report: the sweep is %s: reporting the rows it has stored so far\n", view.State)
		}
	}
	file, dir, err := LocateResults(o.Name, o.Runs)
	if err != nil {
		return 0, reportFailed(exitcode.Usage, err)
	}
	RepairRunFolder("report", dir, file, stderr)
	rows, bad, err := results.ReadFile(file)
	if err != nil {
		return 0, reportFailed(exitcode.Fail, err)
	}
	if len(rows) == 0 {
		return 0, exitcode.With(exitcode.Fail, fmt.Sprintf("starter report: %s holds no rows yet", file))
	}
	e, err := readSpecRecord(dir)
	if err != nil {
		return 0, reportFailed(exitcode.Fail, err)
	}
	opts := reportBuildOptions(o, file, dir, e)
	preds, problems, err := loadReportPredictions(o, dir, stderr)
	if err != nil {
		return 0, reportFailed(exitcode.Fail, err)
	}
	opts.Predictions = preds
	rep, err := report.Build(rows, bad, opts)
	if err != nil {
		return 0, reportFailed(exitcode.Usage, err)
	}
	for _, p := range problems {
		rep.Notes = append(rep.Notes, "prediction skipped: "+p)
	}
	out := dir
	if o.Out != "" {
		out = o.Out
	}
	written, err := writeReportFiles(rep, o, dir, out, e, stderr)
	if err != nil {
		return 0, err
	}
	printReport(rep, out, written, stdout)
	return exitcode.OK, nil
}

// reportBuildOptions are the report's options from the flags and, when recorded, the spec (its title, the order of
// its arms and its budget anchor).
func reportBuildOptions(o ReportOptions, file, dir string, e *specs.Experiment) report.Options {
	opts := report.Options{Title: "Report: " + filepath.Base(dir), Source: file, Resamples: o.Resamples, Seed: o.Seed,
		Alternative: o.Alternative, Fit: o.Fit, Features: o.Features, Anchor: o.Anchor, AnchorFrom: "--anchor"}
	for i := 0; i+1 < len(o.Pairs); i += 2 {
		opts.Pairs = append(opts.Pairs, [2]string{o.Pairs[i], o.Pairs[i+1]})
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
	return opts
}

// loadReportPredictions reads the run's frozen predictions and those --prediction names; problems are the files
// skipped, each said on stderr.
func loadReportPredictions(o ReportOptions, dir string, stderr io.Writer) ([]report.Prediction, []string, error) {
	preds, problems, err := report.LoadPredictions(runfolder.Predictions(dir))
	if err != nil {
		return nil, nil, err
	}
	for _, f := range o.Predictions {
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
	return preds, problems, nil
}

// writeReportFiles writes the report's figures (unless --no-figures), its Markdown and tables, and report.html into
// out, and returns the files written.
func writeReportFiles(rep *report.Report, o ReportOptions, dir, out string, e *specs.Experiment,
	stderr io.Writer) ([]string, error) {
	var written []string
	if !o.NoFigures {
		figs, err := figures.Write(rep, runfolder.Figures(out))
		if err != nil {
			return nil, reportFailed(exitcode.Fail, err)
		}
		for _, f := range figs {
			rel, _ := filepath.Rel(out, f)
			rep.Figures = append(rep.Figures, rel)
		}
		written = append(written, figs...)
	}
	files, err := rep.Write(out)
	if err != nil {
		return nil, reportFailed(exitcode.Fail, err)
	}
	written = append(files, written...)
	page, problems := writeReportHTML(rep, o, dir, out, e)
	for _, p := range problems {
		fmt.Fprintln(stderr, "starter report: report.html:", p)
	}
	if page == "" {
		return nil, exitcode.With(exitcode.Fail)
	}
	return append(written, page), nil
}

// printReport prints the methods and comparisons tables, the report's notes and the files written.
func printReport(rep *report.Report, out string, written []string, stdout io.Writer) {
	for _, t := range rep.Tables() {
		if t.Name == "methods" || t.Name == "comparisons" {
			fmt.Fprintf(stdout, "%s\n\n%s\n", t.Caption, t.Markdown())
		}
	}
	for _, n := range rep.Notes {
		fmt.Fprintln(stdout, "note:", n)
	}
	fmt.Fprintf(stdout, "\nreport: %s\n", runfolder.Report(out))
	for _, f := range written {
		if !strings.HasSuffix(f, runfolder.ReportFile) {
			fmt.Fprintln(stdout, "  "+f)
		}
	}
}

// writeReportHTML writes out/report.html: the report, its figures (the SVGs just drawn) and, per row, the stored
// objects the run's records lead to. It returns the page's path ("" when it could not be written) and what could
// not be read.
func writeReportHTML(rep *report.Report, o ReportOptions, dir, out string, e *specs.Experiment) (string, []string) {
	var problems []string
	hopts := report.HTMLOptions{Run: filepath.Base(dir)}
	if e != nil {
		hopts.Run = e.Name
	}
	for _, f := range rep.Figures {
		if !strings.HasSuffix(f, ".svg") {
			continue
		}
		b, err := runfolder.ReadFile(filepath.Join(out, f))
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		name := strings.TrimSuffix(filepath.Base(f), ".svg")
		hopts.Figures = append(hopts.Figures, report.Figure{Name: name, Caption: rep.FigureCaptions[name], SVG: b})
	}
	// A folder without a store is not a run folder (a results file alone): do not create one in it.
	if st, err := os.Stat(runfolder.CAS(dir)); o.Store != "" || (err == nil && st.IsDir()) {
		store, err := bucket.Open(context.Background(), o.Store, hopts.Run, runfolder.CAS(dir))
		if err != nil {
			problems = append(problems, err.Error())
		} else {
			var more []string
			objs, err := bucket.OpenObjects(context.Background(), o.Store, hopts.Run, dir)
			if err != nil {
				more = append(more, err.Error())
			} else {
				hopts.Details, more = reportDetails(context.Background(), objs, store, e, rep)
			}
			problems = append(problems, more...)
			if d, ok := store.(*cas.Dir); ok {
				hopts.Link = func(ref string) string {
					h := strings.TrimPrefix(ref, "sha256:")
					if len(h) < 3 {
						return ""
					}
					rel, err := filepath.Rel(out, filepath.Join(d.Root(), h[:2], h[2:]))
					if err != nil {
						return ""
					}
					return filepath.ToSlash(rel)
				}
			}
		}
	}
	page, err := rep.HTML(hopts)
	if err == nil {
		path := runfolder.ReportHTMLPath(out)
		if err = runfolder.WriteAtomic(path, page); err == nil {
			return path, problems
		}
	}
	return "", append(problems, err.Error())
}
