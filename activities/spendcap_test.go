package activities

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/temporal"

	"ctxlab/activities/api"
	"ctxlab/activities/limiter"
	"ctxlab/activities/steps"
	"ctxlab/runfolder"
	"ctxlab/runlog"
	"ctxlab/specs"
	"ctxlab/testkit/fakeopenai"
)

// TestSpendCapHoldsUnderConcurrency: 24 calls at once, from four workers (each its own Activities, as separate
// processes sharing the run folder are), against an endpoint that takes 300ms to answer. Each call reserves its
// worst case before it is sent, so the ledger's final spend never passes the cap; before reservations every call
// saw the same $0 spent and all 24 were paid, far past it.
func TestSpendCapHoldsUnderConcurrency(t *testing.T) {
	srv := fakeopenai.New()
	srv.SetDelayWhen(func(fakeopenai.ChatRequest) time.Duration { return 300 * time.Millisecond })
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	t.Setenv(specs.OpenAI.Env.BaseURL, hs.URL+"/v1")
	t.Setenv(specs.OpenAI.Env.Key, "")
	f := newFixture(t)
	co := f.must(f.node("checkout", inst, nil, nil))
	inv := f.must(f.node("inventory", inst, map[string]any{"tokenizer": "o200k_base"}, map[string]NodeOutput{"checkout": co}))
	in := map[string]NodeOutput{"checkout": co, "inventory": inv}

	// Priced so that one call's worst case is a few cents: an $0.08 cap fits about a dozen answers, and half a dozen worst cases at once.
	model := map[string]any{"name": "gpt", "provider": "openai", "id": "gpt", "max_tokens": 200,
		"price": map[string]any{"input": 10.0, "output": 30.0}}
	prompt := map[string]any{"user": "{{.Issue}}\n{{.Inventory}}\nat most {{.MaxFiles}}"}
	const capUSD = 0.08
	if err := steps.WriteLimits(f.a.RunDir("t"), steps.RunLimits{SpendUSD: capUSD}); err != nil {
		t.Fatal(err)
	}
	workers := make([]*Activities, 4)
	for i := range workers {
		workers[i] = New(f.a.Runs, zerolog.Nop())
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
			ni := NodeInput{Run: "t", Instance: f.refs[inst], Node: fmt.Sprintf("localize-%d", i), Step: "m.localize",
				Params: params, Inputs: in, Dataset: f.dataset}
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
	ledger, _, err := runlog.Read[runlog.Call](filepath.Join(f.a.RunDir("t"), runfolder.CallsFile))
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
	runDir := f.a.RunDir("t")
	spendCap := &limiter.SpendCap{Dir: runfolder.SpendLimits(runDir),
		Spent: func() (float64, error) { return f.a.spending.Spent(runDir) }}
	if left, err := spendCap.Reserve(context.Background(), 1e9, 0); err != nil {
		t.Fatal(err)
	} else {
		left.Release()
	}
	if entries, _ := filepath.Glob(filepath.Join(f.a.RunDir("t"), "limits", "spend", "r-*")); len(entries) != 0 {
		t.Errorf("reservations left behind after every call settled: %v", entries)
	}
}
