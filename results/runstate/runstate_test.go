package runstate

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"ctxlab/results"
	"ctxlab/runfolder"
	"ctxlab/runlog"
	"ctxlab/store/cas"
)

var t0 = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

// writeLines writes each value as a JSON line, then tail verbatim (a torn line when it lacks its newline).
func writeLines(t *testing.T, path string, tail string, vs ...any) {
	t.Helper()
	var b []byte
	for _, v := range vs {
		line, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		b = append(append(b, line...), '\n')
	}
	if err := os.WriteFile(path, append(b, tail...), 0o644); err != nil {
		t.Fatal(err)
	}
}

func row(inst, method string, err any) results.Row {
	return results.Row{results.FieldInstance: inst, results.FieldMethod: method, results.FieldModel: "m",
		results.FieldError: err}
}

// fixture is a sweep of 4 instances x 2 methods, killed while issue c ran: a and b have all rows (b's second
// method failed), c has starts with no ends, d never started. Both files end in a torn line.
func fixture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	att := func(s int, ev, inst, node string, attempt int32) runlog.Attempt {
		return runlog.Attempt{Time: at(s), Event: ev, Instance: inst, Node: node, Step: "x." + node,
			Activity: "act_" + node, Attempt: attempt, Workflow: "issue/r/" + inst}
	}
	done := att(10, runlog.EventDone, "a", "n1", 1)
	done.DurationMS, done.PaidCalls, done.CostUSD, done.Output = 10000, 1, 0.5, "sha256:out"
	done.Params, done.Inputs = "sha256:params", map[string]cas.Ref{"repo": "sha256:in"}
	fail := att(25, runlog.EventFail, "b", "n2", 1)
	fail.DurationMS, fail.Error, fail.ErrorType = 5000, "boom", "rate_limit"
	writeLines(t, filepath.Join(dir, runfolder.AttemptsFile), `{"time":"2026-11-29T10:02`,
		att(0, runlog.EventStart, "a", "n1", 1), done,
		att(11, runlog.EventStart, "a", "n2", 1), att(20, runlog.EventDone, "a", "n2", 1),
		att(20, runlog.EventMemo, "b", "n1", 1),
		att(20, runlog.EventStart, "b", "n2", 1), fail,
		att(26, runlog.EventStart, "b", "n2", 2), att(30, runlog.EventDone, "b", "n2", 2),
		// c: killed while running; then nothing for an hour, then a restart worked 20s more.
		att(40, runlog.EventStart, "c", "n1", 1),
		att(3640, runlog.EventStart, "c", "n1", 2), att(3660, runlog.EventStart, "c", "n2", 1),
	)
	call := func(inst, node string, cached bool, usd float64) runlog.Call {
		return runlog.Call{Time: at(5), Instance: inst, Node: node, Provider: "openai", Model: "m", Cached: cached,
			PromptTokens: 100, CompletionTokens: 10, CostUSD: usd}
	}
	writeLines(t, filepath.Join(dir, runfolder.CallsFile), `{"instance":"c","cost_usd":`,
		call("a", "n1", false, 0.5), call("a", "n2", false, 0.25), call("b", "n1", true, 0.5),
		call("b", "n2", false, 0.75), call("c", "n1", false, 2))
	writeLines(t, filepath.Join(dir, runfolder.RowsFile), "",
		row("a", "one", nil), row("a", "two", nil), row("b", "one", nil), row("b", "two", "step n2: boom"),
		row("zz", "one", nil))
	return dir
}

func TestComputeKilledSweep(t *testing.T) {
	r, err := Read(fixture(t))
	if err != nil {
		t.Fatal(err)
	}
	if r.Bad[runfolder.AttemptsFile] != 1 || r.Bad[runfolder.CallsFile] != 1 || len(r.Attempts) != 12 {
		t.Fatalf("torn lines: bad %v, %d attempts", r.Bad, len(r.Attempts))
	}
	now := at(3670)
	st := Compute(r, Options{Instances: []string{"a", "b", "c", "d"},
		Arms: []Arm{{Method: "one", Model: "m"}, {Method: "two", Model: "m"}}, Now: now})
	want := []Method{{Arm{Method: "one", Model: "m"}, Counts{Done: 2, Running: 1, Pending: 1}},
		{Arm{Method: "two", Model: "m"}, Counts{Done: 1, Failed: 1, Running: 1, Pending: 1}}}
	for i, m := range st.Methods {
		if m != want[i] {
			t.Errorf("method %d: %+v, want %+v", i, m, want[i])
		}
	}
	if st.Issues != (Counts{Done: 1, Failed: 1, Running: 1, Pending: 1}) || st.Rows != 4 || st.OtherRows != 1 {
		t.Errorf("issues %+v rows %d other %d", st.Issues, st.Rows, st.OtherRows)
	}
	if st.Spend.PaidCalls != 4 || st.Spend.CacheHits != 1 || math.Abs(st.Spend.USD-3.5) > 1e-9 ||
		st.Spend.PromptTokens != 400 {
		t.Errorf("spend %+v", st.Spend)
	}
	// Finished issues a and b paid 0.5+0.25+0.75: 0.75 per issue; 2 unfinished: 3.5 + 1.5.
	if st.PerIssueUSD == nil || math.Abs(*st.PerIssueUSD-0.75) > 1e-9 || math.Abs(*st.ProjectedUSD-5) > 1e-9 {
		t.Errorf("projection %v %v", st.PerIssueUSD, st.ProjectedUSD)
	}
	// Active time: 0..40 and 3640..3660 (the hour without records is left out), plus 10s since the last record.
	if st.ActiveS != 70 || st.ElapsedS != 3670 || st.SinceLastS != 10 {
		t.Errorf("active %v elapsed %v since last %v", st.ActiveS, st.ElapsedS, st.SinceLastS)
	}
	if st.ETAS == nil || *st.ETAS != 70 { // 35s per finished issue x 2
		t.Errorf("eta %v", st.ETAS)
	}
	if st.Finished() {
		t.Error("a sweep with pending issues reported finished")
	}
	// Known to be stopped: the 10s since the last record are not work.
	if st := Compute(r, Options{Instances: []string{"a", "b", "c", "d"}, Now: now, Stopped: true}); st.ActiveS != 60 {
		t.Errorf("stopped sweep: active %v, want 60", st.ActiveS)
	}

	// Without the sweep's shape the records name 4 instances (a, b, c, and zz from a row) and 2 arms.
	st = Compute(r, Options{Now: now})
	if st.Instances != 4 || len(st.Methods) != 2 || st.Issues.Running != 2 || st.OtherRows != 0 {
		t.Errorf("from records alone: %+v", st)
	}
}

