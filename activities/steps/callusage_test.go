package steps

import (
	"testing"

	"ctxlab/specs"
)

func usageRowOf(calls, prompt int, cost float64) map[string]any {
	row := map[string]any{}
	specs.ModelCalls.Set(row, calls)
	specs.PromptTokens.Set(row, prompt)
	specs.CostUSD.Set(row, cost)
	return row
}

// TestCallUsageParts: an answer counts in the failed attempt's Answered (a later attempt gets it from the response
// cache and counts it itself), a billed call without an answer in Spent with the earlier attempts', and with the
// cache off an answer is spent too (a later attempt pays for it again). A successful attempt's row gains only what
// bought no answer, its int fields staying ints.
func TestCallUsageParts(t *testing.T) {
	var c CallUsage
	c.Carry(map[string]float64{specs.CostUSD.Name: 0.5, specs.ModelCalls.Name: 1})
	c.answer(usageRowOf(1, 100, 0.25), true, false)
	c.bill(usageRowOf(1, 40, 0.125))
	u := c.Failed()
	if u.Spent[specs.CostUSD.Name] != 0.625 || u.Spent[specs.ModelCalls.Name] != 2 ||
		u.Answered[specs.CostUSD.Name] != 0.25 || u.Answered[specs.PromptTokens.Name] != 100 {
		t.Errorf("failed attempt's usage %+v", u)
	}
	if s := c.Spent(); s[specs.CostUSD.Name] != 0.625 {
		t.Errorf("carried to the next attempt: %v, want the answer left out", s)
	}
	row := c.AddSpentTo(usageRowOf(1, 100, 0.25))
	if calls, ok := row[specs.ModelCalls.Name].(int); !ok || calls != 3 || row[specs.CostUSD.Name] != 0.875 {
		t.Errorf("successful attempt's row %v", row)
	}

	var nc CallUsage
	nc.answer(usageRowOf(1, 100, 0.25), true, true)
	if s := nc.Spent(); s[specs.CostUSD.Name] != 0.25 {
		t.Errorf("with the cache off, an answer carried %v, want it spent", s)
	}
	if u := nc.Failed(); u.Spent != nil || u.Answered[specs.CostUSD.Name] != 0.25 {
		t.Errorf("with the cache off, the failed attempt's usage %+v counts its answer twice", u)
	}
}
