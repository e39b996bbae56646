package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"ctxlab/activities"
	"ctxlab/activities/contexts"
	"ctxlab/internal/cluster"
	"ctxlab/results"
	"ctxlab/results/figures"
	"ctxlab/results/report"
	"ctxlab/results/stats"
	"ctxlab/runfolder"
	"ctxlab/specs"
	"ctxlab/store/bucket"
	"ctxlab/store/cas"
	"ctxlab/store/objects"
)

func init() { commands = append(commands, reportCommand.command()) }

var reportCommand = commandDef[reportOptions, *reportOptions]{
	use:   "report NAME|RESULTS.jsonl",
	short: "tables, statistics and figures of a run",
	long:  "NAME is a run folder under --runs; a path to a results.jsonl works too.",
	run:   runReport,
}

// writeSpecRecord saves the compiled experiment into the run folder, so a report knows the method order and the
// budget anchor.
func writeSpecRecord(runDir string, e *specs.Experiment) error {
	b, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return err
	}
	return runfolder.WriteAtomic(runfolder.Spec(runDir), append(b, '\n'))
}

type reportOptions struct {
	name        string
	runs        string
	store       string
	cluster     cluster.Options
	pairs       listFlag
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
func (l *listFlag) Type() string   { return "list" }
func (l *listFlag) Set(s string) error {
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			*l = append(*l, part)
		}
	}
	return nil
}

func (o *reportOptions) define(fs *pflag.FlagSet) {
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
	fs.Var(&o.pairs, "pair", "also list the disagreements of methods `A,B` (repeatable; every comparison's are listed)")
	fs.StringVar(&o.store, "store", os.Getenv(activities.StoreEnv), "content store the run used, for report.html's "+
		"drill-down: file:// or s3:// `URL`, or a folder (default: the run folder's cas/; $"+activities.StoreEnv+")")
	defineCluster(fs, &o.cluster, "", "default")
	fs.Lookup("address").Usage = "read the sweep's rows from the Temporal server at `HOST:PORT` (and --store) into " +
		"runs/NAME first: a report on a machine other than the starter's"
}

func (o *reportOptions) complete(pos []string, _ *pflag.FlagSet) error {
	if len(pos) != 1 {
		return fmt.Errorf("report: want one run name or results file, got %d arguments", len(pos))
	}
	o.name = pos[0]
	if o.alternative != report.AltObserved && o.alternative != report.AltAnchor {
		return fmt.Errorf("report: --alternative %q: want observed or anchor", o.alternative)
	}
	if len(o.pairs)%2 != 0 {
		return fmt.Errorf("report: --pair wants two methods, A,B")
	}
	if o.resamples < 100 {
		return fmt.Errorf("report: --resamples %d: want at least 100", o.resamples)
	}
	return nil
}

func parseReport(args []string, stderr io.Writer) (reportOptions, error) {
	return reportCommand.parse(args, stderr)
}

// locateResults finds the results file and the run folder NAME means: an existing results file, a folder holding
// results.jsonl, or a run folder under runs.
func locateResults(name, runs string) (file, dir string, err error) {
	if st, err := os.Stat(name); err == nil {
		if !st.IsDir() {
			return name, filepath.Dir(name), nil
		}
		if _, err := os.Stat(runfolder.Rows(name)); err == nil {
			return runfolder.Rows(name), name, nil
		}
	}
	dir = filepath.Join(runs, name)
	file = runfolder.Rows(dir)
	if _, err := os.Stat(file); err != nil {
		return "", "", fmt.Errorf("no results at %s (run the spec first, or name a results.jsonl)", file)
	}
	return file, dir, nil
}

