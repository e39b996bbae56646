package activities

import (
	"net/http/httptest"
	"testing"
	"time"

	"ctxlab/activities/api"
	"ctxlab/activities/api/errkind"
	"ctxlab/activities/llm"
	"ctxlab/specs"
	"ctxlab/testkit/demorun"
	"ctxlab/testkit/fakeopenai"
)

// TestImpossibleUsageKeepsTheSpendCap: an endpoint reporting negative token counts gets no answer accepted, so the
// ledger gains no negative cost and a $1.10 cap stops calls at $1 (two $0.50 calls; a third's worst case, its
// estimated prompt of some 600 tokens at $1000 per million, does not fit). Before, usage of -3000 prompt tokens priced at $1000
// per million was a cost of -$3, and the cap let $3.50 of real calls through. An insufficient_quota error inside a
// 200 body is a quota error (final), not a broken answer retried.
func TestImpossibleUsageKeepsTheSpendCap(t *testing.T) {
	f := newFixture(t)
	fake := fakeopenai.New(fakeopenai.WithUsage(-3000, 0))
	hs := httptest.NewServer(fake)
	defer hs.Close()
	t.Setenv(specs.OpenAI.Env.BaseURL, hs.URL+"/v1")
	t.Setenv(specs.OpenAI.Env.Key, "")
	f.a.newProvider = func(m specs.Model, _ string) (llm.Provider, error) {
		return llm.New(m, llm.WithAttempts(2), llm.WithBaseDelay(time.Millisecond))
	}
	f.a.setSpendCap("t", 1.1)
	model := map[string]any{"name": "gpt", "provider": "openai", "id": "gpt", "price": map[string]any{"input": 1000.0}}
	prompt := map[string]any{"user": "{{.Issue}}\n{{.Inventory}}\nat most {{.MaxFiles}}"}
	co := f.Must(f.Node("checkout", demorun.Instance, nil, nil))
	inv := f.Must(f.Node("inventory", demorun.Instance, map[string]any{"tokenizer": "o200k_base"}, map[string]api.NodeOutput{"checkout": co}))
	in := map[string]api.NodeOutput{"checkout": co, "inventory": inv}
	localize := func(sample int) error {
		_, err := f.Node("localize", demorun.Instance, map[string]any{"model": model, "prompt": prompt, "sample": sample}, in)
		return err
	}

	wantStepKind(t, localize(0), errkind.BadResponse, "impossible usage", "prompt_tokens")
	fake.Fail(1, fakeopenai.QuotaIn200)
	wantStepKind(t, localize(1), errkind.Quota, "exceeded your current quota")
	if fake.Calls() != 3 {
		t.Errorf("%d calls; want the bad usage asked twice (then given up) and the quota error once", fake.Calls())
	}

	fake.SetUsage(500, 100) // $0.50 a call (output is free here)
	for sample := 2; sample < 4; sample++ {
		if err := localize(sample); err != nil {
			t.Fatalf("sample %d: %v", sample, err)
		}
	}
	err := localize(4)
	if typ, _ := typeOf(t, err); typ != api.ErrSpendLimit {
		t.Errorf("the third paid call: %v; want the spend cap to stop it", err)
	}
	if spent := f.a.settledBudget(t, "t", 1).SpentUSD; spent != 1.0 {
		t.Errorf("the budget counts $%v spent, want $1.00", spent)
	}
}
