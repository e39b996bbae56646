package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"ctxlab/activities/api/errkind"
	"ctxlab/activities/tokens"
	"ctxlab/specs"
)

// DefaultMaxTokens caps an answer when the spec's model sets no max_tokens and the endpoint is a local server or
// says how large its context is: 4,096 tokens, a few times the largest patch of SWE-bench Verified's gold patches,
// and the cap ctxlab.models.openai has always set. A remote endpoint that says nothing of its context keeps its
// own default (OpenAI's API: each model's output limit).
const DefaultMaxTokens = 4096

// Window is a model's context window as its endpoint reports it.
type Window struct {
	Tokens int    `json:"tokens"` // 0: the endpoint does not say
	Source string `json:"source"` // where it was read: "llama.cpp /props", "llama.cpp /slots", "/v1/models max_model_len", ...
	// Slots is how many requests a llama.cpp server serves at once (/props total_slots, or /slots), each with a
	// context of Tokens, all sharing one cache the server does not report (sharedContext); 0 when not said.
	Slots int `json:"slots,omitempty"`
}

// LlamaCpp reports whether the window was read from a llama.cpp server, which counts prompts with its own
// /apply-template and /tokenize.
func (w Window) LlamaCpp() bool { return llamaSource(w.Source) }

// Where says where the window was read, for a reader.
func (w Window) Where() string {
	switch w.Source {
	case "llama.cpp /props":
		return "llama.cpp's /props, per slot"
	case "llama.cpp /slots":
		return "llama.cpp's /slots, per slot"
	case "/v1/models max_model_len":
		return "vLLM's max_model_len in /v1/models"
	case "/v1/models meta.n_ctx":
		return "llama.cpp's /v1/models"
	case "/v1/models context_length":
		return "context_length in /v1/models"
	}
	return w.Source
}

func llamaSource(source string) bool {
	return strings.HasPrefix(source, "llama.cpp") || strings.HasSuffix(source, "meta.n_ctx")
}

// MaxTokensCap is the answer cap a call asks for: the spec's max_tokens, else DefaultMaxTokens when the endpoint is
// on this machine or reports its context (window > 0), else none (0). The provider lowers it further to what the
// context leaves beside the prompt (fitMaxTokens); the response cache keys on it and on the window, which together
// decide what is sent.
func MaxTokensCap(specMax int, base string, window int) int {
	if specMax > 0 {
		return specMax
	}
	if window > 0 || isLoopback(hostOf(base)) {
		return DefaultMaxTokens
	}
	return 0
}

func hostOf(base string) string {
	u, err := url.Parse(base)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

// rootOf is the server's root URL for a base URL of its OpenAI-compatible API: llama.cpp's /props, /slots,
// /tokenize and /apply-template, and vLLM's /tokenize, live beside /v1, not under it.
func rootOf(base string) string {
	return strings.TrimSuffix(strings.TrimSuffix(base, "/"), "/v1")
}

// windowTTL is how long a process trusts a window it read: a local server restarted with another -c is seen within
// it.
const windowTTL = time.Minute

var windows sync.Map // base + "\x00" + model id -> windowEntry

type windowEntry struct {
	w  Window
	at time.Time
}

// probeClient bounds every request made to learn about the endpoint (its context, a prompt's tokens): they are
// answered at once by a server that has them, and one that has none must not hold a call up.
var probeClient = &http.Client{Timeout: 5 * time.Second}

// DiscoverWindow asks the endpoint OPENAI_BASE_URL names how large the model's context is, per request: llama.cpp's
// /props (default_generation_settings.n_ctx, each slot's, and total_slots) or /slots (the smallest slot's n_ctx),
// else the model's entry in /v1/models (vLLM's max_model_len, OpenRouter's context_length, llama.cpp's meta.n_ctx).
// The key, when set, is sent as it is with calls; nothing it returns is stored but the numbers. A server that says nothing, or does not answer, gives
// Window{} (remembered for a minute like an answer).
func DiscoverWindow(ctx context.Context, modelID string) Window {
	base := baseURLOf(specs.OpenAI)
	k := base + "\x00" + modelID
	if e, ok := windows.Load(k); ok && time.Since(e.(windowEntry).at) < windowTTL {
		return e.(windowEntry).w
	}
	ep := Endpoint{Base: base, key: strings.TrimSpace(os.Getenv(specs.OpenAI.Env.Key))}
	w := ep.discover(ctx, modelID)
	windows.Store(k, windowEntry{w: w, at: time.Now()})
	return w
}

func (e Endpoint) discover(ctx context.Context, modelID string) Window {
	root := rootOf(e.Base)
	var props struct {
		Default struct {
			NCtx int `json:"n_ctx"`
		} `json:"default_generation_settings"`
		TotalSlots int `json:"total_slots"`
	}
	if e.getJSON(ctx, root+"/props", &props) && props.Default.NCtx != 0 {
		return windowOf(props.Default.NCtx, props.TotalSlots, "llama.cpp /props")
	}
	var slots []struct {
		NCtx int `json:"n_ctx"`
	}
	if e.getJSON(ctx, root+"/slots", &slots) && len(slots) > 0 {
		least := 0
		for _, s := range slots {
			if s.NCtx != 0 && (least == 0 || s.NCtx < least) {
				least = s.NCtx
			}
		}
		if least != 0 {
			return windowOf(least, len(slots), "llama.cpp /slots")
		}
	}
	var models struct {
		Data []struct {
			ID            string `json:"id"`
			MaxModelLen   int    `json:"max_model_len"`
			ContextLength int    `json:"context_length"`
			Meta          struct {
				NCtx int `json:"n_ctx"`
			} `json:"meta"`
		} `json:"data"`
	}
	if !e.getJSON(ctx, strings.TrimSuffix(e.Base, "/")+"/models", &models) {
		return Window{}
	}
	for _, m := range models.Data {
		// A server of one model (llama.cpp) answers to any id; one of several must list the spec's.
		if m.ID != modelID && len(models.Data) != 1 {
			continue
		}
		switch {
		case m.MaxModelLen != 0:
			return windowOf(m.MaxModelLen, 0, "/v1/models max_model_len")
		case m.Meta.NCtx != 0:
			return windowOf(m.Meta.NCtx, 0, "/v1/models meta.n_ctx")
		case m.ContextLength != 0:
			return windowOf(m.ContextLength, 0, "/v1/models context_length")
		}
	}
	return Window{}
}

// getJSON GETs url and decodes a 200 answer into v.
func (e Endpoint) getJSON(ctx context.Context, url string, v any) bool {
	return e.doJSON(ctx, http.MethodGet, url, nil, v)
}

func (e Endpoint) doJSON(ctx context.Context, method, url string, body, v any) bool {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return false
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return false
	}
	req.Header.Set("Content-Type", "application/json")
	if e.key != "" {
		req.Header.Set("Authorization", "Bearer "+e.key)
	}
	res, err := probeClient.Do(req)
	if err != nil {
		return false
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return false
	}
	return json.NewDecoder(io.LimitReader(res.Body, 4<<20)).Decode(v) == nil
}

