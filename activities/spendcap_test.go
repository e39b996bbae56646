package activities

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/temporal"

	"ctxlab/activities/api"
	"ctxlab/activities/limiter"
	"ctxlab/runfolder"
	"ctxlab/runlog"
	"ctxlab/specs"
	"ctxlab/testkit/demorun"
	"ctxlab/testkit/fakeopenai"
)

// TestSpendCapHoldsUnderConcurrency: 24 calls at once, from four workers (each its own Activities and purse, as
// separate processes are, sharing one ledger as a run's workers share its budget workflow), against an endpoint
// that takes 300ms to answer. Each call reserves its worst case before it is sent, so the ledger's final spend
// never passes the cap; before reservations every call saw the same $0 spent and all 24 were paid, far past it.
// (testkit/spendtest runs this across processes against the budget workflow.)
func TestSpendCapHoldsUnderConcurrency(t *testing.T) {
	srv := fakeopenai.New()
	srv.SetDelayWhen(func(fakeopenai.ChatRequest) time.Duration { return 300 * time.Millisecond })
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	t.Setenv(specs.OpenAI.Env.BaseURL, hs.URL+"/v1")
	t.Setenv(specs.OpenAI.Env.Key, "")
	f := newFixture(t)
	co := f.Must(f.Node("checkout", demorun.Instance, nil, nil))
	inv := f.Must(f.Node("inventory", demorun.Instance, map[string]any{"tokenizer": "o200k_base"}, map[string]api.NodeOutput{"checkout": co}))
	in := map[string]api.NodeOutput{"checkout": co, "inventory": inv}

	// Priced so that one call's worst case is a few cents: an $0.08 cap fits about a dozen answers, and half a dozen worst cases at once.
	model := map[string]any{"name": "gpt", "provider": "openai", "id": "gpt", "max_tokens": 200,
		"price": map[string]any{"input": 10.0, "output": 30.0}}
	prompt := map[string]any{"user": "{{.Issue}}\n{{.Inventory}}\nat most {{.MaxFiles}}"}
	const capUSD = 0.08
	f.a.setSpendCap("t", capUSD)
	workers := make([]*Activities, 4)
	for i := range workers {
		workers[i] = New(f.a.Runs, zerolog.Nop())
		workers[i].budgets.local = map[string]*limiter.Local{"t": f.a.budgets.localBudget("t")}
	}
	const calls = 24
	peak, stop := 0, make(chan struct{})
	var pw sync.WaitGroup
	pw.Add(1)
	go func() {
		defer pw.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
				peak = max(peak, srv.InFlight())
			}
		}
	}()
	var wg sync.WaitGroup
	var mu sync.Mutex
	capped, other := 0, []error{}
	for i := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := workers[i%len(workers)]
			params := map[string]any{"model": model, "prompt": prompt, "sample": i}
			ni := api.NodeInput{Run: "t", Instance: f.Refs[demorun.Instance], Node: fmt.Sprintf("localize-%d", i), Step: "m.localize",
				Params: params, Inputs: in, Dataset: f.Dataset}
			_, err := w.runKind(context.Background(), specs.Localize.Name, ni)
			mu.Lock()
			defer mu.Unlock()
			var app *temporal.ApplicationError
			switch {
			case errors.As(err, &app) && app.Type() == api.ErrSpendLimit:
				capped++
			case err != nil:
				other = append(other, err)
			}
		}()
	}
	wg.Wait()
	close(stop)
	pw.Wait()
	if len(other) > 0 {
		t.Fatalf("calls failed other than at the cap: %v", other)
	}
	ledger, _, err := runlog.Read[runlog.Call](filepath.Join(f.RunDir, runfolder.CallsFile))
	if err != nil {
		t.Fatal(err)
	}
	var spent, largest float64
	for _, c := range ledger {
		spent += c.CostUSD
		largest = max(largest, c.CostUSD)
	}
	t.Logf("%d paid calls, %d stopped at the cap, $%.4f spent of $%.2f (largest call $%.4f), peak in flight %d",
		len(ledger), capped, spent, capUSD, largest, peak)
	if spent > capUSD {
		t.Errorf("spent $%.4f, past the $%.2f cap: %d calls paid", spent, capUSD, len(ledger))
	}
	if capped == 0 || len(ledger) < 2 {
		t.Errorf("%d calls paid, %d stopped: the test must reach the cap with several calls paid", len(ledger), capped)
	}
	if peak < 2 {
		t.Errorf("peak %d calls in flight: the test must run calls at once", peak)
	}
	if capped+len(ledger) != calls {
		t.Errorf("%d paid + %d capped != %d calls", len(ledger), capped, calls)
	}
	for _, w := range workers {
		if err := w.FlushBudgets(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	st := f.a.settledBudget(t, "t", spent)
	if st.InFlight != 0 || math.Abs(st.SpentUSD-spent) > 1e-9 || st.Calls != len(ledger) {
		t.Errorf("the budget after every call settled: %+v; the ledger says $%.4f in %d calls", st, spent, len(ledger))
	}
}

// settledBudget returns the status of a run's ledger (steps run outside a worker admit their paid calls through it)
// once this process's settlements reached it and its purses gave back their allowances (a few seconds at most),
// and spent (unless negative) is what it counts.
func (a *Activities) settledBudget(t *testing.T, run string, spent float64) limiter.Status {
	t.Helper()
	if err := a.FlushBudgets(context.Background()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		st := a.budgets.localBudget(run).Status()
		if st.ReservedUSD == 0 && st.InFlight == 0 && (spent < 0 || math.Abs(st.SpentUSD-spent) < 1e-9) ||
			time.Now().After(deadline) {
			return st
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// setSpendCap sets the spend cap of a run's ledger, which steps run outside a worker admit their paid calls
// through (the starter signals it to the run's budget workflow).
func (a *Activities) setSpendCap(run string, usd float64) {
	a.budgets.localBudget(run).SetLimits(limiter.Limits{SpendUSD: usd})
}
