package jsonnet

import (
	"path/filepath"
	"testing"

	"ctxlab/specs"
)

// TestAnthropicModel: ctxlab.models.anthropic compiles to a model of provider anthropic with its id, price (cached
// input and cache writes too) and max_tokens; temperature=null sends none.
func TestAnthropicModel(t *testing.T) {
	dir := writeFiles(t, map[string]string{"spec.jsonnet": `local ctxlab = import 'ctxlab.libsonnet';
ctxlab.experiment({ name: 'x', dataset: ctxlab.datasets.swebench('d.jsonl'),
  models: [ctxlab.models.anthropic('claude-sonnet-4-5', price={ input: 3, output: 15, cached_input: 0.3, cache_write: 3.75 }),
           ctxlab.models.anthropic('claude-haiku-4-5', temperature=null, max_tokens=1000) + { name: 'haiku' }],
  methods: [ctxlab.methods.oracle_files] })`})
	e, err := Compile(filepath.Join(dir, "spec.jsonnet"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if errs := specs.Validate(e); len(errs) > 0 {
		t.Fatalf("validate: %v", errs)
	}
	m := e.Models[0]
	if m.Name != "claude-sonnet-4-5" || m.Provider != "anthropic" || m.ID != "claude-sonnet-4-5" || m.MaxTokens != 4096 ||
		m.Temperature == nil || *m.Temperature != 0 || m.Seed != nil ||
		m.Price != (specs.Price{Input: 3, Output: 15, CachedInput: 0.3, CacheWrite: 3.75}) {
		t.Errorf("model %+v", m)
	}
	if h := e.Models[1]; h.Temperature != nil || h.MaxTokens != 1000 || h.Name != "haiku" {
		t.Errorf("model %+v", h)
	}
}

// TestPaperModels: specs/paper.jsonnet runs Claude through Anthropic's API by default, and through the
// OpenAI-compatible endpoint with --ext-str claude_provider=openai; a four-part price sets cache prices; natively,
// Claude's budgets count in its own tokens (count_tokens) unless claude_tokenizer pins another.
func TestPaperModels(t *testing.T) {
	const paper = "../specs/paper.jsonnet"
	e, err := Compile(paper, Options{ExtStr: map[string]string{"claude_price": "15/75/1.5/18.75"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Models) != 2 || e.Models[0].Provider != "openai" || e.Models[1].Provider != "anthropic" ||
		e.Models[1].ID != "claude-opus-5" || e.Models[1].MaxTokens != 16384 ||
		e.Models[1].Price != (specs.Price{Input: 15, Output: 75, CachedInput: 1.5, CacheWrite: 18.75}) ||
		e.Models[1].Tokenizer != specs.TokenizerEndpoint || e.Models[0].Tokenizer != "" {
		t.Fatalf("models %+v", e.Models)
	}
	e, err = Compile(paper, Options{ExtStr: map[string]string{"claude_tokenizer": "o200k_base"}})
	if err != nil || e.Models[1].Tokenizer != "o200k_base" {
		t.Fatalf("claude_tokenizer=o200k_base: %v %+v", err, e)
	}
	if _, ok := e.Limits.Providers["anthropic"]; !ok {
		t.Errorf("no provider limits for anthropic: %+v", e.Limits.Providers)
	}
	e, err = Compile(paper, Options{ExtStr: map[string]string{"claude_provider": "openai"}})
	if err != nil || e.Models[1].Provider != "openai" || e.Models[1].ID != "claude-opus-5" {
		t.Fatalf("claude_provider=openai: %v %+v", err, e)
	}
	if _, err := Compile(paper, Options{ExtStr: map[string]string{"claude_provider": "bedrock"}}); err == nil {
		t.Fatal("claude_provider=bedrock compiled")
	}
}
