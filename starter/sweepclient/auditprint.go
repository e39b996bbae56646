package sweepclient

import (
	"bytes"
	"context"
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

	"ctxlab/internal/listing"
	"ctxlab/results/runstate"
	"ctxlab/runfolder"
	"ctxlab/runlog"
	"ctxlab/starter/exitcode"
	"ctxlab/store/bucket"
	"ctxlab/store/cas"
)

const auditTime = "2006-01-02 15:04:05.000"

// stepsShown is how many of a node's steps the audit names for people: a node shared by a whole study's methods has
// dozens of labels, so the first few stand for the rest (--json lists them all).
const stepsShown = 4

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
		fmt.Fprintf(w, "  %s  node %s  steps %s\n", a.Activity, a.Key, listing.Some(a.Steps, stepsShown))
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
		return exitcode.Usage
	}
	var names []string
	if o.Name != "" {
		if _, err := runFolder(o.Runs, o.Name); err != nil {
			fmt.Fprintln(stderr, "starter audit:", err)
			return exitcode.Fail
		}
		names = []string{o.Name}
	} else {
		entries, err := os.ReadDir(o.Runs)
		if err != nil {
			fmt.Fprintln(stderr, "starter audit:", err)
			return exitcode.Fail
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
			return exitcode.Fail
		}
		printObject(stdout, b)
		return exitcode.OK
	}
	where := "any run under " + o.Runs
	if o.Name != "" {
		where = "run " + o.Name
	}
	fmt.Fprintf(stderr, "starter audit: %s is not in the content store of %s\n", ref, where)
	return exitcode.Fail
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
