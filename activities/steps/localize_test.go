package steps

import (
	"context"
	"errors"
	"strings"
	"testing"

	"ctxlab/activities/api"
	"ctxlab/activities/api/errkind"
	"ctxlab/activities/llm"
	"ctxlab/specs"
	"ctxlab/testkit/demorun"
)

type failingProvider struct{ err error }

func (p failingProvider) Complete(context.Context, llm.Request) (llm.Response, error) {
	return llm.Response{}, p.err
}

type fixedProvider struct{ text string }

func (p fixedProvider) Complete(context.Context, llm.Request) (llm.Response, error) {
	return llm.Response{Text: p.text, Usage: llm.Usage{PromptTokens: 1000, CompletionTokens: 200}}, nil
}

// TestLocalizeWithAModel runs the localize, intersect and patch nodes against stand-in providers answering like a
// model: a prose answer with a fenced list (one path not in the repository), a context-length failure, and a priced
// patch call.
func TestLocalizeWithAModel(t *testing.T) {
	var provider llm.Provider
	f := newFixture(t, func(e *Env) {
		e.Models.Provider = func(specs.Model, string) (llm.Provider, error) { return provider, nil }
	})

	model := map[string]any{"name": "gpt", "provider": "openai", "id": "gpt", "price": map[string]any{"input": 2.0, "output": 10.0}}
	prompt := map[string]any{"user": "{{.Issue}}\n{{.Inventory}}\nat most {{.MaxFiles}}"}
	co := f.Must(f.Node("checkout", demorun.Instance, nil, nil))
	inv := f.Must(f.Node("inventory", demorun.Instance, map[string]any{"tokenizer": "o200k_base"}, map[string]api.NodeOutput{"checkout": co}))
	in := map[string]api.NodeOutput{"checkout": co, "inventory": inv}

	provider = fixedProvider{"The bug is in the duration code.\n\n```\n1. duration.go\n2. ./docs/usage.md\n3. src/humanize/nothere.go\n```\n"}
	var samples [3]api.NodeOutput
	for i := range samples {
		samples[i] = f.Must(f.Node("localize", demorun.Instance, map[string]any{"model": model, "prompt": prompt, "sample": i}, in))
		if samples[i].Row["model_calls"] != 1.0 || samples[i].Row["prompt_tokens"] != 1000.0 ||
			samples[i].Row["cost_usd"] != (1000*2.0+200*10.0)/1e6 {
			t.Errorf("sample %d row %v", i, samples[i].Row)
		}
	}
	sel := f.Must(f.Node("intersect", demorun.Instance, nil, map[string]api.NodeOutput{"l0": samples[0], "l1": samples[1], "l2": samples[2]}))
	if sel.Row["files_selected"] != 1.0 || sel.Row["fallback"] != false || sel.Row["loc_f1"] != 1.0 {
		t.Errorf("intersection row %v (docs dropped, duration.go kept)", sel.Row)
	}

	provider = failingProvider{&llm.Error{Kind: errkind.ContextLength, Status: 400, Msg: "maximum context length exceeded"}}
	_, err := f.Node("localize", demorun.Instance, map[string]any{"model": model, "prompt": prompt, "sample": 7}, in)
	var se *Error
	if !errors.As(err, &se) || se.Retryable || se.Type != string(errkind.ContextLength) {
		t.Errorf("context-length failure: %v", err)
	}

	// Unparseable localization answers count as empty: the intersection falls back to L0, and says so.
	provider = fixedProvider{"I am not sure which files."}
	empty := f.Must(f.Node("localize", demorun.Instance, map[string]any{"model": model, "prompt": prompt, "sample": 1, "max_files": 3}, in))
	sel = f.Must(f.Node("intersect", demorun.Instance, nil, map[string]api.NodeOutput{"l0": samples[0], "l1": empty, "l2": samples[2]}))
	if sel.Row["fallback"] != true || sel.Row["files_selected"] != 1.0 {
		t.Errorf("fallback row %v", sel.Row)
	}

	// A bad prompt template is a permanent failure naming the step.
	_, err = f.Node("localize", demorun.Instance, map[string]any{"model": model, "prompt": map[string]any{"user": "{{.Nope}}"}}, in)
	if !isPermanent(err) || !strings.Contains(err.Error(), "m.localize") {
		t.Errorf("bad template: %v", err)
	}
}
