package activities

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"

	"ctxlab/activities/api"
	"ctxlab/activities/llm"
	"ctxlab/activities/steps"
	"ctxlab/specs"
	"ctxlab/testkit/demorun"
	"ctxlab/testkit/e2e"
)

// leakyProvider answers with the process's API key inside the answer text and model name, as a provider that
// scrubs nothing would pass on an endpoint's echo; with fail set, it fails with the key in its message.
type leakyProvider struct {
	key  string
	fail bool
}

func (p leakyProvider) Complete(context.Context, llm.Request) (llm.Response, error) {
	if p.fail {
		return llm.Response{}, errors.New("upstream refused key " + p.key)
	}
	return llm.Response{Text: "1. duration.go\n\nAnswered for " + p.key + "\n", Model: "gpt@" + p.key,
		Usage: llm.Usage{PromptTokens: 10, CompletionTokens: 5}}, nil
}

// TestModelAnswersScrubbedBeforeStorage: whatever a provider returns passes the central scrub in callModel before
// the response cache, the content store, node outputs and calls.jsonl see it; an error's text is scrubbed too.
// The whole run folder is then searched for the key.
func TestModelAnswersScrubbedBeforeStorage(t *testing.T) {
	const key = "sk-scrub-test-LEAK-5e6f7a8b9c"
	t.Setenv(specs.OpenAI.Env.Key, key)
	f := newFixture(t)
	provider := leakyProvider{key: key}
	f.a.newProvider = func(specs.Model, string) (llm.Provider, error) { return provider, nil }

	model := map[string]any{"name": "gpt", "provider": "openai", "id": "gpt"}
	prompt := map[string]any{"user": "{{.Issue}}\n{{.Inventory}}\nat most {{.MaxFiles}}"}
	co := f.Must(f.Node("checkout", demorun.Instance, nil, nil))
	inv := f.Must(f.Node("inventory", demorun.Instance, map[string]any{"tokenizer": "o200k_base"}, map[string]api.NodeOutput{"checkout": co}))
	in := map[string]api.NodeOutput{"checkout": co, "inventory": inv}
	out := f.Must(f.Node("localize", demorun.Instance, map[string]any{"model": model, "prompt": prompt}, in))
	if out.Row["model_calls"] != 1.0 {
		t.Fatalf("localize row %v", out.Row)
	}
	// Served again from the cache under another node: the model renamed.
	renamed := map[string]any{"name": "gpt-again", "provider": "openai", "id": "gpt"}
	f.Must(f.Node("localize", demorun.Instance, map[string]any{"model": renamed, "prompt": prompt}, in))
	provider = leakyProvider{key: key, fail: true}
	_, err := f.Node("localize", demorun.Instance, map[string]any{"model": model, "prompt": prompt, "sample": 1}, in)
	if err == nil || strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), llm.Redacted) {
		t.Errorf("the failure's text: %v (want it, with the key redacted)", err)
	}

	read, redacted := 0, 0
	root := f.RunDir
	e2e.EachFile(t, root, func(path string, b []byte) {
		read++
		if bytes.Contains(b, []byte(key)) {
			t.Errorf("%s holds the key", path)
		}
		if bytes.Contains(b, []byte("Answered for "+llm.Redacted)) {
			redacted++
		}
	})
	if redacted == 0 || read < 5 {
		t.Errorf("the scrubbed answer was stored nowhere (%d files read): the search proves nothing", read)
	}
}

// TestScrubErrorKeepsType: an activity error holding a secret comes out redacted with its Temporal type and
// retryability, so the workflow still tells permanent failures from retryable ones.
func TestScrubErrorKeepsType(t *testing.T) {
	const key = "sk-scrub-error-0011223344"
	t.Setenv(specs.OpenAI.Env.Key, key)
	err := activityError(scrubError(steps.Permanent(api.ErrBadInput, "step: refused "+key)))
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || !app.NonRetryable() || app.Type() != api.ErrBadInput ||
		strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), llm.Redacted) {
		t.Errorf("permanent error: %v", err)
	}
	err = scrubError(errors.New("retry me: " + key))
	var typed *steps.Error
	if errors.As(err, &typed) || strings.Contains(err.Error(), key) {
		t.Errorf("ordinary error: %v", err)
	}
	plain := errors.New("nothing secret")
	if scrubError(plain) != plain || scrubError(nil) != nil {
		t.Error("an error without secrets must pass unchanged")
	}
}
