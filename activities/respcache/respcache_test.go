package respcache

import (
	"context"
	"testing"

	"ctxlab/activities/llm"
	"ctxlab/specs"
	"ctxlab/store/objects"
)

func TestKeyCoversWhatShapesTheAnswer(t *testing.T) {
	temp, seed := 0.7, int64(1)
	m := specs.Model{Name: "gpt", Provider: "openai", ID: "gpt-4o-mini", Temperature: &temp, MaxTokens: 100, Seed: &seed,
		Price: specs.Price{Input: 1, Output: 2}}
	req := llm.Request{Task: specs.Patch.Task, Sample: 0, Messages: []llm.Message{{Role: "user", Content: "fix it"}}}
	base := For(m, "http://a/v1", req).Key()

	same := m
	same.Name, same.Price = "renamed", specs.Price{Input: 9}
	if For(same, "http://a/v1", req).Key() != base {
		t.Error("a model's label or price changed the key: the same answer would be paid again")
	}
	t2, s2 := 0.2, int64(2)
	for name, k := range map[string]string{
		"model id":    For(specs.Model{Provider: "openai", ID: "gpt-4o", Temperature: &temp, MaxTokens: 100, Seed: &seed}, "http://a/v1", req).Key(),
		"endpoint":    For(m, "http://b/v1", req).Key(),
		"temperature": For(specs.Model{Provider: "openai", ID: m.ID, Temperature: &t2, MaxTokens: 100, Seed: &seed}, "http://a/v1", req).Key(),
		"max tokens":  For(specs.Model{Provider: "openai", ID: m.ID, Temperature: &temp, MaxTokens: 99, Seed: &seed}, "http://a/v1", req).Key(),
		"seed":        For(specs.Model{Provider: "openai", ID: m.ID, Temperature: &temp, MaxTokens: 100, Seed: &s2}, "http://a/v1", req).Key(),
		"sample":      For(m, "http://a/v1", llm.Request{Task: req.Task, Sample: 1, Messages: req.Messages}).Key(),
		"messages":    For(m, "http://a/v1", llm.Request{Task: req.Task, Messages: []llm.Message{{Role: "user", Content: "fix it!"}}}).Key(),
		"role":        For(m, "http://a/v1", llm.Request{Task: req.Task, Messages: []llm.Message{{Role: "system", Content: "fix it"}}}).Key(),
	} {
		if k == base {
			t.Errorf("changing the %s did not change the key", name)
		}
	}
}

func TestCacheRoundTrip(t *testing.T) {
	ctx := context.Background()
	c := Open(objects.Dir{Root: t.TempDir()}, "cas")
	r := Request{Provider: "openai", ModelID: "m", Messages: []llm.Message{{Role: "user", Content: "x"}}}
	if _, ok := c.Get(ctx, r.Key()); ok {
		t.Fatal("hit in an empty cache")
	}
	want := llm.Response{Text: "answer", Usage: llm.Usage{PromptTokens: 3, CompletionTokens: 4}, CostUSD: 0.5}
	if err := c.Put(ctx, r.Key(), r, want, false); err != nil {
		t.Fatal(err)
	}
	e, ok := c.Get(ctx, r.Key())
	if !ok || e.Response != want || e.ModelID != "m" {
		t.Fatalf("got %+v %v", e, ok)
	}
	// The first answer stays (another worker's answer to the same request, stored at once, does not replace it),
	// unless the run asked again on purpose (no_cache).
	other := llm.Response{Text: "another answer"}
	if err := c.Put(ctx, r.Key(), r, other, false); err != nil {
		t.Fatal(err)
	}
	if e, _ := c.Get(ctx, r.Key()); e.Response != want {
		t.Errorf("a second answer replaced the first: %+v", e.Response)
	}
	if err := c.Put(ctx, r.Key(), r, other, true); err != nil {
		t.Fatal(err)
	}
	if e, _ := c.Get(ctx, r.Key()); e.Response != other {
		t.Errorf("an answer asked again on purpose did not replace the first: %+v", e.Response)
	}
}

