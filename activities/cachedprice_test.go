package activities

import (
	"math"
	"path/filepath"
	"testing"
	"time"

	"ctxlab/activities/llm"
	"ctxlab/runfolder"
	"ctxlab/runlog"
	"ctxlab/specs"
	"ctxlab/testkit/demorun"
	"ctxlab/testkit/fakeopenai"
)

// TestCachedInputPricedApart: an answer whose usage says 600 of its 1,000 prompt tokens were read from the
// provider's prompt cache is priced at the table's cached_input for those 600, to the cent: $0.0021 for
// 400 x $2 + 600 x $0.50 + 100 x $10 per million, where pricing every prompt token as input said $0.0030. The row
// splits the cost into input, cached input and output, and the ledger keeps the cached tokens.
func TestCachedInputPricedApart(t *testing.T) {
	p := newPaidFixture(t)
	p.srv.SetUsage(1000, 100)
	p.srv.SetCachedTokens(600)
	model := map[string]any{"name": "gpt", "provider": "openai", "id": "gpt-4o-mini",
		"price": map[string]any{"input": 2.0, "cached_input": 0.5, "output": 10.0}}
	prompt := map[string]any{"user": "{{.Issue}}\n{{.Inventory}}\nat most {{.MaxFiles}}"}
	out := p.Must(p.Node("localize", demorun.Instance, map[string]any{"model": model, "prompt": prompt, "sample": 0}, p.in))
	near := func(name string, got any, want float64) {
		t.Helper()
		if f, ok := got.(float64); !ok || math.Abs(f-want) > 1e-12 {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	near("cost_usd", out.Row["cost_usd"], 0.0021)
	near("cost_input_usd", out.Row["cost_input_usd"], 0.0008)
	near("cost_cached_usd", out.Row["cost_cached_usd"], 0.0003)
	near("cost_output_usd", out.Row["cost_output_usd"], 0.001)
	near("cached_tokens", out.Row["cached_tokens"], 600) // JSON numbers: float64
	calls, _, err := runlog.Read[runlog.Call](filepath.Join(p.RunDir, runfolder.CallsFile))
	if err != nil || len(calls) != 1 {
		t.Fatalf("calls.jsonl: %v, %d calls", err, len(calls))
	}
	if c := calls[0]; c.CachedTokens != 600 || math.Abs(c.CostUSD-0.0021) > 1e-12 {
		t.Errorf("ledger line %+v: want 600 cached tokens and $0.0021", c)
	}
}

// TestBilledFailureIsSpend: answers the endpoint sent and billed but that were no use (200 without choices) are
// spend: the failed call's ledger line holds their usage, twice over for two attempts, and the spend cap counts it.
// Before, a failed call was recorded at $0 whatever it had been billed.
func TestBilledFailureIsSpend(t *testing.T) {
	p := newPaidFixture(t)
	p.a.newProvider = func(m specs.Model, _ string) (llm.Provider, error) {
		return llm.New(m, llm.WithAttempts(2), llm.WithBaseDelay(time.Millisecond))
	}
	p.srv.Fail(2, fakeopenai.NoChoices)
	model := map[string]any{"name": "gpt", "provider": "openai", "id": "gpt-4o-mini",
		"price": map[string]any{"input": 2.0, "output": 10.0}}
	prompt := map[string]any{"user": "{{.Issue}}\n{{.Inventory}}\nat most {{.MaxFiles}}"}
	if _, err := p.Node("localize", demorun.Instance, map[string]any{"model": model, "prompt": prompt, "sample": 0}, p.in); err == nil {
		t.Fatal("a call answered with no choices twice succeeded")
	}
	calls, _, err := runlog.Read[runlog.Call](filepath.Join(p.RunDir, runfolder.CallsFile))
	if err != nil || len(calls) != 1 {
		t.Fatalf("calls.jsonl: %v, %d calls", err, len(calls))
	}
	want := 2 * (100*2.0 + 50*10.0) / 1e6
	if c := calls[0]; c.Error == "" || c.PromptTokens != 200 || c.CompletionTokens != 100 || math.Abs(c.CostUSD-want) > 1e-12 {
		t.Errorf("ledger line %+v: want the failure with 200+100 tokens, $%v", c, want)
	}
	if spent := p.a.settledBudget(t, "t", want).SpentUSD; math.Abs(spent-want) > 1e-12 {
		t.Errorf("the budget counts $%v spent, want $%v", spent, want)
	}
}
