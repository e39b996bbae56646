package sweepclient

import (
	"strings"
	"testing"

	"ctxlab/results/runstate"
	"ctxlab/runlog"
)

// TestProgressLineCountsFailedCallsApart: calls that got a 429 or a 5xx are not paid calls on the progress line;
// they are counted as failed calls.
func TestProgressLineCountsFailedCallsApart(t *testing.T) {
	var sp runstate.Spend
	for _, c := range []runlog.Call{{Error: "rate_limit"}, {Error: "server"}, {CostUSD: 0.01}, {Cached: true}} {
		sp.Add(c)
	}
	ev := ProgressEvent{IssuesTotal: 1, SpendUSD: sp.USD, PaidCalls: sp.PaidCalls, CacheHits: sp.CacheHits,
		FailedCalls: sp.FailedCalls}
	line := ev.line()
	if !strings.Contains(line, "(1 paid calls, 1 cache hits, 2 failed calls)") {
		t.Errorf("progress line %q: want 1 paid call and 2 failed ones", line)
	}
}
