package sweepclient

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rs/zerolog"

	"ctxlab/activities/api"
	"ctxlab/activities/api/errkind"
	"ctxlab/activities/limiter"
	"ctxlab/internal/cluster"
	"ctxlab/results/runstate"
	"ctxlab/runfolder"
	"ctxlab/starter/exitcode"
)

// StatusOptions are what starter status was asked: the run Name under Runs, as JSON or text, the shared Store its
// workers used, and the Cluster whose Temporal server holds the sweep (none: the run's own starter's).
type StatusOptions struct {
	Name, Runs string
	JSON       bool
	Store      string
	Cluster    cluster.Options
}

// StatusReport is status's JSON document.
type StatusReport struct {
	Run string `json:"run"`
	Dir string `json:"dir"`
	runstate.Status
	// Starter is the process that runs the run's embedded server, when one is alive.
	Starter *int `json:"starter_pid,omitempty"`
	// Stopped: the starter that ran the sweep's embedded server is gone.
	Stopped bool `json:"stopped,omitempty"`
	// Sweep is what the Temporal server said of the sweep (with --address).
	Sweep *sweepView `json:"sweep,omitempty"`
	Note  string     `json:"note,omitempty"`
	// ErrorClasses counts the rows with an error by whose failure it is (model, endpoint, configuration,
	// environment) and kind: a re-run retries all but the model's.
	ErrorClasses map[errkind.Class]map[string]int `json:"error_classes,omitempty"`
	// Budget is what the run's budget workflow holds (its limits, what the run's calls cost, what calls in flight
	// reserve); BudgetNote says why it is missing.
	Budget     *limiter.Status `json:"budget,omitempty"`
	BudgetNote string          `json:"budget_note,omitempty"`
	errors     RowErrorTally
}

// Status says where run o.Name's sweep stands, as text or JSON.
func Status(o StatusOptions, stdout, stderr io.Writer) int {
	var view *sweepView
	if o.Cluster.Address != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		v, err := readSweep(ctx, o.Cluster, o.Store, o.Name, filepath.Join(o.Runs, o.Name))
		cancel()
		if err != nil {
			fmt.Fprintln(stderr, "starter status:", err)
			return exitcode.Fail
		}
		view = v
	}
	dir, err := runFolder(o.Runs, o.Name)
	if err != nil {
		fmt.Fprintln(stderr, "starter status:", err)
		return exitcode.Fail
	}
	RepairRunFolder("status", dir, runfolder.Rows(dir), stderr)
	if err := gatherRunRecords(o.Store, o.Name, dir); err != nil {
		fmt.Fprintln(stderr, "starter status:", err)
	}
	rec, err := runstate.Read(dir)
	if err != nil {
		fmt.Fprintln(stderr, "starter status:", err)
		return exitcode.Fail
	}
	instances, arms, note := view.shape(ReadShape(dir))
	pid, published := liveStarter(dir)
	st := runstate.Compute(rec, runstate.Options{Instances: instances, Arms: arms, Now: time.Now(),
		Stopped: published && pid == nil})
	st = endElapsedWhenFinished(st)
	rep := StatusReport{Run: o.Name, Dir: dir, Status: st, Starter: pid, Stopped: published && pid == nil,
		Note: note, Sweep: view, errors: TallyRowErrors(rec.Rows)}
	if view != nil && view.Note != "" {
		rep.Note = strings.TrimPrefix(rep.Note+"; "+view.Note, "; ")
	}
	if rep.errors.Errors > 0 {
		rep.ErrorClasses = rep.errors.ClassKinds
	}
	rep.Budget, rep.BudgetNote = statusBudget(o, dir, pid)
	if o.JSON {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			fmt.Fprintln(stderr, "starter status:", err)
			return exitcode.Fail
		}
		fmt.Fprintln(stdout, string(b))
		return exitcode.OK
	}
	printStatus(stdout, rep)
	return exitcode.OK
}

