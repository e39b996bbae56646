package llm

import (
	"math"
	"strings"
	"testing"

	"ctxlab/specs"
)

// TestCachedUsage: prompt_tokens_details.cached_tokens is read as the prompt's cached part, priced at cached_input
// (input when the table has none); a cached count larger than the prompt it is part of is impossible usage.
func TestCachedUsage(t *testing.T) {
	u, err := usageOf([]byte(`{"usage":{"prompt_tokens":1000,"completion_tokens":10,"prompt_tokens_details":{"cached_tokens":800}}}`))
	if err != nil || u != (Usage{PromptTokens: 1000, CompletionTokens: 10, CachedTokens: 800}) {
		t.Fatalf("usage %+v, %v", u, err)
	}
	in, cached, out := CostParts(u, specs.Price{Input: 1, CachedInput: 0.1, Output: 4})
	if !near(in, 200e-6) || !near(cached, 80e-6) || !near(out, 40e-6) {
		t.Errorf("parts %v %v %v", in, cached, out)
	}
	if c := Cost(u, specs.Price{Input: 1, Output: 4}); !near(c, 1040e-6) {
		t.Errorf("without a cached price the cached tokens are input: %v", c)
	}
	w := Usage{PromptTokens: 1000, CacheWriteTokens: 1000}
	if in, _, _ := CostParts(w, specs.Price{Input: 3, CacheWrite: 3.75}); !near(in, 3750e-6) {
		t.Errorf("cache writes at their price: %v", in)
	}
	_, err = usageOf([]byte(`{"usage":{"prompt_tokens":10,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":11}}}`))
	if err == nil || !strings.Contains(err.Error(), "cached_tokens") {
		t.Errorf("cached past the prompt: %v", err)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-15 }
