package steps

import (
	"context"
	"math"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"ctxlab/activities/respcache"
	"ctxlab/runfolder"
	"ctxlab/runlog"
	"ctxlab/specs"
	"ctxlab/store/objects"
	"ctxlab/testkit/demorun"
	"ctxlab/testkit/fakeopenai"
)

// TestServedModelOnTheRow: an endpoint that names another model than the spec's id as the one that answered puts
// that name in the row's model_served, for a paid and for a cached answer alike; one that names the spec's id
// leaves the row without it.
func TestServedModelOnTheRow(t *testing.T) {
	f := newFixture(t)
	_, in := f.PayOpenAI()
	own := f.Must(f.Localize(in, 0, "a"))
	if v, ok := own.Row["model_served"]; ok {
		t.Errorf("an answer of the spec's own model id sets model_served %v", v)
	}
	const key = "sk-served-test-0123456789"
	srv := fakeopenai.New(fakeopenai.WithKey(key), fakeopenai.WithServedModel("gpt-4o-mini-2024-07-18"))
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	t.Setenv("OPENAI_BASE_URL", hs.URL+"/v1")
	t.Setenv("OPENAI_API_KEY", key)
	for _, label := range []string{"paid", "cached"} {
		out := f.Must(f.Localize(in, 0, label))
		if got := out.Row["model_served"]; got != "gpt-4o-mini-2024-07-18" {
			t.Errorf("%s answer: model_served %v, want the model the endpoint named", label, got)
		}
		if err := specs.CheckRow("localize", "localize", out.Row); err != nil {
			t.Error(err)
		}
	}
	if srv.Calls() != 1 {
		t.Errorf("%d calls, want 1 (the second answer is cached)", srv.Calls())
	}
}

// TestCachedAnswerOfImpossibleUsageIsAskedAgain: a stored answer is held to what a call can report before it is
// priced, as a fresh one is (a shared cache is anyone's to write): one whose usage is impossible (a negative count,
// which would price the row below zero) is not served; the question is asked again and paid at its real usage.
func TestCachedAnswerOfImpossibleUsageIsAskedAgain(t *testing.T) {
	f := newFixture(t)
	srv, in := f.PayOpenAI()
	first := f.Must(f.Localize(in, 0, "a"))
	key := f.Calls()[0].Key
	cache := respcache.Open(objects.Dir{Root: f.RunDir}, runfolder.CASDir)
	ctx := context.Background()
	e, ok := cache.Get(ctx, key)
	if !ok {
		t.Fatal("the first answer was not cached")
	}
	e.Response.Usage.PromptTokens = -1_000_000_000
	if err := cache.Put(ctx, key, respcache.Request{Provider: e.Provider, ModelID: e.ModelID}, e.Response, true); err != nil {
		t.Fatal(err)
	}
	again := f.Must(f.Localize(in, 0, "b"))
	if got := srv.Calls(); got != 2 {
		t.Errorf("the tampered answer was served: the server saw %d calls, want 2", got)
	}
	if got, want := again.Row["cost_usd"], first.Row["cost_usd"]; got != want {
		t.Errorf("cost_usd %v after the tampered cache, want %v", got, want)
	}
}

// TestCachedInputPricedApart: an answer whose usage says 600 of its 1,000 prompt tokens were read from the
// provider's prompt cache is priced at the table's cached_input for those 600, to the cent: $0.0021 for
// 400 x $2 + 600 x $0.50 + 100 x $10 per million, where pricing every prompt token as input said $0.0030. The row
// splits the cost into input, cached input and output, and the ledger keeps the cached tokens.
func TestCachedInputPricedApart(t *testing.T) {
	f := newFixture(t)
	srv, in := f.PayOpenAI()
	srv.SetUsage(1000, 100)
	srv.SetCachedTokens(600)
	model := map[string]any{"name": "gpt", "provider": "openai", "id": "gpt-4o-mini",
		"price": map[string]any{"input": 2.0, "cached_input": 0.5, "output": 10.0}}
	prompt := map[string]any{"user": "{{.Issue}}\n{{.Inventory}}\nat most {{.MaxFiles}}"}
	out := f.Must(f.Node("localize", demorun.Instance, map[string]any{"model": model, "prompt": prompt, "sample": 0}, in))
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
	calls, _, err := runlog.Read[runlog.Call](filepath.Join(f.RunDir, runfolder.CallsFile))
	if err != nil || len(calls) != 1 {
		t.Fatalf("calls.jsonl: %v, %d calls", err, len(calls))
	}
	if c := calls[0]; c.CachedTokens != 600 || math.Abs(c.CostUSD-0.0021) > 1e-12 {
		t.Errorf("ledger line %+v: want 600 cached tokens and $0.0021", c)
	}
}
