package respcache

import (
	"testing"

	"ctxlab/activities/llm"
	"ctxlab/specs"
)

func TestKeyCoversWhatShapesTheAnswer(t *testing.T) {
	temp, seed := 0.7, int64(1)
	m := specs.Model{Name: "gpt", Provider: "openai", ID: "gpt-4o-mini", Temperature: &temp, MaxTokens: 100, Seed: &seed,
		Price: specs.Price{Input: 1, Output: 2}}
	req := llm.Request{Task: llm.TaskPatch, Sample: 0, Messages: []llm.Message{{Role: "user", Content: "fix it"}}}
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
	c := Open(t.TempDir())
	r := Request{Provider: "openai", ModelID: "m", Messages: []llm.Message{{Role: "user", Content: "x"}}}
	if _, ok := c.Get(r.Key()); ok {
		t.Fatal("hit in an empty cache")
	}
	want := llm.Response{Text: "answer", Usage: llm.Usage{PromptTokens: 3, CompletionTokens: 4}, CostUSD: 0.5}
	if err := c.Put(r.Key(), r, want); err != nil {
		t.Fatal(err)
	}
	e, ok := c.Get(r.Key())
	if !ok || e.Response != want || e.ModelID != "m" {
		t.Fatalf("got %+v %v", e, ok)
	}
}
