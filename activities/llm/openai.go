package llm

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"ctxlab/activities/api/errkind"
	"ctxlab/internal/listing"
	"ctxlab/internal/offlinetask"
	"ctxlab/specs"
)

// The openai provider (specs.OpenAI): chat completions against the endpoint OPENAI_BASE_URL names (default OpenAI's
// API) with the key in OPENAI_API_KEY. The model ID, temperature, max tokens and seed come from the spec's model;
// the price table turns usage into cost. An unset or empty key is errkind.Auth naming the variable, unless the endpoint
// is on a loopback host (localhost, 127.0.0.0/8, ::1): local servers (llama.cpp, vLLM, Ollama) commonly need no key,
// and then no Authorization header is sent. The client's own retries are off: the retry loop tries 429, 5xx,
// timeouts, broken connections and malformed bodies again. Its context window (window.go), the shared context of a
// llama.cpp server's slots (capacity.go), its tokenizer (tokenize.go) and native tools (tools.go) live beside it.
func init() {
	Register(specs.OpenAI, Implementation{New: newOpenAI, Usage: usageOf, Errors: OpenAICompatibleErrors,
		MaxTokens: MaxTokensCap, Window: DiscoverWindow, Counter: EndpointCounter, Check: checkOpenAI})
}

// openAIClient calls the chat completions API of an OpenAI-compatible endpoint.
type openAIClient struct {
	model specs.Model
	cfg   Config
	chat  openai.ChatCompletionService
	ep    Endpoint
	// completionTokensField: OpenAI's own API wants max_completion_tokens (its reasoning models refuse
	// max_tokens); other OpenAI-compatible servers widely understand only max_tokens.
	completionTokensField bool
}

func newOpenAI(m specs.Model, cfg Config) (Client, error) {
	ep, err := ReadEndpoint(specs.OpenAI)
	if err != nil {
		return nil, err
	}
	ropts := append(ep.Options(cfg.HTTPClient), option.WithMaxRetries(0))
	return &openAIClient{
		model:                 m,
		cfg:                   cfg,
		chat:                  openai.NewChatCompletionService(ropts...),
		ep:                    ep,
		completionTokensField: ep.Host == hostOf(specs.OpenAI.Env.DefaultBaseURL),
	}, nil
}

// Options are the openai-go request options for the endpoint; without a key no Authorization header is sent.
func (e Endpoint) Options(h *http.Client) []option.RequestOption {
	opts := []option.RequestOption{option.WithBaseURL(e.Base)}
	if h != nil {
		opts = append(opts, option.WithHTTPClient(h))
	}
	if e.key != "" {
		opts = append(opts, option.WithAPIKey(e.key))
	}
	return opts
}

// Prepare builds the request every attempt sends, and the call's place in the server's shared context.
func (p *openAIClient) Prepare(ctx context.Context, req Request) (Attempt, *Error) {
	params, reserve, perr := p.params(ctx, req)
	if perr != nil {
		return Attempt{}, perr
	}
	slots := &slotGate{reserve: reserve, slot: req.Context}
	if reserve > 0 { // 0: the server's context is unknown, and nothing is gated
		slots.shared = sharedContextOf(p.ep.Base)
	}
	return Attempt{slots: slots, Send: func(ctx context.Context) (Response, *Error, time.Duration) {
		return p.ep.Exchange(ctx, p.cfg.CallTimeout, p.model.Price, p.send(req.Task, params))
	}}, nil
}

func (p *openAIClient) params(ctx context.Context, req Request) (params openai.ChatCompletionNewParams,
	reserve int, perr *Error) {
	params = openai.ChatCompletionNewParams{Model: p.model.ID}
	if len(req.Messages) == 0 {
		return params, 0, &Error{Kind: errkind.BadRequest, Msg: "the request has no messages"}
	}
	messages := req.Messages
	if len(req.Tools) > 0 { // native tool calling: the plain-text tool protocol translated (tools.go)
		var terr *Error
		if params.Messages, params.Tools, terr = toolMessages(req); terr != nil {
			return params, 0, terr
		}
		messages = nil
	}
	for i, m := range messages {
		switch m.Role {
		case "system":
			params.Messages = append(params.Messages, openai.SystemMessage(m.Content))
		case "developer":
			params.Messages = append(params.Messages, openai.DeveloperMessage(m.Content))
		case "user":
			params.Messages = append(params.Messages, openai.UserMessage(m.Content))
		case "assistant":
			params.Messages = append(params.Messages, openai.AssistantMessage(m.Content))
		default:
			return params, 0, &Error{Kind: errkind.BadRequest, Msg: fmt.Sprintf("message %d has role %q (want system, developer, user or assistant)", i+1, m.Role)}
		}
	}
	if p.model.Temperature != nil {
		params.Temperature = openai.Float(*p.model.Temperature)
	}
	maxTokens, reserve, ferr := p.fitMaxTokens(ctx, req)
	if ferr != nil {
		return params, 0, ferr
	}
	if maxTokens > 0 {
		if p.completionTokensField {
			params.MaxCompletionTokens = openai.Int(int64(maxTokens))
		} else {
			params.MaxTokens = openai.Int(int64(maxTokens))
		}
	}
	if p.model.Seed != nil {
		params.Seed = openai.Int(*p.model.Seed)
	}
	return params, reserve, nil
}

