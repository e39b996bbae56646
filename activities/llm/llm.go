// Package llm is the one interface every model provider implements, and their registry. A provider answers a chat
// request with text and its token usage; the activities build prompts and parse answers, so every provider goes
// through the same prompt and parsing code. Each provider is declared in specs (specs/provider_NAME.go) and its
// implementation registered here against the declaration (Register): openai (openai.go, any OpenAI-compatible
// endpoint), anthropic (anthropic.go, Anthropic's Messages API), offline (activities/llm/offline, a deterministic
// stand-in that is not a language model) and replay (activities/llm/replay, a finished run's recorded answers). New
// puts every client behind the one retry loop (retry.go).
package llm

import (
	"context"
	"errors"
	"fmt"
	"time"

	"ctxlab/activities/api/errkind"
	"ctxlab/specs"
)

// Message is one chat message.
type Message struct {
	Role    string `json:"role"` // system, user or assistant
	Content string `json:"content"`
}

// Request is one model call.
type Request struct {
	// Task is what the request is for, as its kind declares it (specs.Kind.Task, e.g. specs.Localize.Task): a
	// language model reads the prompt; the offline stand-in answers by task.
	Task     string    `json:"task"`
	Messages []Message `json:"messages"`
	// Sample numbers independent samples of the same prompt (0, 1, 2, ...): it seeds the offline stand-in, and a
	// response cache keys on it so that two samples are two calls.
	Sample int `json:"sample"`
	// Tools, when set, are offered as native function tools; the conversation stays in the plain-text tool protocol,
	// which the openai and anthropic providers translate both ways (tools.go, anthropic.go). Others ignore them.
	Tools []Tool `json:"tools,omitempty"`
	// Offline carries what the offline stand-in reads instead of the prompt (see package offline). It is never
	// sent to a remote model and never serialized.
	Offline any `json:"-"`
	// Context is the model's context window as its endpoint reported it (DiscoverWindow; 0: unknown), and
	// ContextSource where it was read: the openai provider fits max_tokens into it beside the prompt.
	Context       int    `json:"-"`
	ContextSource string `json:"-"`
}

// Usage is the token usage a provider reports for a call. PromptTokens counts every input token, those read from
// and written to the provider's prompt cache included (OpenAI's prompt_tokens; Anthropic's input_tokens plus its
// cache reads and writes).
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	// CachedTokens are the input tokens read from the prompt cache (OpenAI's prompt_tokens_details.cached_tokens,
	// Anthropic's cache_read_input_tokens), priced at the table's cached_input.
	CachedTokens int `json:"cached_tokens,omitempty"`
	// CacheWriteTokens are the input tokens written to the prompt cache (Anthropic's cache_creation_input_tokens),
	// priced at the table's cache_write.
	CacheWriteTokens int `json:"cache_write_tokens,omitempty"`
}

// Response is a model's answer.
type Response struct {
	Text  string `json:"text"`
	Usage Usage  `json:"usage"`
	// CostUSD is the usage priced with the spec's price table.
	CostUSD float64 `json:"cost_usd"`
	// Model is the model that answered, as the endpoint names it.
	Model string `json:"model,omitempty"`
}

// Provider answers requests for one model.
type Provider interface {
	Complete(ctx context.Context, req Request) (Response, error)
}

// Error is a failed call, of a kind from package errkind (below both the activities and the workflows, which act on
// a failure's kind without importing the model clients). Its message never contains the API key.
type Error struct {
	Kind   errkind.Kind
	Status int // HTTP status, 0 when there was none
	Msg    string
	Err    error
	// RetryAfter is the wait the endpoint asked for when it is longer than a call waits in-process: the caller
	// should come back after it (0 otherwise).
	RetryAfter time.Duration
	// Paid is the usage of answers the endpoint sent, and so billed, that were no use (a 200 without choices): the
	// caller counts it as spend.
	Paid Usage
	// typ is the error's type as the body named it; fromBody says Msg is the body's error message, not a status
	// text or a page (see deterministic).
	typ      string
	fromBody bool
}

func (e *Error) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("model call failed (%s, HTTP %d): %s", e.Kind, e.Status, e.Msg)
	}
	return fmt.Sprintf("model call failed (%s): %s", e.Kind, e.Msg)
}

func (e *Error) Unwrap() error { return e.Err }

// KindOf returns the kind of a failed call; errors that are not *Error are errkind.BadResponse.
func KindOf(err error) errkind.Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return errkind.BadResponse
}

// Add returns the sum of two usages.
func (u Usage) Add(v Usage) Usage {
	return Usage{PromptTokens: u.PromptTokens + v.PromptTokens, CompletionTokens: u.CompletionTokens + v.CompletionTokens,
		CachedTokens: u.CachedTokens + v.CachedTokens, CacheWriteTokens: u.CacheWriteTokens + v.CacheWriteTokens}
}

// PaidOf is the usage a failed call was billed for (Error.Paid), zero for other errors.
func PaidOf(err error) Usage {
	var e *Error
	if errors.As(err, &e) {
		return e.Paid
	}
	return Usage{}
}

// Cost prices a call's usage with a price table in dollars per million tokens.
func Cost(u Usage, p specs.Price) float64 {
	in, cached, out := CostParts(u, p)
	return in + cached + out
}

// CostParts splits a call's cost: input (plain input tokens, and those written to the prompt cache at its write
// price), cached input (tokens read from the cache at its price) and output.
func CostParts(u Usage, p specs.Price) (input, cached, output float64) {
	plain := max(u.PromptTokens-u.CachedTokens-u.CacheWriteTokens, 0)
	input = float64(plain) * p.Input / 1e6
	if u.CacheWriteTokens > 0 {
		input += float64(u.CacheWriteTokens) * p.CacheWritePrice() / 1e6
	}
	if u.CachedTokens > 0 {
		cached = float64(u.CachedTokens) * p.CachedInputPrice() / 1e6
	}
	return input, cached, float64(u.CompletionTokens) * p.Output / 1e6
}
