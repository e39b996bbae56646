package cli

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ctxlab/results"
	"ctxlab/runfolder"
	"ctxlab/runlog"
	"ctxlab/store/cas"
)

// TestStatusAuditOfKilledPaidRun reads a run folder written by hand as a killed sweep that paid for model calls
// leaves it (usage on attempts, a calls ledger, a torn last line, no spec recorded): status and audit show its
// money and its unfinished attempt.
func TestStatusAuditOfKilledPaidRun(t *testing.T) {
	runs := t.TempDir()
	dir := filepath.Join(runs, "paid")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now().Add(-time.Minute).UTC()
	var b strings.Builder
	add := func(v any) {
		line, _ := json.Marshal(v)
		b.Write(append(line, '\n'))
	}
	in := cas.RefOf([]byte("input"))
	add(runlog.Attempt{Time: t0, Event: runlog.EventStart, Instance: "i1", Node: "patch-1", Activity: "patch",
		Step: "m.patch", Attempt: 1})
	add(runlog.Attempt{Time: t0.Add(time.Second), Event: runlog.EventFail, Instance: "i1", Node: "patch-1",
		Activity: "patch", Step: "m.patch", Attempt: 1, DurationMS: 1000, Error: "429 too many requests",
		ErrorType: "rate_limit", Usage: runlog.Usage{ModelCalls: 1, PaidCalls: 1, PromptTokens: 900, CostUSD: 0.01},
		Inputs: map[string]cas.Ref{"context": in}})
	add(runlog.Attempt{Time: t0.Add(2 * time.Second), Event: runlog.EventStart, Instance: "i1", Node: "patch-1",
		Activity: "patch", Step: "m.patch", Attempt: 2})
	if err := os.WriteFile(filepath.Join(dir, runfolder.AttemptsFile), []byte(b.String()+`{"time":`), 0o644); err != nil {
		t.Fatal(err)
	}
	b.Reset()
	add(runlog.Call{Time: t0, Instance: "i1", Node: "patch-1", Provider: "openai", Model: "gpt", PromptTokens: 900,
		CostUSD: 0.01, Error: "rate_limit"})
	add(runlog.Call{Time: t0, Instance: "i1", Node: "patch-1", Provider: "openai", Model: "gpt", Cached: true})
	add(runlog.Call{Time: t0, Instance: "i1", Node: "patch-1", Provider: "openai", Model: "gpt", PromptTokens: 1000,
		CompletionTokens: 200, CostUSD: 0.02})
	if err := os.WriteFile(filepath.Join(dir, runfolder.CallsFile), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	b.Reset()
	add(results.Row{results.FieldInstance: "i0", results.FieldMethod: "m", results.FieldModel: "gpt"})
	if err := os.WriteFile(filepath.Join(dir, "results.jsonl"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}

	out, _ := mainOut(t, "status", "paid", "--runs", runs)
	for _, want := range []string{
		"2 issues x 1 methods", "no spec recorded", "1 done, 0 failed, 1 running, 0 pending",
		"$0.0300 (1 paid calls, 1 cache hits, 1 failed; 1900 prompt + 200 completion tokens paid)",
		"projected: $0.0300 (spent + $0.0000 per finished issue x 1 unfinished)",
		"1 unreadable line(s) in " + filepath.Join(dir, runfolder.AttemptsFile),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	out, _ = mainOut(t, "audit", "paid", "--runs", runs)
	for _, want := range []string{
		"issue i1", "patch  node patch-1  steps m.patch", "#1 fail", "calls 1 (paid 1, cached 0) 900+0 tokens $0.0100",
		"error [rate_limit]: 429 too many requests", "input  " + string(in) + " context", "#2 unfinished",
		"ledger: 1 paid calls $0.0300 (1900+200 tokens), 1 cache hits, 1 failed",
		"attempts 0 done, 1 failed, 0 memo, 1 unfinished; 1 paid calls $0.0300, 1 cache hits",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("audit lacks %q:\n%s", want, out)
		}
	}
}

// A finished sweep's elapsed time ends at its last attempt: looking at it later does not make it longer.
func TestStatusElapsedEndsAtLastAttemptOfFinishedSweep(t *testing.T) {
	runs := t.TempDir()
	dir := filepath.Join(runs, "done")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	first := time.Now().Add(-17 * time.Minute).UTC()
	last := first.Add(12*time.Minute + 17*time.Second)
	var b strings.Builder
	add := func(v any) {
		line, _ := json.Marshal(v)
		b.Write(append(line, '\n'))
	}
	add(runlog.Attempt{Time: first, Event: runlog.EventStart, Instance: "i1", Node: "n-1", Activity: "patch",
		Step: "m.patch", Attempt: 1})
	add(runlog.Attempt{Time: last, Event: runlog.EventDone, Instance: "i1", Node: "n-1", Activity: "patch",
		Step: "m.patch", Attempt: 1})
	if err := os.WriteFile(filepath.Join(dir, runfolder.AttemptsFile), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	b.Reset()
	add(results.Row{results.FieldInstance: "i1", results.FieldMethod: "m", results.FieldModel: "offline"})
	if err := os.WriteFile(filepath.Join(dir, "results.jsonl"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}

	out, _ := mainOut(t, "status", "done", "--runs", runs)
	if !strings.Contains(out, "state:     finished") || !strings.Contains(out, "elapsed:   12m17s from the first attempt to the last") {
		t.Errorf("a finished 12m17s sweep:\n%s", out)
	}
	out, _ = mainOut(t, "status", "done", "--runs", runs, "--json")
	var st struct {
		ElapsedS float64 `json:"elapsed_s"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	if want := last.Sub(first).Seconds(); st.ElapsedS != want {
		t.Errorf("elapsed_s %v, want %v (first to last attempt)", st.ElapsedS, want)
	}
}

// TestStatusTokenTotalsDoNotWrap: an endpoint that reports absurd usage must not turn the token totals of status
// and audit negative (int64 wrapping around): a total that passes the bound stays at it, and both say so.
func TestStatusTokenTotalsDoNotWrap(t *testing.T) {
	runs := t.TempDir()
	dir := filepath.Join(runs, "absurd")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	t0 := time.Now().Add(-time.Minute).UTC()
	for i := range 3 {
		line, _ := json.Marshal(runlog.Call{Time: t0, Instance: "i1", Node: fmt.Sprintf("patch-%d", i),
			Provider: "openai", Model: "gpt", PromptTokens: math.MaxInt64/2 + 1, CompletionTokens: 7, CostUSD: 0.01})
		b.Write(append(line, '\n'))
	}
	if err := os.WriteFile(filepath.Join(dir, runfolder.CallsFile), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	b.Reset()
	for i := range 3 {
		line, _ := json.Marshal(runlog.Attempt{Time: t0, Event: runlog.EventDone, Instance: "i1",
			Node: fmt.Sprintf("patch-%d", i), Activity: "patch", Step: "m.patch", Attempt: 1})
		b.Write(append(line, '\n'))
	}
	if err := os.WriteFile(filepath.Join(dir, runfolder.AttemptsFile), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _ := mainOut(t, "status", "absurd", "--runs", runs)
	if want := fmt.Sprintf("%d prompt + 21 completion tokens paid", int64(math.MaxInt64)); !strings.Contains(out, want) ||
		!strings.Contains(out, "do not fit an int64") {
		t.Errorf("status lacks %q and the note that the total saturated:\n%s", want, out)
	}
	js, _ := mainOut(t, "status", "absurd", "--runs", runs, "--json")
	var st struct {
		Spend struct {
			PromptTokens    int64 `json:"prompt_tokens"`
			TokensSaturated bool  `json:"tokens_saturated"`
		} `json:"spend"`
	}
	if err := json.Unmarshal([]byte(js), &st); err != nil || st.Spend.PromptTokens != math.MaxInt64 ||
		!st.Spend.TokensSaturated {
		t.Errorf("status --json spend %+v (%v), want prompt_tokens %d and tokens_saturated\n%s", st.Spend, err,
			int64(math.MaxInt64), js)
	}
	js, _ = mainOut(t, "audit", "absurd", "--runs", runs, "--json")
	var au struct {
		Totals struct {
			Calls struct {
				PromptTokens int64 `json:"prompt_tokens"`
			} `json:"calls"`
		} `json:"totals"`
	}
	if err := json.Unmarshal([]byte(js), &au); err != nil || au.Totals.Calls.PromptTokens != math.MaxInt64 {
		t.Errorf("audit --json totals %+v (%v), want prompt_tokens %d", au.Totals, err, int64(math.MaxInt64))
	}
}