// promptTokens counts the tokens of a request's prompt as the server will: llama.cpp renders its chat template
// (/apply-template) and tokenizes that (/tokenize); vLLM tokenizes the messages (/tokenize); exact says the server
// counted. Otherwise it is an estimate: the spec's tokenizer's count, a quarter more, and 16 tokens a message for
// the template.
func (p *openAIClient) promptTokens(ctx context.Context, req Request, source string) (n int, exact bool) {
	root := rootOf(p.ep.Base)
	type msg struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	msgs := make([]msg, len(req.Messages))
	for i, m := range req.Messages {
		msgs[i] = msg{m.Role, m.Content}
	}
	tooled := len(req.Tools) > 0 // tool definitions add to the prompt in a way only the server knows
	switch {
	case llamaSource(source):
		var tmpl struct {
			Prompt string `json:"prompt"`
		}
		if p.ep.doJSON(ctx, http.MethodPost, root+"/apply-template", map[string]any{"messages": msgs}, &tmpl) &&
			tmpl.Prompt != "" {
			var tok struct {
				Tokens []json.RawMessage `json:"tokens"`
			}
			if p.ep.doJSON(ctx, http.MethodPost, root+"/tokenize",
				map[string]any{"content": tmpl.Prompt, "add_special": true, "parse_special": true}, &tok) &&
				textTokens("POST /tokenize", len(tok.Tokens), len(tmpl.Prompt)) == nil {
				return len(tok.Tokens), !tooled
			}
		}
	case strings.HasSuffix(source, "max_model_len"):
		var tok struct {
			Count int `json:"count"`
		}
		if p.ep.doJSON(ctx, http.MethodPost, root+"/tokenize",
			map[string]any{"model": p.model.ID, "messages": msgs, "add_generation_prompt": true}, &tok) &&
			renderedTokens(tok.Count, req.Messages) {
			return tok.Count, !tooled
		}
	}
	for _, m := range req.Messages {
		c, err := tokens.Count(p.cfg.Tokenizer, m.Content)
		if err != nil {
			c = len(m.Content) // a byte a token: never fewer tokens than that for the tokenizers in use
		}
		n += c + c/4 + 16
	}
	for _, t := range req.Tools {
		b, _ := json.Marshal(t)
		n += len(b) / 3
	}
	return n, false
}

// fitMaxTokens is the max_tokens a call sends: the cap (MaxTokensCap), lowered to what the model's context leaves
// beside the prompt when the endpoint reported its context, so a server is never asked for an answer that cannot
// fit (vLLM refuses it with a 400; llama.cpp stops at its slot's end). A prompt the server itself counted at or past
// the whole context fails here, as the server would, without a call. reserve is what the call may use of the
// server's context, its prompt and its answer (0 when the context is unknown): what it holds of a context the
// server's slots share (sharedContext).
func (p *openAIClient) fitMaxTokens(ctx context.Context, req Request) (maxTokens, reserve int, err *Error) {
	limit := MaxTokensCap(p.model.MaxTokens, p.ep.Base, req.Context)
	if req.Context <= 0 {
		return limit, 0, nil
	}
	n, exact := p.promptTokens(ctx, req, req.ContextSource)
	left := req.Context - n
	switch {
	case exact && left <= 0:
		return 0, 0, &Error{Kind: errkind.ContextLength, Msg: fmt.Sprintf("the prompt is %d tokens (counted by the "+
			"server), the model's context %d tokens (%s): it cannot fit", n, req.Context, req.ContextSource)}
	case left > 0 && (limit == 0 || left < limit):
		limit = left
	}
	if limit <= 0 {
		return limit, 0, nil
	}
	return limit, n + limit, nil
}
