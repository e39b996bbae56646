package sweepclient

import (
	"bytes"
	"context"
	"ctxlab/results/runstate"
	"ctxlab/runfolder"
	"ctxlab/runlog"
	"ctxlab/store/bucket"
	"ctxlab/store/cas"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
	"unicode/utf8"
)

// AuditOptions are what starter audit was asked: the run Name under Runs, its Store, the Issue and the Method to
// list only, the object to Show, and the folder to Export the rows' files to.
type AuditOptions struct {
	Name, Runs, Store string
	Issue, Method     string
	Show              string
	JSON              bool
	Export            string
}

// AuditReport is audit's JSON document.
type AuditReport struct {
	Run        string              `json:"run"`
	Dir        string              `json:"dir"`
	Activities []runstate.Activity `json:"activities"`
	Totals     auditTotals         `json:"totals"`
	Note       string              `json:"note,omitempty"`
}

// auditTotals sum what the listed activities did.
type auditTotals struct {
	Activities int `json:"activities"`
	// Tries counts attempts by outcome (done, fail, memo, unfinished).
	Tries map[string]int `json:"tries"`
	// Calls sums the ledger (calls.jsonl) over the listed activities.
	Calls runstate.Spend `json:"calls"`
}

// Audit lists every attempt of every activity of a run, or exports its rows, or shows a stored object, as o asks.
func Audit(o AuditOptions, stdout, stderr io.Writer) int {
	if o.Show != "" {
		return showRef(o, stdout, stderr)
	}
	code, err := auditRun(o, stdout)
	return exitCode(code, err, stderr)
}

// auditFailed is a roundExit of ExitFail that prints err after "starter audit: ".
func auditFailed(err error) *roundExit { return exitWith(ExitFail, "starter audit: "+err.Error()) }

// auditRun exports the run's rows (--export) or lists its activities' attempts and calls, as text or JSON.
func auditRun(o AuditOptions, stdout io.Writer) (int, error) {
	dir, err := runFolder(o.Runs, o.Name)
	if err != nil {
		return 0, auditFailed(err)
	}
	if o.Export != "" {
		n, err := exportRun(context.Background(), o, dir, ReadShape(dir).Plan)
		if err != nil {
			return 0, auditFailed(err)
		}
		printExport(stdout, o.Export, n)
		return ExitOK, nil
	}
	if err := gatherRunRecords(o.Store, o.Name, dir); err != nil {
		return 0, auditFailed(err)
	}
	rec, err := runstate.Read(dir)
	if err != nil {
		return 0, auditFailed(err)
	}
	sh := ReadShape(dir)
	ao, err := auditSelection(o, sh)
	if err != nil {
		return 0, err
	}
	acts := runstate.Audit(rec, ao)
	if o.Issue != "" && len(acts) == 0 {
		return 0, exitWith(ExitFail, fmt.Sprintf("starter audit: issue %q has no records in %s", o.Issue,
			runfolder.Attempts(dir)))
	}
	rep := newAuditReport(o.Name, dir, acts, sh.Note)
	if o.JSON {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return 0, auditFailed(err)
		}
		fmt.Fprintln(stdout, string(b))
		return ExitOK, nil
	}
	printAudit(stdout, rep)
	return ExitOK, nil
}

// auditSelection is what the audit lists: the plan's nodes of the run's instances, of the --issue and the --method
// asked for.
func auditSelection(o AuditOptions, sh SweepShape) (runstate.AuditOptions, error) {
	ao := runstate.AuditOptions{Instances: sh.Instances, Instance: o.Issue}
	if sh.Plan != nil {
		for _, n := range sh.Plan.Nodes {
			ao.Nodes = append(ao.Nodes, runstate.Node{Key: n.Key, Activity: n.Activity, Steps: n.Steps})
		}
	}
	if o.Method == "" {
		return ao, nil
	}
	if sh.Plan == nil {
		return ao, exitWith(ExitFail, fmt.Sprintf("starter audit: --method needs the run's spec (%s)", sh.Note))
	}
	ao.Keep = map[string]bool{}
	var known []string
	for _, arm := range sh.Plan.Arms {
		known = append(known, arm.Model+"/"+arm.Method)
		if arm.Method != o.Method && arm.Model+"/"+arm.Method != o.Method {
			continue
		}
		for _, s := range arm.Steps {
			ao.Keep[s.Key] = true
		}
	}
	if len(ao.Keep) == 0 {
		return ao, exitWith(ExitFail, fmt.Sprintf("starter audit: no method %q in the run's spec; it has %s",
			o.Method, strings.Join(known, ", ")))
	}
	return ao, nil
}

