package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/converter"

	"ctxlab/results"
	"ctxlab/results/runstate"
	"ctxlab/runfolder"
	"ctxlab/runlog"
	"ctxlab/starter/cli"
	"ctxlab/store/cas"
	"ctxlab/testkit/fakeopenai"
)

// mainOut runs a starter command in this process (status and audit need no server).
func mainOut(t *testing.T, args ...string) (string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	if code := cli.Main(args, &out, &errb); code != 0 {
		t.Fatalf("starter %v: exit %d\n%s", args, code, errb.String())
	}
	return out.String(), errb.String()
}

// TestObserveSweep runs one small sweep in --json mode (half its rows fail, so it exits exitRowErrors), then checks that status, audit and the run's Temporal
// history tell the same story as results.jsonl and attempts.jsonl.
func TestObserveSweep(t *testing.T) {
	t.Parallel()
	runs := t.TempDir()
	dir := filepath.Join(runs, "obs")
	spec := demoVariant(t, brokenVariant)
	stdout, stderr, code := runStarter(t, 10*time.Minute, "run", spec, "--runs", runs, "--json")
	if code != exitRowErrors {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}

	// --json: stdout is one JSON object, every stderr line is JSON, and the progress events end on the full count.
	dec := json.NewDecoder(strings.NewReader(stdout))
	var sum runSummary
	if err := dec.Decode(&sum); err != nil {
		t.Fatalf("stdout is not a JSON object: %v\n%s", err, stdout)
	}
	if dec.More() || strings.TrimSpace(stdout[dec.InputOffset():]) != "" {
		t.Errorf("stdout has more than one JSON object:\n%s", stdout)
	}
	kinds := 0
	for _, n := range sum.ErrorKinds {
		kinds += n
	}
	if sum.OK || sum.Issues != 2 || sum.Rows != 4 || sum.RowErrors != 2 || kinds != 2 ||
		!strings.Contains(sum.Summary, "broken") {
		t.Errorf("summary %+v", sum)
	}
	var last progressEvent
	progressLines := 0
	for _, line := range strings.Split(strings.TrimSpace(stderr), "\n") {
		if !json.Valid([]byte(line)) {
			t.Errorf("stderr line is not JSON: %s", line)
			continue
		}
		var ev progressEvent
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Event == "progress" {
			progressLines++
			last = ev
		}
	}
	if progressLines == 0 || last.IssuesDone != 2 || last.IssuesTotal != 2 || last.Rows != 4 || last.RowErrors != 2 {
		t.Errorf("%d progress events, last %+v", progressLines, last)
	}

	// status: per method, done + failed are its rows and failed its rows with errors; nothing runs or waits.
	rows, _, err := results.ReadFile(filepath.Join(dir, "results.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	wantRows, wantErrs := map[string]int{}, map[string]int{}
	for _, r := range rows {
		wantRows[r.String(results.FieldMethod)]++
		if r[results.FieldError] != nil {
			wantErrs[r.String(results.FieldMethod)]++
		}
	}
	out, _ := mainOut(t, "status", "obs", "--runs", runs, "--json")
	var st statusReport
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	if st.Instances != 2 || len(st.Methods) != 2 || st.Methods[0].Method != "broken" {
		t.Fatalf("status: %+v", st.Status)
	}
	for _, m := range st.Methods {
		if m.Done+m.Failed != wantRows[m.Method] || m.Failed != wantErrs[m.Method] || m.Running != 0 || m.Pending != 0 {
			t.Errorf("status of %s: %+v; results.jsonl has %d rows, %d with errors", m.Method, m.Counts,
				wantRows[m.Method], wantErrs[m.Method])
		}
	}
	if wantErrs["broken"] != 2 || wantErrs["oracle_files"] != 0 {
		t.Errorf("the variant did not fail as planned: errors per method %v", wantErrs)
	}
	if !st.Finished() || st.Issues.Running != 0 || st.FirstAttempt == nil || st.ETAS == nil || *st.ETAS != 0 {
		t.Errorf("status of a finished sweep: %+v", st.Status)
	}
	if out, _ = mainOut(t, "status", "obs", "--runs", runs); !strings.Contains(out, "state:     finished") {
		t.Errorf("status:\n%s", out)
	}

	// audit: every plan node of every instance, done or memo unless the broken patch blocks it.
	out, _ = mainOut(t, "audit", "obs", "--runs", runs, "--json")
	var rep auditReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("audit --json: %v", err)
	}
	plan := recordedPlan(t, dir)
	if len(rep.Activities) != 2*len(plan.Nodes) {
		t.Fatalf("audit lists %d activities; want 2 instances x plan nodes", len(rep.Activities))
	}
	var checkoutOut cas.Ref
	for _, a := range rep.Activities {
		events := map[string]int{}
		for _, tr := range a.Tries {
			events[tr.Event]++
		}
		steps := strings.Join(a.Steps, ",")
		switch steps {
		case "broken.patch":
			if events[runlog.EventFail] == 0 || !strings.Contains(a.Tries[0].Error, "prompt.user is empty") {
				t.Errorf("%s %s: want the failed attempt, got %+v", a.Instance, steps, a.Tries)
			}
		case "broken.measure", "broken.grade":
			if len(a.Tries) != 0 {
				t.Errorf("%s %s ran although its patch failed: %+v", a.Instance, steps, a.Tries)
			}
		default:
			if events[runlog.EventDone]+events[runlog.EventMemo] == 0 {
				t.Errorf("%s %s: no done or memo event: %+v", a.Instance, steps, a.Tries)
			}
		}
		if a.Activity == "checkout" && checkoutOut == "" && len(a.Tries) > 0 {
			checkoutOut = a.Tries[0].Output
		}
	}
	out, _ = mainOut(t, "audit", "obs", "--runs", runs, "--method", "broken", "--json")
	var only auditReport
	if err := json.Unmarshal([]byte(out), &only); err != nil {
		t.Fatal(err)
	}
	armNodes := map[string]bool{}
	for _, s := range plan.Arms[0].Steps {
		armNodes[s.Key] = true
	}
	if len(only.Activities) != 2*len(armNodes) {
		t.Errorf("--method broken lists %d activities, want 2 x %d", len(only.Activities), len(armNodes))
	}
	for _, a := range only.Activities {
		if !armNodes[a.Key] {
			t.Errorf("--method broken lists node %s (%v)", a.Key, a.Steps)
		}
	}
	if human, _ := mainOut(t, "audit", "obs", "--runs", runs, "--issue", "acme__semver-1"); !strings.Contains(human,
		"issue acme__semver-1") || strings.Contains(human, "acme__humanize-1") || !strings.Contains(human, "error") {
		t.Errorf("audit --issue:\n%s", human)
	}

	// --show prints the stored object, from the named run or found under --runs.
	if !checkoutOut.Valid() {
		t.Fatalf("checkout output ref %q", checkoutOut)
	}
	store, err := cas.NewDir(filepath.Join(dir, "cas"))
	if err != nil {
		t.Fatal(err)
	}
	blob, err := store.Get(context.Background(), checkoutOut)
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"audit", "obs", "--runs", runs, "--show", string(checkoutOut)},
		{"audit", "--runs", runs, "--show", string(checkoutOut)}} {
		shown, _ := mainOut(t, args...)
		var a, b any
		if json.Unmarshal([]byte(shown), &a) != nil || json.Unmarshal(blob, &b) != nil ||
			fmt.Sprint(a) != fmt.Sprint(b) || !strings.Contains(shown, "\n  ") {
			t.Errorf("%v printed:\n%.300s", args, shown)
		}
	}

	// Temporal's history agrees: per issue, the node activities it completed (by type and attempt) are audit's
	// done and memo attempts, and those that failed are audit's failed attempts.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := runServer(ctx, t, dir)
	nodeActivity := map[string]bool{}
	for _, n := range plan.Nodes {
		nodeActivity[n.Activity] = true
	}
	for _, inst := range []string{"acme__humanize-1", "acme__semver-1"} {
		h := history(ctx, t, c, "issue/obs/"+inst)
		typ := map[int64]string{}
		attempt := map[int64]int32{}
		var histDone, histFail []string
		for _, e := range h.Events {
			switch e.GetEventType() {
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
				typ[e.GetEventId()] = e.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName()
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
				a := e.GetActivityTaskStartedEventAttributes()
				attempt[a.GetScheduledEventId()] = a.GetAttempt()
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
				id := e.GetActivityTaskCompletedEventAttributes().GetScheduledEventId()
				if nodeActivity[typ[id]] {
					histDone = append(histDone, fmt.Sprintf("%s#%d", typ[id], attempt[id]))
				}
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_FAILED:
				id := e.GetActivityTaskFailedEventAttributes().GetScheduledEventId()
				if nodeActivity[typ[id]] {
					histFail = append(histFail, fmt.Sprintf("%s#%d", typ[id], attempt[id]))
				}
			case enumspb.EVENT_TYPE_MARKER_RECORDED:
				// Cheap nodes run as local activities: history keeps each one's final attempt as a marker.
				m := e.GetMarkerRecordedEventAttributes()
				if m.GetMarkerName() != "LocalActivity" {
					continue
				}
				var local struct {
					ActivityType string
					Attempt      int32
				}
				if err := converter.GetDefaultDataConverter().FromPayloads(m.GetDetails()["data"], &local); err != nil {
					t.Fatalf("%s: local activity marker %d: %v", inst, e.GetEventId(), err)
				}
				if !nodeActivity[local.ActivityType] {
					continue
				}
				entry := fmt.Sprintf("%s#%d", local.ActivityType, local.Attempt)
				if m.GetFailure() != nil {
					histFail = append(histFail, entry)
				} else {
					histDone = append(histDone, entry)
				}
			}
		}
		var auditDone, auditFail []string
		for _, a := range rep.Activities {
			if a.Instance != inst {
				continue
			}
			for _, tr := range a.Tries {
				switch tr.Event {
				case runlog.EventDone, runlog.EventMemo:
					auditDone = append(auditDone, fmt.Sprintf("%s#%d", a.Activity, tr.Attempt))
				case runlog.EventFail:
					auditFail = append(auditFail, fmt.Sprintf("%s#%d", a.Activity, tr.Attempt))
				}
			}
		}
		sort.Strings(histDone)
		sort.Strings(auditDone)
		sort.Strings(histFail)
		sort.Strings(auditFail)
		t.Logf("%s: history completed %v, failed %v", inst, histDone, histFail)
		if len(histDone) == 0 || fmt.Sprint(histDone) != fmt.Sprint(auditDone) {
			t.Errorf("%s: history completed %v; audit done %v", inst, histDone, auditDone)
		}
		if len(histFail) != 1 || fmt.Sprint(histFail) != fmt.Sprint(auditFail) {
			t.Errorf("%s: history failed %v; audit failed %v", inst, histFail, auditFail)
		}
	}

	// status and audit count the same spend (the ledger).
	if !sameSpend(st.Spend, rep.Totals.Calls) {
		t.Errorf("status spend %+v, audit %+v", st.Spend, rep.Totals.Calls)
	}
}