// TestKeyCoversTheMaxTokensSent: the max_tokens a call sends is decided by the cap (the spec's max_tokens, or
// ctxlab's default for a local server or one that reports its context) and the context window beside the prompt, so
// the key covers both: an answer made when the server had another context (a llama-server restarted with another
// -c) is not served as if equal, while a spec saying 4096 and one saying nothing to a local server make the same
// request and share it. A remote endpoint that reports no context keeps the key it always had.
func TestKeyCoversTheMaxTokensSent(t *testing.T) {
	m := specs.Model{Provider: "openai", ID: "stories260K"}
	at := func(maxTokens, window int, endpoint string) string {
		mm := m
		mm.MaxTokens = maxTokens
		return For(mm, endpoint, llm.Request{Task: specs.Patch.Task, Context: window,
			Messages: []llm.Message{{Role: "user", Content: "fix it"}}}).Key()
	}
	local := "http://127.0.0.1:8090/v1"
	if at(0, 1024, local) == at(0, 2048, local) {
		t.Error("answers made under two context windows share a key")
	}
	if at(0, 1024, local) != at(llm.DefaultMaxTokens, 1024, local) {
		t.Error("a spec with no max_tokens and one with ctxlab's default make the same request but not the same key")
	}
	if at(0, 0, local) == at(0, 1024, local) || at(100, 0, local) == at(200, 0, local) {
		t.Error("another window or cap kept the key")
	}
	remote := For(m, "https://api.openai.com/v1/", llm.Request{Task: specs.Patch.Task,
		Messages: []llm.Message{{Role: "user", Content: "fix it"}}})
	if remote.MaxTokens != 0 || remote.ContextWindow != 0 {
		t.Errorf("a remote endpoint that reports no context got cap %d, window %d", remote.MaxTokens, remote.ContextWindow)
	}
}

func TestWindowRecord(t *testing.T) {
	ctx := context.Background()
	c := Open(objects.Dir{Root: t.TempDir()}, "")
	if _, ok := c.Window(ctx, "http://127.0.0.1:1/v1", "m"); ok {
		t.Fatal("a window in an empty cache")
	}
	w := llm.Window{Tokens: 4096, Source: "llama.cpp /props"}
	if err := c.PutWindow(ctx, "http://127.0.0.1:1/v1", "m", w); err != nil {
		t.Fatal(err)
	}
	if got, ok := c.Window(ctx, "http://127.0.0.1:1/v1", "m"); !ok || got != w {
		t.Errorf("window %+v, %v", got, ok)
	}
	if _, ok := c.Window(ctx, "http://127.0.0.1:1/v1", "other"); ok {
		t.Error("another model's window")
	}
}

// TestAnthropicKey: an anthropic call always sends max_tokens (ctxlab's default when the spec sets none), so a spec
// with none and one with the default share a key; the provider and the endpoint are part of it, so the same id and
// messages asked of Anthropic's API and of an OpenAI-compatible gateway are two answers.
func TestAnthropicKey(t *testing.T) {
	req := llm.Request{Task: specs.Patch.Task, Messages: []llm.Message{{Role: "user", Content: "fix it"}}}
	m := specs.Model{Provider: "anthropic", ID: "claude-sonnet-4-5"}
	base := For(m, "https://api.anthropic.com/", req)
	if base.MaxTokens != llm.DefaultMaxTokens {
		t.Errorf("max_tokens %d in the key, want the %d sent", base.MaxTokens, llm.DefaultMaxTokens)
	}
	m4096 := m
	m4096.MaxTokens = llm.DefaultMaxTokens
	if For(m4096, "https://api.anthropic.com/", req).Key() != base.Key() {
		t.Error("no max_tokens and the default sent make the same request but not the same key")
	}
	gw := m
	gw.Provider = "openai"
	if For(gw, "https://api.anthropic.com/", req).Key() == base.Key() ||
		For(m, "https://gateway.example/", req).Key() == base.Key() {
		t.Error("another provider or endpoint kept the key")
	}
}
