// Package runstate computes where a sweep stands from its run folder's records alone (attempts.jsonl, calls.jsonl,
// results.jsonl): per method the issues done, failed, running and pending, the spend so far and projected, elapsed
// time and ETA. Reading files only, it answers whether or not a sweep is running, from any shell.
package runstate

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"slices"
	"time"

	"ctxlab/results"
	"ctxlab/runfolder"
	"ctxlab/runlog"
)

// DefaultIdleGap is the longest stretch without any attempt record that still counts as the sweep working: longer
// stretches are a stopped sweep (killed, or not yet restarted) and are left out of the time an ETA is based on.
const DefaultIdleGap = 10 * time.Minute

// Records are a run folder's records.
type Records struct {
	Attempts []runlog.Attempt
	Calls    []runlog.Call
	Rows     []results.Row
	// Bad counts, per file name, the lines that did not decode (the torn last line of a killed process).
	Bad map[string]int
}

// Read loads a run folder's records. Missing files are empty: a sweep that has not started has none, and a run
// from before the spend ledger has no calls.jsonl.
func Read(dir string) (Records, error) {
	r := Records{Bad: map[string]int{}}
	var bad int
	var err error
	if r.Attempts, bad, err = runlog.Read[runlog.Attempt](filepath.Join(dir, runfolder.AttemptsFile)); err != nil {
		return r, err
	}
	r.Bad[runfolder.AttemptsFile] = bad
	if r.Calls, bad, err = runlog.Read[runlog.Call](filepath.Join(dir, runfolder.CallsFile)); err != nil {
		return r, err
	}
	r.Bad[runfolder.CallsFile] = bad
	rows, badRows, err := results.ReadFile(filepath.Join(dir, runfolder.RowsFile))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return r, err
	}
	r.Rows = rows
	r.Bad[runfolder.RowsFile] = len(badRows)
	for name, n := range r.Bad {
		if n == 0 {
			delete(r.Bad, name)
		}
	}
	return r, nil
}

// Arm is one method under one model: one row per issue.
type Arm struct {
	Method string `json:"method"`
	Model  string `json:"model"`
	// Sample is the patch sample of a method of samples (0 otherwise): each sample is an arm of its own.
	Sample int `json:"sample,omitempty"`
}

// Options say what the sweep is made of. Without them Compute takes the instances and arms the records name.
type Options struct {
	// Instances are the dataset's instance ids (their count is the sweep's size).
	Instances []string
	// Arms are the sweep's (method, model) pairs in spec order.
	Arms []Arm
	// Now is the time elapsed and idle times are measured to.
	Now time.Time
	// IdleGap overrides DefaultIdleGap.
	IdleGap time.Duration
	// Stopped says the caller knows that nothing runs the sweep now (its starter is gone): the time since the last
	// record is then not working time.
	Stopped bool
}

// Counts are issues by state.
type Counts struct {
	Done    int `json:"done"`
	Failed  int `json:"failed"`
	Running int `json:"running"`
	Pending int `json:"pending"`
}

// Method is the state of one arm: done and failed count its rows (failed: the row has an error), running the issues
// that have attempts but no row for it yet, pending the issues not started.
type Method struct {
	Arm
	Counts
}

// Spend is what the model calls cost: dollars and tokens of paid calls only.
type Spend struct {
	USD              float64 `json:"usd"`
	PaidCalls        int     `json:"paid_calls"`
	CacheHits        int     `json:"cache_hits"`
	FailedCalls      int     `json:"failed_calls"`
	PromptTokens     int     `json:"prompt_tokens"`
	CompletionTokens int     `json:"completion_tokens"`
	// TokensSaturated is set when a token total left the range of an int (the endpoint reported absurd usage): the
	// total then stays at the bound it passed instead of wrapping around to the other sign.
	TokensSaturated bool `json:"tokens_saturated,omitempty"`
}

// Add counts one call. A call that failed (a 429, a 5xx, a broken connection) counts as failed, not paid: it got
// no answer to pay for.
func (s *Spend) Add(c runlog.Call) {
	if c.Error != "" {
		s.FailedCalls++
	}
	if c.Cached {
		s.CacheHits++
		return
	}
	if c.Error == "" {
		s.PaidCalls++
	}
	s.USD += c.CostUSD
	s.addTokens(c.PromptTokens, c.CompletionTokens)
}

