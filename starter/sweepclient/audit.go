package sweepclient

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"ctxlab/results/runstate"
	"ctxlab/runfolder"
	"ctxlab/starter/exitcode"
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
	return exitcode.Saying(code, err, stderr)
}

// auditFailed is an exitcode.Exit of exitcode.Fail that prints err after "starter audit: ".
func auditFailed(err error) *exitcode.Exit {
	return exitcode.With(exitcode.Fail, "starter audit: "+err.Error())
}

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
		return exitcode.OK, nil
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
		return 0, exitcode.With(exitcode.Fail, fmt.Sprintf("starter audit: issue %q has no records in %s", o.Issue,
			runfolder.Attempts(dir)))
	}
	rep := newAuditReport(o.Name, dir, acts, sh.Note)
	if o.JSON {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return 0, auditFailed(err)
		}
		fmt.Fprintln(stdout, string(b))
		return exitcode.OK, nil
	}
	printAudit(stdout, rep)
	return exitcode.OK, nil
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
		return ao, exitcode.With(exitcode.Fail, fmt.Sprintf("starter audit: --method needs the run's spec (%s)", sh.Note))
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
		return ao, exitcode.With(exitcode.Fail, fmt.Sprintf("starter audit: no method %q in the run's spec; it has %s",
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