// endElapsedWhenFinished stops the clock of a finished sweep at its last attempt: the time since then is not the
// sweep's (a 12-minute sweep looked at 5 minutes later took 12 minutes, not 17).
func endElapsedWhenFinished(st runstate.Status) runstate.Status {
	if st.Finished() && st.FirstAttempt != nil && st.LastAttempt != nil {
		st.ElapsedS = st.LastAttempt.Sub(*st.FirstAttempt).Seconds()
	}
	return st
}

// liveStarter returns the pid of the starter that published the run's embedded server, when that process lives;
// published is false when no starter ran an embedded server for the run (a sweep on a cluster: status cannot tell
// whether it runs).
func liveStarter(dir string) (pid *int, published bool) {
	b, err := runfolder.ReadFile(runfolder.Server(dir))
	if err != nil {
		return nil, false
	}
	var sf ServerFile
	if json.Unmarshal(b, &sf) != nil || sf.PID <= 0 {
		return nil, false
	}
	if !processAlive(sf.PID) {
		return nil, true
	}
	return &sf.PID, true
}

func printStatus(w io.Writer, r StatusReport) {
	st := r.Status
	fmt.Fprintf(w, "run %s (%s): %d issues x %d methods\n", r.Run, r.Dir, st.Instances, len(st.Methods))
	if r.Note != "" {
		fmt.Fprintf(w, "note: %s\n", r.Note)
	}
	state := "not started"
	switch {
	case st.Finished():
		state = "finished"
	case r.Sweep != nil:
		state = fmt.Sprintf("%s on the Temporal server at %s (workflow %s)", r.Sweep.State, r.Sweep.Address,
			r.Sweep.ID)
	case r.Starter != nil:
		state = fmt.Sprintf("running (starter pid %d)", *r.Starter)
	case r.Stopped:
		state = "stopped (its starter is gone; starter run SPEC resumes it)"
	case st.FirstAttempt != nil:
		state = "no starter on this machine (a sweep on a cluster may still run)"
	}
	fmt.Fprintf(w, "state:     %s\n", state)
	fmt.Fprintf(w, "issues:    %d done, %d failed, %d running, %d pending\n", st.Issues.Done, st.Issues.Failed,
		st.Issues.Running, st.Issues.Pending)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  method\tmodel\tdone\tfailed\trunning\tpending")
	for _, m := range st.Methods {
		name := m.Method
		if m.Sample > 0 { // a method's later patch samples, each an arm of its own
			name += "#" + strconv.Itoa(m.Sample)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%d\t%d\t%d\t%d\n", name, m.Model, m.Done, m.Failed, m.Running, m.Pending)
	}
	_ = tw.Flush()
	if st.OtherRows > 0 {
		fmt.Fprintf(w, "(%d rows of methods or issues outside the recorded spec are not counted)\n", st.OtherRows)
	}
	if r.errors.Errors > 0 {
		fmt.Fprintf(w, "errors:    %d rows: %s\n", r.errors.Errors, r.errors.ByClass())
	}
	printStatusSpend(w, r)
	printStatusTimes(w, r)
	for _, name := range slices.Sorted(maps.Keys(st.Bad)) {
		n := st.Bad[name]
		fmt.Fprintf(w, "warning: %d unreadable line(s) in %s (a torn line from a killed process is skipped)\n", n,
			filepath.Join(r.Dir, name))
	}
}

// statusBudget reads the run's budget workflow: on the cluster --address names, else on the server of the run's
// starter while it lives. The note says why there is none.
func statusBudget(o StatusOptions, dir string, starter *int) (*limiter.Status, string) {
	co := o.Cluster
	if co.Address == "" {
		sf, ok := ReadServerFile(runfolder.Server(dir))
		if starter == nil || !ok || sf.Address == "" {
			return nil, "no server to ask the run's budget workflow (no starter of the run is running; " +
				"--address names a cluster's)"
		}
		co.Address = sf.Address
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	c, err := cluster.Dial(ctx, co, zerolog.Nop())
	if err != nil {
		return nil, err.Error()
	}
	defer c.Close()
	st, err := ReadBudget(ctx, c, o.Name)
	if err != nil {
		return nil, fmt.Sprintf("the run's budget workflow %s did not answer: %v", api.BudgetWorkflowID(o.Name), err)
	}
	return &st, ""
}

// printStatusSpend prints what the run paid and what it is projected to pay: the spend as the run's budget
// workflow counts it when it answered (every worker's calls, wherever they ran), the calls as this machine's
// ledger (calls.jsonl) records them.
func printStatusSpend(w io.Writer, r StatusReport) {
	st := r.Status
	sp := st.Spend
	if b := r.Budget; b != nil {
		capped := "no cap"
		if b.Limits.SpendUSD > 0 {
			capped = fmt.Sprintf("cap $%.4f", b.Limits.SpendUSD)
		}
		fmt.Fprintf(w, "spend:     $%.4f in %d calls, %s (the run's budget workflow; $%.4f reserved by %d call(s) in "+
			"flight)\n", b.SpentUSD, b.Calls, capped, b.ReservedUSD, b.InFlight)
		fmt.Fprintf(w, "calls:     $%.4f (%d paid calls, %d cache hits, %d failed; %d prompt + %d completion tokens "+
			"paid; %s)\n", sp.USD, sp.PaidCalls, sp.CacheHits, sp.FailedCalls, sp.PromptTokens, sp.CompletionTokens,
			runfolder.CallsFile)
	} else {
		fmt.Fprintf(w, "spend:     $%.4f (%d paid calls, %d cache hits, %d failed; %d prompt + %d completion tokens "+
			"paid)\n", sp.USD, sp.PaidCalls, sp.CacheHits, sp.FailedCalls, sp.PromptTokens, sp.CompletionTokens)
		fmt.Fprintf(w, "           (from %s: %s)\n", runfolder.CallsFile, r.BudgetNote)
	}
	if sp.TokensSaturated {
		fmt.Fprintln(w, "           (the calls' token counts do not fit an int64: a total that passed its bound stays at it)")
	}
	if st.ProjectedUSD != nil {
		fmt.Fprintf(w, "projected: $%.4f (spent + $%.4f per finished issue x %d unfinished)\n", *st.ProjectedUSD,
			*st.PerIssueUSD, st.Instances-st.Issues.Done-st.Issues.Failed)
	} else {
		fmt.Fprintln(w, "projected: - (no issue finished yet)")
	}
}

// printStatusTimes prints the run's elapsed time and how long it has left.
func printStatusTimes(w io.Writer, r StatusReport) {
	st := r.Status
	switch {
	case st.FirstAttempt == nil:
		fmt.Fprintln(w, "elapsed:   - (no attempt recorded)")
	case st.Finished():
		fmt.Fprintf(w, "elapsed:   %s from the first attempt to the last (%s working); finished %s ago\n",
			runstate.FormatDuration(runstate.Seconds(st.ElapsedS)), runstate.FormatDuration(runstate.Seconds(st.ActiveS)),
			runstate.FormatDuration(runstate.Seconds(st.SinceLastS)))
	default:
		fmt.Fprintf(w, "elapsed:   %s since the first attempt (%s working); last attempt %s ago\n",
			runstate.FormatDuration(runstate.Seconds(st.ElapsedS)), runstate.FormatDuration(runstate.Seconds(st.ActiveS)),
			runstate.FormatDuration(runstate.Seconds(st.SinceLastS)))
	}
	switch {
	case st.Finished():
		fmt.Fprintln(w, "eta:       - (finished)")
	case st.ETAS == nil:
		fmt.Fprintln(w, "eta:       - (no issue finished yet)")
	case r.Stopped:
		fmt.Fprintf(w, "eta:       %s of work left once the sweep runs again\n",
			runstate.FormatDuration(runstate.Seconds(*st.ETAS)))
	default:
		fmt.Fprintf(w, "eta:       %s (working time per finished issue x unfinished issues)\n",
			runstate.FormatDuration(runstate.Seconds(*st.ETAS)))
	}
}