// Merge adds another Spend's counts to s.
func (s *Spend) Merge(o Spend) {
	s.USD += o.USD
	s.PaidCalls += o.PaidCalls
	s.CacheHits += o.CacheHits
	s.FailedCalls += o.FailedCalls
	s.addTokens(o.PromptTokens, o.CompletionTokens)
	s.TokensSaturated = s.TokensSaturated || o.TokensSaturated
}

func (s *Spend) addTokens(prompt, completion int) {
	var satP, satC bool
	s.PromptTokens, satP = saturatingAdd(s.PromptTokens, prompt)
	s.CompletionTokens, satC = saturatingAdd(s.CompletionTokens, completion)
	s.TokensSaturated = s.TokensSaturated || satP || satC
}

// saturatingAdd is a+b, or the bound of int it passed (and true) when the sum does not fit.
func saturatingAdd(a, b int) (int, bool) {
	switch {
	case b > 0 && a > math.MaxInt-b:
		return math.MaxInt, true
	case b < 0 && a < math.MinInt-b:
		return math.MinInt, true
	}
	return a + b, false
}

// Status is where a sweep stands.
type Status struct {
	Instances int `json:"instances"`
	// Issues: done when every arm has its row and none has an error, failed when every arm has its row and some
	// have errors, running when some record names the issue but rows are missing, pending otherwise.
	Issues  Counts   `json:"issues"`
	Methods []Method `json:"methods"`
	Rows    int      `json:"rows"`
	// OtherRows are rows of arms or instances outside the sweep (kept, not counted above).
	OtherRows int   `json:"other_rows,omitempty"`
	Spend     Spend `json:"spend"`
	// ProjectedUSD is spend so far plus the mean spend of a finished issue times the issues not finished; nil
	// while no issue has finished.
	ProjectedUSD *float64   `json:"projected_usd"`
	PerIssueUSD  *float64   `json:"per_issue_usd"`
	FirstAttempt *time.Time `json:"first_attempt,omitempty"`
	LastAttempt  *time.Time `json:"last_attempt,omitempty"`
	// ElapsedS is the time from the first attempt to now; ActiveS leaves out stretches longer than the idle gap
	// without any attempt record; SinceLastS is the time since the last attempt record (a dead sweep shows here).
	ElapsedS   float64 `json:"elapsed_s"`
	ActiveS    float64 `json:"active_s"`
	SinceLastS float64 `json:"since_last_s"`
	// ETAS is active time per finished issue times the issues not finished; nil while none has finished.
	ETAS *float64 `json:"eta_s"`
	// Bad counts undecodable lines per file.
	Bad map[string]int `json:"bad_lines,omitempty"`
}

// Finished reports whether every issue has all its rows.
func (s Status) Finished() bool {
	return s.Instances > 0 && s.Issues.Done+s.Issues.Failed == s.Instances
}

// Compute works out a sweep's state from its records.
func Compute(r Records, o Options) Status {
	if o.IdleGap <= 0 {
		o.IdleGap = DefaultIdleGap
	}
	instances, arms := o.Instances, o.Arms
	if instances == nil {
		instances = namedInstances(r)
	}
	if arms == nil {
		arms = namedArms(r.Rows)
	}
	inSweep := map[string]bool{}
	for _, id := range instances {
		inSweep[id] = true
	}
	armIndex := map[Arm]int{}
	for i, a := range arms {
		armIndex[a] = i
	}

	st := Status{Instances: len(instances), Methods: make([]Method, len(arms)), Bad: r.Bad}
	for i, a := range arms {
		st.Methods[i].Arm = a
	}
	// rowErr[instance][arm] is whether the arm's row on the instance has an error; a missing key is no row. A
	// later row of the same arm and instance replaces an earlier one.
	rowErr := map[string]map[int]bool{}
	for _, row := range r.Rows {
		k := row.Key()
		i, ok := armIndex[Arm{Method: k.Method, Model: k.Model, Sample: k.Sample}]
		if !ok || !inSweep[k.Instance] {
			st.OtherRows++
			continue
		}
		if rowErr[k.Instance] == nil {
			rowErr[k.Instance] = map[int]bool{}
		}
		rowErr[k.Instance][i] = row[results.FieldError] != nil
	}
	started := map[string]bool{}
	for _, a := range r.Attempts {
		started[a.Instance] = true
	}
	finished := st.tally(instances, len(arms), rowErr, started)
	st.project(r, o, len(instances), finished)
	return st
}