// newAuditReport is the audit of the listed activities with their totals.
func newAuditReport(name, dir string, acts []runstate.Activity, note string) AuditReport {
	rep := AuditReport{Run: name, Dir: dir, Activities: acts, Note: note,
		Totals: auditTotals{Activities: len(acts), Tries: map[string]int{}}}
	if rep.Activities == nil {
		rep.Activities = []runstate.Activity{}
	}
	for _, a := range acts {
		for _, t := range a.Tries {
			rep.Totals.Tries[t.Event]++
		}
		rep.Totals.Calls.Merge(a.Calls)
	}
	return rep
}

const auditTime = "2006-01-02 15:04:05.000"

// stepList names a node's steps for people: a node shared by a whole study's methods has dozens of labels, so the
// first few stand for the rest (--json lists them all).
func stepList(steps []string) string {
	const shown = 4
	if len(steps) <= shown {
		return strings.Join(steps, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(steps[:shown], ", "), len(steps)-shown)
}

func printAudit(w io.Writer, r AuditReport) {
	fmt.Fprintf(w, "run %s (%s): %d activities\n", r.Run, r.Dir, len(r.Activities))
	if r.Note != "" {
		fmt.Fprintf(w, "note: %s\n", r.Note)
	}
	last := ""
	for _, a := range r.Activities {
		if a.Instance != last {
			fmt.Fprintf(w, "\nissue %s\n", a.Instance)
			last = a.Instance
		}
		fmt.Fprintf(w, "  %s  node %s  steps %s\n", a.Activity, a.Key, stepList(a.Steps))
		if len(a.Tries) == 0 {
			fmt.Fprintln(w, "    (no attempt: not reached, or skipped because an input failed)")
		}
		for _, t := range a.Tries {
			printAuditTry(w, t)
		}
		printAuditCalls(w, a)
	}
	t := r.Totals
	fmt.Fprintf(w, "\ntotal: %d activities; attempts %d done, %d failed, %d memo, %d unfinished; "+
		"%d paid calls $%.4f, %d cache hits\n", t.Activities, t.Tries[runlog.EventDone], t.Tries[runlog.EventFail],
		t.Tries[runlog.EventMemo], t.Tries[runstate.TryUnfinished], t.Calls.PaidCalls, t.Calls.USD, t.Calls.CacheHits)
}

// printAuditTry prints one attempt: its outcome, time, duration and usage, then its error and the objects it read
// and wrote.
func printAuditTry(w io.Writer, t runstate.Try) {
	line := fmt.Sprintf("    #%d %-10s %s", t.Attempt, t.Event, t.Start.UTC().Format(auditTime))
	if t.DurationMS > 0 || t.Event == runlog.EventDone || t.Event == runlog.EventFail {
		line += "  " + (time.Duration(t.DurationMS) * time.Millisecond).String()
	}
	if t.ModelCalls+t.PaidCalls+t.CacheHits > 0 {
		line += fmt.Sprintf("  calls %d (paid %d, cached %d) %d+%d tokens $%.4f", t.ModelCalls, t.PaidCalls,
			t.CacheHits, t.PromptTokens, t.CompletionTokens, t.CostUSD)
	}
	fmt.Fprintln(w, line)
	if t.Error != "" {
		typ := ""
		if t.ErrorType != "" {
			typ = " [" + t.ErrorType + "]"
		}
		fmt.Fprintf(w, "       error%s: %s\n", typ, t.Error)
	}
	if t.Output != "" {
		fmt.Fprintf(w, "       output %s\n", t.Output)
	}
	if t.Params != "" {
		fmt.Fprintf(w, "       params %s\n", t.Params)
	}
	names := make([]string, 0, len(t.Inputs))
	for n := range t.Inputs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "       input  %s %s\n", t.Inputs[n], n)
	}
}

