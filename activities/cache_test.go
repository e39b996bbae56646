package activities

import (
	"errors"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"ctxlab/activities/api"
	"ctxlab/activities/api/errkind"
	"ctxlab/dataset/swebench"
	"ctxlab/runfolder"
	"ctxlab/runlog"
	"ctxlab/testkit/demorun"
	"ctxlab/testkit/fakeopenai"
)

// paidFixture is the demo instance checked out and inventoried, with the openai provider pointed at a fake server
// that counts calls (demorun's PayOpenAI); in is a localize node's inputs.
type paidFixture struct {
	*fixture
	srv *fakeopenai.Server
	in  map[string]api.NodeOutput
}

func newPaidFixture(t *testing.T) paidFixture {
	f := newFixture(t)
	srv, in := f.PayOpenAI()
	return paidFixture{fixture: f, srv: srv, in: in}
}

// TestResponseCache: a node that asks a question already answered is served from the cache with the original
// usage (rows do not depend on caching), another sample is a new call, and NoCache pays again.
func TestResponseCache(t *testing.T) {
	p := newPaidFixture(t)
	first := p.Must(p.Localize(p.in, 0, "a"))
	if got := p.srv.Calls(); got != 1 {
		t.Fatalf("first call: the server saw %d calls", got)
	}
	again := p.Must(p.Localize(p.in, 0, "b"))
	if got := p.srv.Calls(); got != 1 {
		t.Errorf("the same request under another node paid again: %d calls", got)
	}
	if !reflect.DeepEqual(first, again) {
		t.Errorf("a cached answer changed the node output:\n%v\n%v", first, again)
	}
	p.Must(p.Localize(p.in, 1, "a"))
	if got := p.srv.Calls(); got != 2 {
		t.Errorf("another sample must be a new call: %d calls", got)
	}
	// Without the key a cached answer is still served; a new question fails (the server refuses it).
	t.Setenv("OPENAI_API_KEY", "")
	p.Must(p.Localize(p.in, 0, "keyless"))
	if _, err := p.Localize(p.in, 2, "keyless"); err == nil {
		t.Error("a call the cache cannot answer went through without the key")
	}
	t.Setenv("OPENAI_API_KEY", demorun.PaidKey)
	if got := p.srv.Calls(); got != 3 {
		t.Fatalf("%d calls; want the refused one only", got)
	}
	p.a.NoCache = true
	p.Must(p.Localize(p.in, 0, "c"))
	if got := p.srv.Calls(); got != 4 {
		t.Errorf("NoCache must pay again: %d calls", got)
	}

	calls := p.Calls()
	var paid, cached int
	var spent float64
	for _, c := range calls {
		if c.Cached {
			cached++
		} else {
			paid++
			spent += c.CostUSD
		}
		if c.Key == "" || c.Request == "" || (c.Response == "") != (c.Error != "") {
			t.Errorf("call without key or references: %+v", c)
		}
	}
	if paid != 4 || cached != 2 {
		t.Errorf("ledger: %d paid (one refused), %d cached; want 4 and 2", paid, cached)
	}
	if want := 3 * first.Row["cost_usd"].(float64); spent < want*0.999 || spent > want*1.001 {
		t.Errorf("ledger spend %v, want %v", spent, want)
	}
	if calls[0].Key != calls[1].Key || calls[0].Key == calls[2].Key {
		t.Errorf("keys: same request must share a key, another sample must not: %v", calls)
	}

	attempts, _, err := runlog.Read[runlog.Attempt](filepath.Join(p.RunDir, runfolder.AttemptsFile))
	if err != nil {
		t.Fatal(err)
	}
	var dones []runlog.Attempt
	for _, a := range attempts {
		if a.Activity == "localize" && a.Event == runlog.EventDone {
			dones = append(dones, a)
		}
	}
	if len(dones) != 5 {
		t.Fatalf("%d localize done events, want 5", len(dones))
	}
	if d := dones[0]; d.PaidCalls != 1 || d.CacheHits != 0 || d.CostUSD <= 0 || d.Params == "" || d.Inputs["inventory"] == "" {
		t.Errorf("paid attempt record %+v", d)
	}
	if d := dones[1]; d.PaidCalls != 0 || d.CacheHits != 1 || d.ModelCalls != 1 || d.CostUSD != 0 {
		t.Errorf("cached attempt record %+v", d)
	}
}

