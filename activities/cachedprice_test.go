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
