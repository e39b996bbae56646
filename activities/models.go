package activities

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"text/template"

	"go.temporal.io/sdk/temporal"

	"ctxlab/activities/llm"
	"ctxlab/activities/llm/offline"
	"ctxlab/specs"
)

// newProvider returns the provider of a model: the offline stand-in, or the openai provider against the endpoint the
// environment names (OPENAI_BASE_URL, OPENAI_API_KEY). Tests replace it.
var newProvider = func(a *Activities, m specs.Model, tokenizer string) (llm.Provider, error) {
	switch m.Provider {
	case "offline":
		return offline.Provider{Tokenizer: tokenizer}, nil
	case "openai":
		return llm.NewOpenAI(m, llm.WithLogger(a.Log))
	}
	return nil, permanentf(ErrUnsupported, "model %s: provider %q is not available in this build (offline, openai)",
		m.Name, m.Provider)
}

// Prompt is a chat prompt from the spec: Go text/template texts filled per instance (see each activity for the
// fields it offers). Formats holds the edit-format instructions of the patch prompt, by format name.
type Prompt struct {
	System  string            `json:"system"`
	User    string            `json:"user"`
	Formats map[string]string `json:"formats,omitempty"`
}

// render fills the prompt's templates with data.
func (p Prompt) render(step string, data any) ([]llm.Message, error) {
	if p.User == "" {
		return nil, permanentf(ErrBadInput, "%s: params.prompt.user is empty (ctxlab.libsonnet's steps set it)", step)
	}
	var msgs []llm.Message
	for _, part := range []struct{ role, text string }{{"system", p.System}, {"user", p.User}} {
		if part.text == "" {
			continue
		}
		t, err := template.New(part.role).Option("missingkey=error").Parse(part.text)
		if err != nil {
			return nil, permanentf(ErrBadInput, "%s: %s prompt: %v", step, part.role, err)
		}
		var b bytes.Buffer
		if err := t.Execute(&b, data); err != nil {
			return nil, permanentf(ErrBadInput, "%s: %s prompt: %v", step, part.role, err)
		}
		msgs = append(msgs, llm.Message{Role: part.role, Content: b.String()})
	}
	return msgs, nil
}

// callModel sends one request to the model and returns its answer and the row fields it adds (model_calls,
// prompt_tokens, completion_tokens, cost_usd; the Issue workflow sums them over a row's steps). Failures a retry
// can fix (429, 5xx, timeouts, broken answers) come back as ordinary errors, so Temporal retries the activity;
// context-length, authentication, quota and other request errors are non-retryable with the failure's kind as
// their type, which the row's error records.
func (j *job) callModel(ctx context.Context, mp modelParams, req llm.Request) (llm.Response, map[string]any, error) {
	m := sampleModel(mp.Model, req.Sample, mp.Temperature)
	p, err := newProvider(j.a, m, mp.tokenizer())
	if err != nil {
		if isPermanent(err) {
			return llm.Response{}, nil, err
		}
		return llm.Response{}, nil, modelError(j.in.Step, m, err)
	}
	resp, err := p.Complete(ctx, req)
	if err != nil {
		return llm.Response{}, nil, modelError(j.in.Step, m, err)
	}
	if resp.CostUSD == 0 {
		resp.CostUSD = llm.Cost(resp.Usage, m.Price)
	}
	return resp, map[string]any{
		"model_calls":       1,
		"prompt_tokens":     resp.Usage.PromptTokens,
		"completion_tokens": resp.Usage.CompletionTokens,
		"cost_usd":          resp.CostUSD,
	}, nil
}

// sampleModel is the model a sample is drawn from: a step's temperature, when it sets one, replaces the model's, and
// sample n adds n to the model's seed, so that independent samples are not the same request.
func sampleModel(m specs.Model, sample int, temperature *float64) specs.Model {
	if temperature != nil {
		t := *temperature
		m.Temperature = &t
	}
	if m.Seed != nil && sample != 0 {
		s := *m.Seed + int64(sample)
		m.Seed = &s
	}
	return m
}

// modelError maps a provider failure to an activity error.
func modelError(step string, m specs.Model, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	kind := llm.KindOf(err)
	msg := fmt.Sprintf("%s: model %s: %v", step, m.Name, err)
	if kind.Retryable() {
		return errors.New(msg)
	}
	return temporal.NewNonRetryableApplicationError(msg, string(kind), nil)
}

// modelParams are the parameters every model-calling step has; Model and Tokenizer are filled in by the plan.
type modelParams struct {
	Model     specs.Model `json:"model"`
	Tokenizer string      `json:"tokenizer"`
	Prompt    Prompt      `json:"prompt"`
	// Sample numbers independent samples of the same prompt.
	Sample int `json:"sample"`
	// Temperature, when set, overrides the model's for this step (localization samples must differ).
	Temperature *float64 `json:"temperature,omitempty"`
}

func (p modelParams) tokenizer() string {
	if p.Tokenizer == "" {
		return "o200k_base"
	}
	return p.Tokenizer
}