// send is one chat completion through the SDK.
func (p *openAIClient) send(task string, params openai.ChatCompletionNewParams) func(context.Context, **http.Response) (Reply, error) {
	return func(actx context.Context, hres **http.Response) (Reply, error) {
		ropts := []option.RequestOption{option.WithResponseInto(hres), option.WithMiddleware(capAnswer)}
		if task != "" {
			ropts = append(ropts, option.WithHeader(offlinetask.TaskHeader, task))
		}
		res, err := p.chat.New(actx, params, ropts...)
		switch {
		case err != nil:
			return Reply{}, err
		case res == nil:
			return Reply{Missing: "the completion has no choices"}, nil
		case len(res.Choices) == 0:
			return Reply{Body: []byte(res.RawJSON()), Missing: "the completion has no choices"}, nil
		}
		return Reply{Body: []byte(res.RawJSON()), Text: answerWithToolCalls(res.Choices[0].Message), Model: res.Model}, nil
	}
}

// checkOpenAI asks the endpoint whether it serves m's id (GET /v1/models) and how large its context is, with a
// count of a text in the server's own tokens where the server is llama.cpp (POST /tokenize).
func checkOpenAI(ctx context.Context, m specs.Model, timeout time.Duration) ModelCheck {
	ep, err := ReadEndpoint(specs.OpenAI)
	if err != nil {
		return ModelCheck{Problem: errorText(err)}
	}
	client := openai.NewClient(append(ep.Options(&http.Client{Timeout: timeout}), option.WithMaxRetries(0))...)
	var list modelList
	var hres *http.Response
	if err := client.Get(ctx, "models", nil, &list, option.WithResponseInto(&hres)); err != nil {
		le := ep.Classify(ctx, ctx, hres, err, 0)
		switch {
		case le.Status == http.StatusNotFound:
			return ModelCheck{Host: ep.Host, Note: fmt.Sprintf("the endpoint at %s has no /v1/models: the model id is "+
				"not checked", ep.Host)}
		case le.Kind == errkind.Auth:
			return ModelCheck{Host: ep.Host, Problem: fmt.Sprintf("the endpoint at %s refuses the key (HTTP %d)",
				ep.Host, le.Status), Fix: "export the right key in " + specs.OpenAI.Env.Key}
		}
		return ModelCheck{Host: ep.Host, Problem: fmt.Sprintf("the endpoint at %s does not answer GET /v1/models: %s",
			ep.Host, errorText(le)), Fix: "start the server, or point " + specs.OpenAI.Env.BaseURL + " at one"}
	}
	id := cmp.Or(m.ID, m.Name)
	if !list.serves(id) {
		return ModelCheck{Host: ep.Host, Problem: fmt.Sprintf("the endpoint at %s does not serve model id %q (it "+
			"serves %s)", ep.Host, id, listing.Some(list.ids(), 10)), Fix: "set the model's id to one it serves"}
	}
	c := ModelCheck{Served: true, Host: ep.Host, Window: DiscoverWindow(ctx, id)}
	if c.Window.LlamaCpp() {
		c.Count = func(text string) (int, error) {
			var out struct {
				Tokens []json.RawMessage `json:"tokens"`
			}
			if err := client.Post(ctx, "tokenize", map[string]any{"content": text}, &out,
				option.WithBaseURL(Root(ep.Base))); err != nil {
				return 0, err
			}
			return len(out.Tokens), CheckTextTokens("POST /tokenize", len(out.Tokens), text)
		}
	}
	return c
}

// modelList is GET /v1/models as OpenAI, vLLM and llama.cpp answer it.
type modelList struct {
	Data []struct {
		ID      string   `json:"id"`
		Aliases []string `json:"aliases"` // llama.cpp
	} `json:"data"`
}

func (l modelList) serves(id string) bool {
	for _, e := range l.Data {
		if e.ID == id || slices.Contains(e.Aliases, id) {
			return true
		}
	}
	return false
}

func (l modelList) ids() []string {
	var out []string
	for _, e := range l.Data {
		out = append(out, e.ID)
	}
	return out
}

// errorText is an error's text without the "model call failed" frame of *Error.
func errorText(err error) string {
	var le *Error
	if errors.As(err, &le) {
		if le.Status != 0 {
			return fmt.Sprintf("HTTP %d: %s", le.Status, le.Msg)
		}
		return le.Msg
	}
	return err.Error()
}