// printAuditCalls prints an activity's ledger total and each of its model calls.
func printAuditCalls(w io.Writer, a runstate.Activity) {
	if c := a.Calls; c.PaidCalls+c.CacheHits > 0 {
		fmt.Fprintf(w, "    ledger: %d paid calls $%.4f (%d+%d tokens), %d cache hits, %d failed\n", c.PaidCalls,
			c.USD, c.PromptTokens, c.CompletionTokens, c.CacheHits, c.FailedCalls)
	}
	for _, c := range a.CallList {
		how := "paid"
		if c.Cached {
			how = "cached"
		}
		line := fmt.Sprintf("      call %s %s %s/%s %d+%d tokens $%.4f", c.Time.UTC().Format(auditTime), how,
			c.Provider, c.Model, c.PromptTokens, c.CompletionTokens, c.CostUSD)
		if c.Error != "" {
			line += " error " + c.Error
		}
		fmt.Fprintln(w, line)
		if c.Request != "" {
			fmt.Fprintf(w, "         request  %s\n", c.Request)
		}
		if c.Response != "" {
			fmt.Fprintf(w, "         response %s\n", c.Response)
		}
	}
}

// showRef prints a stored object: from NAME's store, or from the first run under --runs that holds it.
func showRef(o AuditOptions, stdout, stderr io.Writer) int {
	ref := cas.Ref(strings.TrimSpace(o.Show))
	if !ref.Valid() {
		fmt.Fprintf(stderr, "starter audit: --show %q is not a reference (want sha256: and 64 hex digits)\n", o.Show)
		return ExitUsage
	}
	var names []string
	if o.Name != "" {
		if _, err := runFolder(o.Runs, o.Name); err != nil {
			fmt.Fprintln(stderr, "starter audit:", err)
			return ExitFail
		}
		names = []string{o.Name}
	} else {
		entries, err := os.ReadDir(o.Runs)
		if err != nil {
			fmt.Fprintln(stderr, "starter audit:", err)
			return ExitFail
		}
		for _, e := range entries {
			if e.IsDir() {
				names = append(names, e.Name())
			}
		}
	}
	ctx := context.Background()
	for _, name := range names {
		dir := filepath.Join(o.Runs, name)
		if o.Store == "" {
			// A folder without a store is not a run: do not create one in it.
			if st, err := os.Stat(runfolder.CAS(dir)); err != nil || !st.IsDir() {
				continue
			}
		}
		store, err := bucket.Open(ctx, o.Store, name, runfolder.CAS(dir))
		if err != nil {
			fmt.Fprintf(stderr, "starter audit: %s: %v\n", name, err)
			continue
		}
		b, err := store.Get(ctx, ref)
		if errors.Is(err, cas.ErrNotFound) {
			continue
		}
		if err != nil {
			fmt.Fprintf(stderr, "starter audit: %s: %v\n", name, err)
			return ExitFail
		}
		printObject(stdout, b)
		return ExitOK
	}
	where := "any run under " + o.Runs
	if o.Name != "" {
		where = "run " + o.Name
	}
	fmt.Fprintf(stderr, "starter audit: %s is not in the content store of %s\n", ref, where)
	return ExitFail
}

// printObject prints JSON indented, text as it is, and says what binary data is instead of printing it.
func printObject(w io.Writer, b []byte) {
	var buf bytes.Buffer
	switch {
	case json.Valid(b) && json.Indent(&buf, b, "", "  ") == nil:
		buf.WriteByte('\n')
		_, _ = w.Write(buf.Bytes())
	case utf8.Valid(b):
		_, _ = w.Write(b)
		if len(b) > 0 && b[len(b)-1] != '\n' {
			fmt.Fprintln(w)
		}
	default:
		fmt.Fprintf(w, "(%d bytes of binary data)\n", len(b))
	}
}