// TestSpendCap: a paid call whose worst case (its prompt at the input price, max_tokens at the output price) does
// not fit under limits.spend_usd is not sent: it fails with the SpendLimit type (the Issue workflow waits on it),
// even with nothing spent; a cached answer is still served, and raising the cap lets calls through again.
func TestSpendCap(t *testing.T) {
	p := newPaidFixture(t)
	runDir := p.RunDir
	setCap := func(usd float64) {
		t.Helper()
		p.a.setSpendCap("t", usd)
	}
	wantCapped := func(err error) {
		t.Helper()
		var app *temporal.ApplicationError
		if !errors.As(err, &app) || app.Type() != api.ErrSpendLimit || !app.NonRetryable() {
			t.Fatalf("want a non-retryable %s error, got %v", api.ErrSpendLimit, err)
		}
	}
	setCap(1e-9)
	_, err := p.Localize(p.in, 0, "a") // nothing spent, but the call may cost more than the whole cap
	wantCapped(err)
	if got := p.srv.Calls(); got != 0 {
		t.Errorf("a call whose worst case passes the cap was sent: %d calls", got)
	}
	setCap(10)
	p.Must(p.Localize(p.in, 0, "a"))
	spent := p.a.settledBudget(t, "t", -1).SpentUSD
	if spent <= 0 {
		t.Fatalf("spent $%v after a paid call", spent)
	}
	// Room for less than one more call's worst case. A lowered cap stops calls once the allowance the worker's
	// purse holds is given back (idle for a second) or used up.
	setCap(spent + 1e-4)
	p.a.settledBudget(t, "t", spent)
	_, err = p.Localize(p.in, 1, "a")
	wantCapped(err)
	if got := p.srv.Calls(); got != 1 {
		t.Errorf("a call was made over the cap: %d calls", got)
	}
	p.Must(p.Localize(p.in, 0, "b")) // cached: free, so the cap does not stop it
	setCap(10)
	p.Must(p.Localize(p.in, 1, "a"))
	if got := p.srv.Calls(); got != 2 {
		t.Errorf("after raising the cap: %d calls, want 2", got)
	}
	attempts, _, _ := runlog.Read[runlog.Attempt](filepath.Join(runDir, runfolder.AttemptsFile))
	found := false
	for _, a := range attempts {
		found = found || (a.Event == runlog.EventFail && a.ErrorType == api.ErrSpendLimit)
	}
	if !found {
		t.Errorf("attempts.jsonl does not record the SpendLimit failure")
	}
}

// TestLongRetryAfterIsAProviderWait: a 429 asking to wait an hour is not the model's failure and is not slept on
// inside the activity: the call fails at once with api.ErrProviderWait carrying the hour and the kind (the Issue
// workflow waits on a durable timer), the ledger records a failed call that cost nothing, and the same question
// asked after the wait is paid once.
func TestLongRetryAfterIsAProviderWait(t *testing.T) {
	p := newPaidFixture(t)
	srv := fakeopenai.New(fakeopenai.WithKey(demorun.PaidKey), fakeopenai.WithRetryAfter(time.Hour),
		fakeopenai.WithFailures(1, fakeopenai.RateLimit))
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	t.Setenv("OPENAI_BASE_URL", hs.URL+"/v1")
	started := time.Now()
	_, err := p.Localize(p.in, 0, "a")
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != api.ErrProviderWait || !app.NonRetryable() {
		t.Fatalf("want a non-retryable %s error, got %v", api.ErrProviderWait, err)
	}
	var w api.ProviderWait
	if err := app.Details(&w); err != nil || w.Wait != time.Hour || w.Kind != string(errkind.RateLimit) {
		t.Errorf("details %+v (%v), want an hour's rate_limit", w, err)
	}
	if d := time.Since(started); d > 30*time.Second {
		t.Errorf("the activity slept %v on the endpoint's wait", d)
	}
	p.Must(p.Localize(p.in, 0, "a"))
	if srv.Calls() != 2 {
		t.Errorf("the server saw %d calls, want the refused one and the answered one", srv.Calls())
	}
	var failed int
	for _, c := range p.Calls() {
		if c.Error != "" {
			failed++
			if c.CostUSD != 0 || c.Error != string(errkind.RateLimit) {
				t.Errorf("failed call recorded as %+v", c)
			}
		}
	}
	if failed != 1 {
		t.Errorf("%d failed calls in the ledger, want 1", failed)
	}
}

// TestEditedRowRerunsNodeButPaysOnce: a dataset row edited where the prompt does not read it (its test patch) runs
// the model node again, since its memo holds for the row it read, but the request is the same, so the response
// cache answers it: nothing is paid twice. An edit the prompt reads (the issue text) is a new, paid question.
func TestEditedRowRerunsNodeButPaysOnce(t *testing.T) {
	p := newPaidFixture(t)
	first := p.Must(p.Localize(p.in, 0, "a"))
	edit := func(change func(*swebench.Instance)) {
		t.Helper()
		row := p.Rows[demorun.Instance]
		change(&row)
		p.SetRow(row)
	}
	edit(func(r *swebench.Instance) { r.TestPatch += "\n" })
	again := p.Must(p.Localize(p.in, 0, "a"))
	if got := p.srv.Calls(); got != 1 {
		t.Errorf("an edit the prompt does not read paid again: %d calls", got)
	}
	if !reflect.DeepEqual(first, again) {
		t.Errorf("the node's output changed:\n%v\n%v", first, again)
	}
	if runs := countEvents(t, p.RunDir, "start"); runs != 4 { // checkout, inventory, localize twice
		t.Errorf("%d node runs, want the localize node run again for the edited row (4)", runs)
	}
	edit(func(r *swebench.Instance) { r.ProblemStatement += " It also fails on Sundays." })
	p.Must(p.Localize(p.in, 0, "a"))
	if got := p.srv.Calls(); got != 2 {
		t.Errorf("an edited issue text must be a new question: %d calls", got)
	}
}
