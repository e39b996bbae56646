// Package llm is the one interface every model provider implements. A provider answers a chat request with text
// and its token usage; the activities build prompts and parse answers, so every provider goes through the same
// prompt and parsing code. Providers: openai (this package, any OpenAI-compatible endpoint) and offline
// (activities/llm/offline, a deterministic stand-in that is not a language model).
package llm

import (
	"context"
	"errors"
	"fmt"
	"time"

	"ctxlab/specs"
)

// Tasks a request can be for. A language model reads the prompt; the offline stand-in answers by task.
const (
	TaskLocalize = "localize" // a ranked list of the files to edit
	TaskEvidence = "evidence" // a plan of searches over the repository
	TaskPatch    = "patch"    // an edit, as a unified diff or search/replace blocks
)

// Message is one chat message.
type Message struct {
	Role    string `json:"role"` // system, user or assistant
	Content string `json:"content"`
}

// Request is one model call.
type Request struct {
	Task     string    `json:"task"`
	Messages []Message `json:"messages"`
	// Sample numbers independent samples of the same prompt (0, 1, 2, ...): it seeds the offline stand-in, and a
	// response cache keys on it so that two samples are two calls.
	Sample int `json:"sample"`
	// Tools, when set, are offered as native function tools; the conversation stays in the plain-text tool protocol,
	// which the openai provider translates both ways (tools.go). Other providers ignore them.
	Tools []Tool `json:"tools,omitempty"`
	// Offline carries what the offline stand-in reads instead of the prompt (see package offline). It is never
	// sent to a remote model and never serialized.
	Offline any `json:"-"`
}

// Usage is the token usage a provider reports for a call.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
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

// Kind classifies a failed call.
type Kind string

// Kinds of failure. Retryable ones are worth another attempt after a backoff.
const (
	KindRateLimit     Kind = "rate_limit"     // 429
	KindServer        Kind = "server"         // 5xx
	KindTimeout       Kind = "timeout"        // no answer in time, or the connection broke
	KindContextLength Kind = "context_length" // the prompt does not fit the model: retrying cannot help
	KindAuth          Kind = "auth"           // 401/403: a missing or wrong key
	KindQuota         Kind = "quota"          // 429 insufficient_quota: the account is out of credit
	KindBadRequest    Kind = "bad_request"    // another 4xx
	KindBadResponse   Kind = "bad_response"   // the endpoint answered with something that is not a completion
)

// Known reports whether s names one of the kinds above.
func Known(s string) bool {
	switch Kind(s) {
	case KindRateLimit, KindServer, KindTimeout, KindContextLength, KindAuth, KindQuota, KindBadRequest,
		KindBadResponse:
		return true
	}
	return false
}

// Retryable reports whether a call that failed this way is worth retrying.
func (k Kind) Retryable() bool {
	switch k {
	case KindRateLimit, KindServer, KindTimeout, KindBadResponse:
		return true
	}
	return false
}

// KindLostWorker is not a call's kind: a node whose every attempt lost its worker (killed, or stopped mid-run) is
// recorded with it.
const KindLostWorker Kind = "lost_worker"

// Class says whose failure a kind of error is, which decides what a re-run of a finished sweep does with its row.
type Class string

// Classes of failure.
const (
	// ClassInfrastructure: the endpoint or the network (rate limits, server errors, timeouts, broken connections and
	// answers, lost workers). Never the model's failure: the sweep waits and retries, and a re-run retries the row.
	ClassInfrastructure Class = "infrastructure"
	// ClassConfiguration: the key or the account (auth, quota). Not the model's failure either: a re-run, once the
	// key or the credit is fixed, retries the row; retrying before that cannot help, so a sweep does not.
	ClassConfiguration Class = "configuration"
	// ClassModel: the model's own failure or its answer's (a prompt too long for it, a rejected request, an answer
	// that does not parse, a patch that does not apply) and any other step failure: final, a re-run keeps the row.
	ClassModel Class = "model"
)

// ClassOf classifies an error kind as rows record it (a Kind, "timeout", "lost_worker", or anything else).
func ClassOf(kind string) Class {
	switch Kind(kind) {
	case KindRateLimit, KindServer, KindTimeout, KindBadResponse, KindLostWorker:
		return ClassInfrastructure
	case KindAuth, KindQuota:
		return ClassConfiguration
	}
	return ClassModel
}

// RetriedOnRerun reports whether a re-run of a finished sweep retries a row whose error is of this class.
func (c Class) RetriedOnRerun() bool { return c != ClassModel }

// Error is a failed call. Its message never contains the API key.
type Error struct {
	Kind   Kind
	Status int // HTTP status, 0 when there was none
	Msg    string
	Err    error
	// RetryAfter is the wait the endpoint asked for when it is longer than a call waits in-process: the caller
	// should come back after it (0 otherwise).
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("model call failed (%s, HTTP %d): %s", e.Kind, e.Status, e.Msg)
	}
	return fmt.Sprintf("model call failed (%s): %s", e.Kind, e.Msg)
}

func (e *Error) Unwrap() error { return e.Err }

// KindOf returns the kind of a failed call; errors that are not *Error are KindBadResponse.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return KindBadResponse
}

// Cost prices a call's usage with a price table in dollars per million tokens.
func Cost(u Usage, p specs.Price) float64 {
	return float64(u.PromptTokens)*p.Input/1e6 + float64(u.CompletionTokens)*p.Output/1e6
}