func TestComputeEmpty(t *testing.T) {
	r, err := Read(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	st := Compute(r, Options{Instances: []string{"a"}, Arms: []Arm{{Method: "one", Model: "m"}}, Now: t0})
	if st.Issues.Pending != 1 || st.ETAS != nil || st.ProjectedUSD != nil || st.FirstAttempt != nil {
		t.Errorf("empty run: %+v", st)
	}
}

func TestFinishedSweep(t *testing.T) {
	dir := t.TempDir()
	writeLines(t, filepath.Join(dir, runfolder.AttemptsFile), "",
		runlog.Attempt{Time: at(0), Event: runlog.EventStart, Instance: "a", Node: "n"},
		runlog.Attempt{Time: at(4), Event: runlog.EventDone, Instance: "a", Node: "n"})
	writeLines(t, filepath.Join(dir, runfolder.RowsFile), "", row("a", "one", nil))
	r, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	// Long after the end: the idle time after a finished sweep does not count as work.
	st := Compute(r, Options{Instances: []string{"a"}, Arms: []Arm{{Method: "one", Model: "m"}}, Now: at(100)})
	if !st.Finished() || st.ActiveS != 4 || *st.ETAS != 0 || *st.ProjectedUSD != 0 {
		t.Errorf("finished: %+v", st)
	}
}

func TestAudit(t *testing.T) {
	r, err := Read(fixture(t))
	if err != nil {
		t.Fatal(err)
	}
	nodes := []Node{{Key: "n1", Activity: "act_n1"}, {Key: "n2", Activity: "act_n2"}, {Key: "n3", Activity: "act_n3"}}
	acts := Audit(r, AuditOptions{Instances: []string{"a", "b", "c", "d"}, Nodes: nodes})
	// a, b, c have records: 3 plan nodes each; d has none.
	if len(acts) != 9 {
		t.Fatalf("%d activities, want 9", len(acts))
	}
	a1 := acts[0]
	if a1.Instance != "a" || a1.Key != "n1" || len(a1.Tries) != 1 {
		t.Fatalf("first activity %+v", a1)
	}
	if tr := a1.Tries[0]; tr.Event != runlog.EventDone || tr.Start != at(0) || tr.DurationMS != 10000 ||
		tr.Output != "sha256:out" || tr.Params != "sha256:params" || tr.Inputs["repo"] != "sha256:in" ||
		tr.PaidCalls != 1 || tr.CostUSD != 0.5 {
		t.Errorf("a/n1 try %+v", tr)
	}
	if a1.Calls.PaidCalls != 1 || a1.Calls.USD != 0.5 || len(a1.CallList) != 1 || a1.CallList[0].CostUSD != 0.5 {
		t.Errorf("a/n1 calls %+v", a1.Calls)
	}
	b2 := acts[4]
	if b2.Instance != "b" || b2.Key != "n2" || len(b2.Tries) != 2 || b2.Tries[0].Event != runlog.EventFail ||
		b2.Tries[0].Error != "boom" || b2.Tries[0].ErrorType != "rate_limit" || b2.Tries[1].Attempt != 2 ||
		b2.Tries[1].Event != runlog.EventDone {
		t.Errorf("b/n2 %+v", b2)
	}
	if b1 := acts[3]; len(b1.Tries) != 1 || b1.Tries[0].Event != runlog.EventMemo || b1.Calls.CacheHits != 1 {
		t.Errorf("b/n1 %+v", b1)
	}
	// c/n1: the killed attempt and the one after the restart, both without end.
	if c1 := acts[6]; len(c1.Tries) != 2 || c1.Tries[0].Event != TryUnfinished || c1.Tries[1].Attempt != 2 ||
		c1.Calls.USD != 2 {
		t.Errorf("c/n1 %+v", c1)
	}
	if n3 := acts[2]; n3.Key != "n3" || len(n3.Tries) != 0 {
		t.Errorf("a/n3 (never ran) %+v", n3)
	}

	acts = Audit(r, AuditOptions{Nodes: nodes, Instance: "b", Keep: map[string]bool{"n2": true}})
	if len(acts) != 1 || acts[0].Instance != "b" || acts[0].Key != "n2" {
		t.Errorf("filtered: %+v", acts)
	}
	// Without a plan, the nodes the records name.
	if acts = Audit(r, AuditOptions{}); len(acts) != 6 || acts[0].Activity != "act_n1" {
		t.Errorf("no plan: %d activities %+v", len(acts), acts)
	}
}

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{45 * time.Second: "45s", 725 * time.Second: "12m05s",
		3*time.Hour + 7*time.Minute: "3h07m", 52 * time.Hour: "2d04h"} {
		if got := FormatDuration(d); got != want {
			t.Errorf("%v: %q, want %q", d, got, want)
		}
	}
}
