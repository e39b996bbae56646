package activities

import (
	"ctxlab/specs"
	"ctxlab/testkit/demorun"
	"errors"
	"math"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"

	"ctxlab/activities/api"
	"ctxlab/runfolder"
	"ctxlab/runlog"
	"ctxlab/testkit/fakeanthropic"
)

// TestAnthropicModelCall: a localize node under an anthropic model goes through the same call path as openai's: it
// answers through the Messages API, its row and ledger line price the usage (cache writes at cache_write), a second
// sample is a new call, the same sample again is served from the response cache, and the spend cap reserves the
// call's worst case with max_tokens at the output price (Anthropic always sends max_tokens) before it is sent. The
// key reaches neither the ledger nor the run folder.
func TestAnthropicModelCall(t *testing.T) {
	const key = "sk-ant-activity-test-0123456789"
	fake := &fakeanthropic.Server{}
	hs := httptest.NewServer(fake)
	t.Cleanup(hs.Close)
	t.Setenv("ANTHROPIC_BASE_URL", hs.URL)
	t.Setenv("ANTHROPIC_API_KEY", key)
	f := newFixture(t)
	co := f.Must(f.Node("checkout", demorun.Instance, nil, nil))
	inv := f.Must(f.Node("inventory", demorun.Instance, map[string]any{"tokenizer": "o200k_base"}, map[string]api.NodeOutput{"checkout": co}))
	in := map[string]api.NodeOutput{"checkout": co, "inventory": inv}
	model := map[string]any{"name": "claude", "provider": "anthropic", "id": "claude-fake-1", "max_tokens": 2000,
		"temperature": 0.0, "price": map[string]any{"input": 3.0, "output": 15.0, "cached_input": 0.3, "cache_write": 3.75}}
	// A long fixed instruction makes the shared prefix worth caching.
	prompt := map[string]any{"system": strings.Repeat("Rank the files to edit for the issue below. ", 300),
		"user": "{{.Issue}}\n{{.Inventory}}\nat most {{.MaxFiles}}"}
	localize := func(sample int) (api.NodeOutput, error) {
		return f.Node("localize", demorun.Instance, map[string]any{"model": model, "prompt": prompt, "sample": sample}, in)
	}

	// The worst case: 2,000 answer tokens at $15 per million is $0.03 on its own, so a cap below it sends nothing.
	f.a.setSpendCap("t", 0.029)
	_, err := localize(0)
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != api.ErrSpendLimit || len(fake.Requests()) != 0 {
		t.Fatalf("under a cap below max_tokens' worth: %v, %d requests", err, len(fake.Requests()))
	}
	f.a.setSpendCap("t", 10)
	first := f.Must(localize(0))
	reqs := fake.Requests()
	if len(reqs) != 1 || reqs[0].TaskName != "localize" || reqs[0].Breakpoints() == 0 || *reqs[0].MaxTokens != 2000 {
		t.Fatalf("requests %+v", reqs)
	}
	writes, _ := first.Row["cache_write_tokens"].(float64)
	cost, _ := first.Row["cost_usd"].(float64)
	if writes == 0 || cost <= 0 {
		t.Fatalf("row %+v: want cache writes and a cost", first.Row)
	}
	second := f.Must(localize(1)) // another sample: another call, which reads the prefix the first wrote
	if n := len(fake.Requests()); n != 2 {
		t.Fatalf("%d requests after a second sample", n)
	}
	if reads, _ := second.Row["cached_tokens"].(float64); reads == 0 {
		t.Fatalf("second sample's row %+v: want cache reads", second.Row)
	}
	if c2, _ := second.Row["cost_usd"].(float64); c2 >= cost {
		t.Fatalf("the cached call cost $%v, not less than the first's $%v", c2, cost)
	}
	model["name"] = "claude-renamed" // another node (its key names the model), the same request
	again := f.Must(localize(0))
	if n := len(fake.Requests()); n != 2 {
		t.Fatalf("the same request again was sent: %d requests", n)
	}
	if c, _ := again.Row["cost_usd"].(float64); math.Abs(c-cost) > 1e-12 {
		t.Fatalf("the cached answer's row says $%v, the original $%v", c, cost)
	}
	calls, _, err := runlog.Read[runlog.Call](filepath.Join(f.RunDir, runfolder.CallsFile))
	if err != nil || len(calls) != 3 {
		t.Fatalf("calls.jsonl: %v, %d calls", err, len(calls))
	}
	if c := calls[0]; c.Provider != "anthropic" || c.CacheWriteTokens == 0 || math.Abs(c.CostUSD-cost) > 1e-12 {
		t.Fatalf("ledger line %+v", c)
	}
	if c := calls[2]; !c.Cached || c.Key != calls[0].Key {
		t.Fatalf("the third call %+v is not the first's, served from the cache", c)
	}
	if !fake.KeySeen(key) {
		t.Fatal("the key was not sent")
	}
	err = filepath.Walk(f.RunDir, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err == nil && strings.Contains(string(b), key) {
			t.Errorf("%s holds the key", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestAnthropicAgentNativeTools: the agent method under an anthropic model offers its tools as Anthropic tools; the
// model's tool_use blocks run as the agent's tool calls, their results go back as tool_result blocks answering the
// call's id, and the turns, tool calls and model calls are counted as with any model.
func TestAnthropicAgentNativeTools(t *testing.T) {
	fake := &fakeanthropic.Server{Answer: func(r fakeanthropic.Request) fakeanthropic.Reply {
		results := 0
		for _, m := range r.Messages {
			for _, b := range m.Content {
				if b.Type == "tool_result" {
					results++
				}
			}
		}
		switch results {
		case 0:
			return fakeanthropic.Reply{Text: "Searching first.", Tool: "search", Input: map[string]any{"pattern": "def"}}
		case 1:
			return fakeanthropic.Reply{Tool: "list", Input: map[string]any{"path": "."}}
		}
		return fakeanthropic.Reply{Text: "I have seen enough."}
	}}
	hs := httptest.NewServer(fake)
	t.Cleanup(hs.Close)
	t.Setenv("ANTHROPIC_BASE_URL", hs.URL)
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-agent-test-0123456789")
	plan := compileAgentSpec(t, `local ctxlab = import 'ctxlab.libsonnet';
ctxlab.experiment({
  name: 'agent_anthropic',
  dataset: ctxlab.datasets.demo,
  models: [ctxlab.models.anthropic('claude-fake-1')],
  methods: [ctxlab.methods.agent({ max_turns: 6 })],
})
`)
	f := newFixture(t)
	outs := f.RunPlan(plan, demorun.Instance, specs.Grade.Name)
	row := stepOut(t, plan, outs, "agent", "agent").Row
	if row["agent_turns"] != 3.0 || row["agent_tool_calls"] != 2.0 || row["model_calls"] != 3.0 || row["agent_stop"] != "answered" {
		t.Fatalf("agent row %+v", row)
	}
	reqs := fake.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	if !strings.Contains(string(reqs[0].Tools), `"name":"search"`) || !strings.Contains(string(reqs[0].Tools), `"input_schema"`) {
		t.Fatalf("tools offered: %s", reqs[0].Tools)
	}
	last := reqs[2].Messages
	var uses, results []fakeanthropic.Block
	for _, m := range last {
		for _, b := range m.Content {
			switch b.Type {
			case "tool_use":
				uses = append(uses, b)
			case "tool_result":
				results = append(results, b)
			}
		}
	}
	if len(uses) != 2 || len(results) != 2 || uses[0].Name != "search" || uses[1].Name != "list" ||
		results[0].ToolUseID != uses[0].ID || results[1].ToolUseID != uses[1].ID || uses[0].ID == uses[1].ID {
		t.Fatalf("the third request's tool blocks: uses %+v, results %+v", uses, results)
	}
}
