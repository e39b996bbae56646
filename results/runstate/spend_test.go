package runstate

import (
	"testing"

	"ctxlab/runlog"
)

// TestFailedCallsAreNotPaid: a call that failed (rate limited, server error) is counted as failed, never as paid; a
// cached answer is a cache hit; only answered calls are paid and priced.
func TestFailedCallsAreNotPaid(t *testing.T) {
	var s Spend
	for _, c := range []runlog.Call{
		{Key: "a", Error: "rate_limit"},
		{Key: "a", Error: "server"},
		{Key: "a", CostUSD: 0.5, PromptTokens: 10, CompletionTokens: 2},
		{Key: "a", Cached: true, PromptTokens: 10, CompletionTokens: 2},
	} {
		s.Add(c)
	}
	if s.PaidCalls != 1 || s.FailedCalls != 2 || s.CacheHits != 1 || s.USD != 0.5 || s.PromptTokens != 10 {
		t.Errorf("spend %+v: want 1 paid ($0.5, 10 prompt tokens), 2 failed, 1 cache hit", s)
	}
}