// TestObservePaidSweep runs a small sweep with paid calls (the openai provider against a fake server): the --json
// summary, status and audit report the same spend as the calls ledger, and audit's per-attempt usage adds up to it.
func TestObservePaidSweep(t *testing.T) {
	t.Parallel()
	const key = "sk-ctxlab-observe-test-7f3a"
	hs := httptest.NewServer(fakeopenai.New(fakeopenai.WithKey(key)))
	defer hs.Close()
	setStarterEnv(t, "OPENAI_BASE_URL="+hs.URL+"/v1", "OPENAI_API_KEY="+key)
	runs := t.TempDir()
	spec := demoVariant(t, "{ name: 'paid', dataset+: { limit: 2 }, methods: [super.methods[2]], "+
		"models: [super.models[0] + { price: { input: 2.5, output: 10 } }] }")
	stdout, stderr, code := runStarter(t, 10*time.Minute, "run", spec, "--runs", runs, "--ext-str", "model=openai",
		"--json", "--no-cache")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	var sum runSummary
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatalf("stdout: %v\n%s", err, stdout)
	}
	calls, _, err := runlog.Read[runlog.Call](filepath.Join(runs, "paid", runfolder.CallsFile))
	if err != nil {
		t.Fatal(err)
	}
	var ledger runstate.Spend
	for _, c := range calls {
		ledger.Add(c)
	}
	if ledger.PaidCalls == 0 || ledger.USD <= 0 || !sameSpend(sum.Spend, ledger) {
		t.Fatalf("summary spend %+v; ledger %+v", sum.Spend, ledger)
	}

	out, _ := mainOut(t, "status", "paid", "--runs", runs, "--json")
	var st statusReport
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	if !sameSpend(st.Spend, ledger) || st.ProjectedUSD == nil || math.Abs(*st.ProjectedUSD-ledger.USD) > 1e-9 ||
		math.Abs(*st.PerIssueUSD-ledger.USD/2) > 1e-9 {
		t.Errorf("status spend %+v projected %v per issue %v; ledger %+v", st.Spend, st.ProjectedUSD, st.PerIssueUSD,
			ledger)
	}
	out, _ = mainOut(t, "audit", "paid", "--runs", runs, "--json")
	var rep auditReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	paid, usd := 0, 0.0
	for _, a := range rep.Activities {
		for _, tr := range a.Tries {
			paid += tr.PaidCalls
			usd += tr.CostUSD
		}
	}
	if !sameSpend(rep.Totals.Calls, ledger) || paid != ledger.PaidCalls || math.Abs(usd-ledger.USD) > 1e-9 {
		t.Errorf("audit: totals %+v, attempts paid %d calls $%v; ledger %+v", rep.Totals.Calls, paid, usd, ledger)
	}
	// A call's response can be opened from the audit.
	var resp cas.Ref
	for _, a := range rep.Activities {
		for _, c := range a.CallList {
			if c.Response != "" && resp == "" {
				resp = c.Response
			}
		}
	}
	if !resp.Valid() {
		t.Fatal("audit lists no call with a response ref")
	}
	if shown, _ := mainOut(t, "audit", "paid", "--runs", runs, "--show", string(resp)); strings.TrimSpace(shown) == "" {
		t.Error("--show of a response printed nothing")
	}
	if human, _ := mainOut(t, "audit", "paid", "--runs", runs); !strings.Contains(human, "response "+string(resp)) {
		t.Errorf("audit does not print the response ref %s", resp)
	}
	t.Logf("ledger %+v", ledger)
}

// sameSpend compares spends; dollars summed in another order may differ in the last bits.
func sameSpend(a, b runstate.Spend) bool {
	usd := math.Abs(a.USD-b.USD) <= 1e-9
	a.USD, b.USD = 0, 0
	return usd && a == b
}

// brokenVariant is a two-issue sweep of two methods, one of which ("broken", no_source with an empty prompt) fails
// at its patch step on every issue: rows with and without errors, and nodes that never run.
const brokenVariant = "{ name: 'obs', dataset+: { limit: 2 }, anchor:: null, methods: [super.methods[0] + " +
	"{ name: 'broken', steps: [if s.id == 'patch' then s + { params+: { prompt+: { user: '' } } } else s " +
	"for s in super.steps] }, super.methods[1]] }"