// readSpecRecord returns the run's recorded spec, or nil when the run folder has none.
func readSpecRecord(dir string) (*specs.Experiment, error) {
	b, err := runfolder.ReadFile(runfolder.Spec(dir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var e specs.Experiment
	if err := json.Unmarshal(b, &e); err != nil {
		return nil, fmt.Errorf("%s: %w", runfolder.Spec(dir), err)
	}
	return &e, nil
}

func runReport(o reportOptions, stdout, stderr io.Writer) int {
	code, err := reportRun(o, stdout, stderr)
	return exitCodeSaying(code, err, stderr)
}

// reportFailed is a roundExit of code that prints err after "starter report: ".
func reportFailed(code int, err error) *roundExit {
	return exitWith(code, "starter report: "+err.Error())
}

// reportRun reads the rows, builds the report with the recorded spec's order and anchor and the frozen predictions,
// writes its files and says where they are.
func reportRun(o reportOptions, stdout, stderr io.Writer) (int, error) {
	if o.cluster.Address != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		view, err := readSweep(ctx, o.cluster, o.store, o.name, filepath.Join(o.runs, o.name))
		cancel()
		if err != nil {
			return 0, reportFailed(exitFail, err)
		}
		if view.State != "completed" {
			fmt.Fprintf(stderr, "starter report: the sweep is %s: reporting the rows it has stored so far\n", view.State)
		}
	}
	file, dir, err := locateResults(o.name, o.runs)
	if err != nil {
		return 0, reportFailed(exitUsage, err)
	}
	repairRunFolder("report", dir, file, stderr)
	rows, bad, err := results.ReadFile(file)
	if err != nil {
		return 0, reportFailed(exitFail, err)
	}
	if len(rows) == 0 {
		return 0, exitWith(exitFail, fmt.Sprintf("starter report: %s holds no rows yet", file))
	}
	e, err := readSpecRecord(dir)
	if err != nil {
		return 0, reportFailed(exitFail, err)
	}
	opts := reportBuildOptions(o, file, dir, e)
	preds, problems, err := loadReportPredictions(o, dir, stderr)
	if err != nil {
		return 0, reportFailed(exitFail, err)
	}
	opts.Predictions = preds
	rep, err := report.Build(rows, bad, opts)
	if err != nil {
		return 0, reportFailed(exitUsage, err)
	}
	for _, p := range problems {
		rep.Notes = append(rep.Notes, "prediction skipped: "+p)
	}
	out := dir
	if o.out != "" {
		out = o.out
	}
	written, err := writeReportFiles(rep, o, dir, out, e, stderr)
	if err != nil {
		return 0, err
	}
	printReport(rep, out, written, stdout)
	return exitOK, nil
}

// reportBuildOptions are the report's options from the flags and, when recorded, the spec (its title, the order of
// its arms and its budget anchor).
func reportBuildOptions(o reportOptions, file, dir string, e *specs.Experiment) report.Options {
	opts := report.Options{Title: "Report: " + filepath.Base(dir), Source: file, Resamples: o.resamples, Seed: o.seed,
		Alternative: o.alternative, Fit: o.fit, Features: o.features, Anchor: o.anchor, AnchorFrom: "--anchor"}
	for i := 0; i+1 < len(o.pairs); i += 2 {
		opts.Pairs = append(opts.Pairs, [2]string{o.pairs[i], o.pairs[i+1]})
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
func loadReportPredictions(o reportOptions, dir string, stderr io.Writer) ([]report.Prediction, []string, error) {
	preds, problems, err := report.LoadPredictions(runfolder.Predictions(dir))
	if err != nil {
		return nil, nil, err
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
	return preds, problems, nil
}

// writeReportFiles writes the report's figures (unless --no-figures), its Markdown and tables, and report.html into
// out, and returns the files written.
func writeReportFiles(rep *report.Report, o reportOptions, dir, out string, e *specs.Experiment,
	stderr io.Writer) ([]string, error) {
	var written []string
	if !o.noFigures {
		figs, err := figures.Write(rep, runfolder.Figures(out))
		if err != nil {
			return nil, reportFailed(exitFail, err)
		}
		for _, f := range figs {
			rel, _ := filepath.Rel(out, f)
			rep.Figures = append(rep.Figures, rel)
		}
		written = append(written, figs...)
	}
	files, err := rep.Write(out)
	if err != nil {
		return nil, reportFailed(exitFail, err)
	}
	written = append(files, written...)
	page, problems := writeReportHTML(rep, o, dir, out, e)
	for _, p := range problems {
		fmt.Fprintln(stderr, "starter report: report.html:", p)
	}
	if page == "" {
		return nil, exitWith(exitFail)
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
func writeReportHTML(rep *report.Report, o reportOptions, dir, out string, e *specs.Experiment) (string, []string) {
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
	if st, err := os.Stat(runfolder.CAS(dir)); o.store != "" || (err == nil && st.IsDir()) {
		store, err := bucket.Open(context.Background(), o.store, hopts.Run, runfolder.CAS(dir))
		if err != nil {
			problems = append(problems, err.Error())
		} else {
			var more []string
			objs, err := bucket.OpenObjects(context.Background(), o.store, hopts.Run, dir)
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

// maxProblems bounds how many unreadable objects report.html's problems list names one by one.
const maxProblems = 5

// reportDetails reads, for every row of the report, the context its method's measure step read (its files), the
// patch, and the grade step's test log: the plan of the recorded spec names each arm's nodes, and the run's node
// records name the stored objects.
func reportDetails(ctx context.Context, objs objects.Store, store cas.Store, e *specs.Experiment, rep *report.Report) (map[results.Key]report.Detail, []string) {
	if e == nil {
		return nil, []string{"no spec recorded in the run folder: no drill-down into stored objects"}
	}
	plan, err := specs.BuildPlan(e)
	if err != nil {
		return nil, []string{fmt.Sprintf("the recorded spec: %v", err)}
	}
	arms := armNodesOf(plan)
	details := map[results.Key]report.Detail{}
	r := &detailReader{ctx: ctx, objs: objs, store: store}
	for _, row := range rep.CountedRows() {
		id := row.Key()
		an, ok := arms[results.Key{Method: id.Method, Model: id.Model, Sample: id.Sample}]
		if !ok {
			continue // a method of an earlier spec
		}
		if d := r.detail(row, an); d.ContextRef != "" || d.PatchRef != "" || d.TestLogRef != "" {
			details[id] = d
		}
	}
	if r.unread > maxProblems {
		r.problems = append(r.problems, fmt.Sprintf("and %d more objects could not be read", r.unread-maxProblems))
	}
	return details, r.problems
}

// detailReader reads the stored objects behind report rows, counting those it could not read and naming the first
// maxProblems.
type detailReader struct {
	ctx      context.Context
	objs     objects.Store // the run's memos
	store    cas.Store
	unread   int
	problems []string
}

func (r *detailReader) note(d *report.Detail, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	d.Problems = append(d.Problems, msg)
	if r.unread++; r.unread <= maxProblems {
		r.problems = append(r.problems, msg)
	}
}

func (r *detailReader) get(d *report.Detail, what string, ref cas.Ref) []byte {
	b, err := r.store.Get(r.ctx, ref)
	if err != nil {
		r.note(d, "%s %s: %v", what, ref, err)
	}
	return b
}

// detail is a row's context (its files), patch and test log, from the memos of its arm's nodes.
func (r *detailReader) detail(row results.Row, an armNodes) report.Detail {
	var d report.Detail
	refs := an.refs(r.ctx, r.objs, row)
	if refs.context != "" {
		d.ContextRef = string(refs.context)
		var c contexts.Context
		if b := r.get(&d, "context", refs.context); b != nil {
			if err := json.Unmarshal(b, &c); err != nil {
				r.note(&d, "context %s: %v", refs.context, err)
			}
			d.ContextFiles = c.Files()
		}
	}
	if refs.patch != "" {
		d.PatchRef = string(refs.patch)
		d.Patch = string(r.get(&d, "patch", refs.patch))
	}
	if refs.testOutput != "" {
		d.TestLogRef = string(refs.testOutput)
		d.TestLog = string(r.get(&d, "test log", refs.testOutput))
	}
	return d
}