// tally counts each arm's and each issue's rows as done, failed, running or pending, and returns the issues every
// arm has a row on.
func (st *Status) tally(instances []string, arms int, rowErr map[string]map[int]bool,
	started map[string]bool) map[string]bool {
	finished := map[string]bool{}
	for _, id := range instances {
		rows := rowErr[id]
		anyErr := false
		for i := range arms {
			failed, has := rows[i]
			switch {
			case has && failed:
				st.Methods[i].Failed++
				anyErr = true
			case has:
				st.Methods[i].Done++
			case started[id]:
				st.Methods[i].Running++
			default:
				st.Methods[i].Pending++
			}
		}
		st.Rows += len(rows)
		switch {
		case arms > 0 && len(rows) == arms:
			finished[id] = true
			if anyErr {
				st.Issues.Failed++
			} else {
				st.Issues.Done++
			}
		case started[id] || len(rows) > 0:
			st.Issues.Running++
		default:
			st.Issues.Pending++
		}
	}
	return finished
}

// project adds the spend, the cost per finished issue and its projection over the instances, the timeline and the
// time left at the pace so far.
func (st *Status) project(r Records, o Options, instances int, finished map[string]bool) {
	finishedUSD := 0.0
	for _, c := range r.Calls {
		st.Spend.Add(c)
		if !c.Cached && finished[c.Instance] {
			finishedUSD += c.CostUSD
		}
	}
	done := len(finished)
	unfinished := instances - done
	if done > 0 {
		per := finishedUSD / float64(done)
		proj := st.Spend.USD + per*float64(unfinished)
		st.PerIssueUSD, st.ProjectedUSD = &per, &proj
	}

	first, last, active := timeline(r.Attempts, o.IdleGap)
	if !first.IsZero() {
		st.FirstAttempt, st.LastAttempt = &first, &last
		st.ElapsedS = o.Now.Sub(first).Seconds()
		st.SinceLastS = o.Now.Sub(last).Seconds()
		// The time since the last record counts as work while it is shorter than the idle gap.
		if tail := o.Now.Sub(last); tail > 0 && tail <= o.IdleGap && unfinished > 0 && !o.Stopped {
			active += tail
		}
		st.ActiveS = active.Seconds()
	}
	if done > 0 {
		eta := st.ActiveS / float64(done) * float64(unfinished)
		st.ETAS = &eta
	}
}

// timeline returns the first and last attempt record times and the time between them without idle stretches.
func timeline(attempts []runlog.Attempt, idle time.Duration) (first, last time.Time, active time.Duration) {
	times := make([]time.Time, 0, len(attempts))
	for _, a := range attempts {
		if !a.Time.IsZero() {
			times = append(times, a.Time)
		}
	}
	if len(times) == 0 {
		return first, last, 0
	}
	slices.SortFunc(times, time.Time.Compare)
	first, last = times[0], times[len(times)-1]
	for i := 1; i < len(times); i++ {
		if gap := times[i].Sub(times[i-1]); gap <= idle {
			active += gap
		}
	}
	return first, last, active
}

// namedInstances lists the instances the records name, in order of first appearance.
func namedInstances(r Records) []string {
	seen := map[string]bool{}
	var out []string
	add := func(id string) {
		if id != "" && !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	for _, a := range r.Attempts {
		add(a.Instance)
	}
	for _, row := range r.Rows {
		add(row.String(results.FieldInstance))
	}
	return out
}

// namedArms lists the arms the rows name, in order of first appearance.
func namedArms(rows []results.Row) []Arm {
	seen := map[Arm]bool{}
	var out []Arm
	for _, row := range rows {
		k := row.Key()
		a := Arm{Method: k.Method, Model: k.Model, Sample: k.Sample}
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	return out
}

// FormatDuration prints a duration for people: 45s, 12m05s, 3h07m, 2d04h.
func FormatDuration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	s := int64(d.Round(time.Second) / time.Second)
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	case s < 86400:
		return fmt.Sprintf("%dh%02dm", s/3600, s%3600/60)
	default:
		return fmt.Sprintf("%dd%02dh", s/86400, s%86400/3600)
	}
}

// Seconds turns a number of seconds into a duration.
func Seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
