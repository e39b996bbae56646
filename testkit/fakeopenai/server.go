// Package fakeopenai is a small OpenAI-compatible HTTP server for tests and the demo: chat completions with a
// configurable (by default deterministic, prompt-derived) answer, token usage, call counters, failure injection,
// and embeddings computed from a hash of the input. It never stores an API key: it records whether an
// Authorization header came, and a SHA-256 of it.
package fakeopenai

import (
	"cmp"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"

	"ctxlab/internal/offlinetask"
)

// Failure is a way an injected call fails.
type Failure int

// Failures the server can inject.
const (
	RateLimit     Failure = iota + 1 // 429 with Retry-After and retry-after-ms
	ServerError                      // 500 with an OpenAI-style error body
	Malformed                        // 200 whose JSON body is cut off
	ContextLength                    // 400 with code context_length_exceeded
	Unauthorized                     // 401 whose message echoes the Authorization header back, as careless servers do
	Quota                            // 429 with code insufficient_quota
	BadGateway                       // 502 with an HTML body
	Hang                             // no answer until the client gives up (at most 10s), then 504
	EchoKey                          // 400 whose message holds the bare bearer token, without the word "Bearer"
	QuotaIn200                       // 200 whose body is an insufficient_quota error, as some gateways send it
	NoChoices                        // 200 with no choices but its usage (100 prompt, 50 completion tokens): billed, no answer
	// BilledContextLength is a 200 whose body is a context_length_exceeded error beside its usage (1,000 prompt
	// tokens), as a gateway that bills the prompt it could not finish sends it: billed, and final (a model error).
	BilledContextLength
)

// Message is one chat message. Content given as an array of text parts is joined.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// UnmarshalJSON accepts content as a string or as [{"type": "text", "text": ...}] parts.
func (m *Message) UnmarshalJSON(data []byte) error {
	var raw struct {
		Role      string          `json:"role"`
		Content   json.RawMessage `json:"content"`
		ToolCalls []struct {
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	m.Role = raw.Role
	m.Content = ""
	// An assistant's native tool calls read as the plain-text protocol, so prompt answers see every call.
	for _, tc := range raw.ToolCalls {
		c := offlinetask.AgentCall{Tool: tc.Function.Name}
		_ = json.Unmarshal([]byte(tc.Function.Arguments), &c.Args)
		m.Content += offlinetask.FormatAgentCall(c)
	}
	if len(raw.Content) == 0 || string(raw.Content) == "null" {
		return nil
	}
	if len(raw.ToolCalls) > 0 {
		var text string
		if err := json.Unmarshal(raw.Content, &text); err == nil {
			m.Content = text + "\n" + m.Content
		}
		return nil
	}
	if err := json.Unmarshal(raw.Content, &m.Content); err == nil {
		return nil
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw.Content, &parts); err != nil {
		return fmt.Errorf("message content is neither a string nor text parts: %w", err)
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	m.Content = b.String()
	return nil
}

// ChatRequest is a chat completions request as the server read it.
type ChatRequest struct {
	Model               string    `json:"model"`
	Messages            []Message `json:"messages"`
	Temperature         *float64  `json:"temperature,omitempty"`
	MaxTokens           *int64    `json:"max_tokens,omitempty"`
	MaxCompletionTokens *int64    `json:"max_completion_tokens,omitempty"`
	Seed                *int64    `json:"seed,omitempty"`
	// Tools are the tools the request offers (OpenAI's function tools); with them, an answer that calls a tool in
	// the plain-text protocol is sent as a native tool call.
	Tools json.RawMessage `json:"tools,omitempty"`
	// TaskName is the X-Ctxlab-Task header ("" when absent).
	TaskName string `json:"-"`
}

// Prompt is the text of every message, in order, separated by blank lines.
func (r ChatRequest) Prompt() string {
	parts := make([]string, len(r.Messages))
	for i, m := range r.Messages {
		parts[i] = m.Content
	}
	return strings.Join(parts, "\n\n")
}

// Task is the task the request is for: the X-Ctxlab-Task header when it came, else a guess from the prompt
// by the markers tasks register with internal/offlinetask ("localize", "evidence", "patch", or "" when none fits).
func (r ChatRequest) Task() string {
	if r.TaskName != "" {
		return r.TaskName
	}
	return offlinetask.Guess(r.Prompt())
}

// Server is the fake endpoint. It is safe for concurrent use.
type Server struct {
	answer     func(ChatRequest) string
	usage      *[2]int
	cached     int // prompt tokens reported as read from the prompt cache
	retryAfter time.Duration
	keyHash    *[32]byte
	dims       int
	echoKey    bool
	served     string // the model the answers name, when not the one asked for
	// models are listed by GET /models (nil: it answers 404, as endpoints without a model list do); maxModelLen is
	// the context window each entry gives as vLLM does (0: none).
	models      []string
	maxModelLen int

	mu         sync.Mutex
	failures   []Failure
	failWhen   func(ChatRequest) Failure
	calls      int
	perTask    map[string]int
	embeddings int
	inFlight   map[string]int // chat requests whose handler runs, by task; "" counts every task
	delays     map[string]time.Duration
	delayWhen  func(ChatRequest) time.Duration
	sawAuth    bool
	lastAuth   [32]byte
	requests   []ChatRequest
}

// Option configures New.
type Option func(*Server)

// WithAnswer sets the answer function (default DefaultAnswer).
func WithAnswer(f func(ChatRequest) string) Option { return func(s *Server) { s.answer = f } }

// WithUsage fixes the token usage every completion reports (default: about a token per four characters of the
// prompt and of the answer).
func WithUsage(prompt, completion int) Option {
	return func(s *Server) { s.usage = &[2]int{prompt, completion} }
}

// SetUsage fixes the token usage every completion reports from now on, like WithUsage, on a running server (any
// counts, negative ones included: a test of a client that must refuse them).
func (s *Server) SetUsage(prompt, completion int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.usage = &[2]int{prompt, completion}
}

// SetCachedTokens makes every completion from now on report n of its prompt tokens as read from the prompt cache
// (usage.prompt_tokens_details.cached_tokens, as OpenAI reports it); 0 reports none.
func (s *Server) SetCachedTokens(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cached = n
}

// WithFailures makes the next n chat calls fail with f; several WithFailures queue up in order.
func WithFailures(n int, f Failure) Option {
	return func(s *Server) {
		for range n {
			s.failures = append(s.failures, f)
		}
	}
}

// WithFailWhen makes every chat call that the queued failures (WithFailures) leave alone fail as f says (0: answer),
// so a test can fail chosen requests whatever order they come in.
func WithFailWhen(f func(ChatRequest) Failure) Option { return func(s *Server) { s.failWhen = f } }

// SetFailWhen replaces the WithFailWhen function on a running server; nil removes it.
func (s *Server) SetFailWhen(f func(ChatRequest) Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failWhen = f
}

// WithRetryAfter sets the wait a RateLimit failure asks for (default 10ms, sent as retry-after-ms, and rounded up
// to whole seconds as Retry-After).
func WithRetryAfter(d time.Duration) Option { return func(s *Server) { s.retryAfter = d } }

// WithKey makes the server require "Authorization: Bearer <key>"; other calls get a 401 that echoes the header.
// Only a SHA-256 of the expected header is kept.
func WithKey(key string) Option {
	return func(s *Server) {
		h := sha256.Sum256([]byte("Bearer " + key))
		s.keyHash = &h
	}
}

// WithDelay holds every chat answer for a task (see ChatRequest.Task) for d before it is written, so a test can act
// while such a call is in flight (InFlightFor). The wait ends early when the client goes away.
func WithDelay(task string, d time.Duration) Option {
	return func(s *Server) { s.delays[task] = d }
}

// SetDelayWhen holds each chat answer for as long as f says for its request (0: not at all), on top of its task's
// delay (WithDelay), so a test can hold chosen requests, such as every sample of a prompt but the first, whatever
// order they come in. Like a task's delay, the wait ends early when the client goes away. f is called outside the
// server's lock, once per request; nil removes it.
func (s *Server) SetDelayWhen(f func(ChatRequest) time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delayWhen = f
}

// WithEchoKey makes every successful chat answer carry the caller's bearer token, bare (without "Bearer "), inside
// the answer text and the model name, as a careless or hostile endpoint might: a client must scrub answers, not only
// errors. The token is echoed, never kept.
func WithEchoKey() Option { return func(s *Server) { s.echoKey = true } }

// WithServedModel makes every answer name model as the one that answered, whatever the request asked for (as
// OpenAI names a dated snapshot, or a router a substitute).
func WithServedModel(model string) Option { return func(s *Server) { s.served = model } }

// WithDimensions sets the length of embedding vectors (default 64) when a request does not ask for one.
func WithDimensions(n int) Option { return func(s *Server) { s.dims = n } }

// WithModels makes GET /models list these model ids (without it, the endpoint has no model list: 404). With
// maxModelLen > 0 each entry carries it as vLLM's max_model_len, the model's context window.
func WithModels(maxModelLen int, ids ...string) Option {
	return func(s *Server) { s.models, s.maxModelLen = ids, maxModelLen }
}

// New returns a fake endpoint; serve it with httptest.NewServer(s) and point OPENAI_BASE_URL at its URL + "/v1".
func New(opts ...Option) *Server {
	s := &Server{answer: DefaultAnswer, retryAfter: 10 * time.Millisecond, dims: 64, perTask: map[string]int{},
		inFlight: map[string]int{}, delays: map[string]time.Duration{}}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Fail queues failures for the next n chat calls, like WithFailures, on a running server.
func (s *Server) Fail(n int, f Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.failures = append(s.failures, f)
	}
}

// SetDelay changes a task's delay (see WithDelay) on a running server; 0 removes it. Calls already waiting keep
// the delay they started with.
func (s *Server) SetDelay(task string, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d <= 0 {
		delete(s.delays, task)
		return
	}
	s.delays[task] = d
}

// InFlight is the number of chat completion requests being handled now: received and not yet answered (a call
// the client gave up on counts until its handler returns).
func (s *Server) InFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inFlight[""]
}

// InFlightFor is InFlight for one task.
func (s *Server) InFlightFor(task string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inFlight[task]
}

// Calls is the number of chat completion requests received, failed ones included.
func (s *Server) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// CallsFor is the number of chat completion requests received for a task (see ChatRequest.Task).
func (s *Server) CallsFor(task string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.perTask[task]
}

// EmbeddingCalls is the number of embedding requests received.
func (s *Server) EmbeddingCalls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.embeddings
}

// SawAuthorization reports whether any request carried an Authorization header.
func (s *Server) SawAuthorization() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sawAuth
}

// LastAuthorizedWith reports whether the last Authorization header seen was "Bearer <key>" (checked by hash).
func (s *Server) LastAuthorizedWith(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sawAuth && s.lastAuth == sha256.Sum256([]byte("Bearer "+key))
}

// Requests returns the chat requests received, in order.
func (s *Server) Requests() []ChatRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ChatRequest(nil), s.requests...)
}

// ServeHTTP answers POST .../chat/completions and POST .../embeddings, with or without a /v1 prefix.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case strings.HasSuffix(r.URL.Path, "/chat/completions"):
		s.chat(w, r)
	case strings.HasSuffix(r.URL.Path, "/embeddings"):
		s.embed(w, r)
	case strings.HasSuffix(r.URL.Path, "/models") && r.Method == http.MethodGet:
		s.listModels(w, r)
	default:
		writeError(w, http.StatusNotFound, "invalid_request_error", "unknown_url", "no such endpoint: "+r.URL.Path)
	}
}

// authorize records the Authorization header (as a hash) and reports whether the call may go on; when it may not,
// the 401 is written.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) bool {
	auth := r.Header.Get("Authorization")
	s.mu.Lock()
	if auth != "" {
		s.sawAuth = true
		s.lastAuth = sha256.Sum256([]byte(auth))
	}
	ok := s.keyHash == nil || (auth != "" && s.lastAuth == *s.keyHash)
	s.mu.Unlock()
	if !ok {
		unauthorized(w, auth)
	}
	return ok
}

// listModels answers GET /models as OpenAI does (and vLLM, with max_model_len), after the key check.
func (s *Server) listModels(w http.ResponseWriter, r *http.Request) {
	if !s.authorize(w, r) {
		return
	}
	if s.models == nil {
		writeError(w, http.StatusNotFound, "invalid_request_error", "unknown_url", "no such endpoint: "+r.URL.Path)
		return
	}
	data := []map[string]any{}
	for _, id := range s.models {
		e := map[string]any{"id": id, "object": "model", "created": 0, "owned_by": "fakeopenai"}
		if s.maxModelLen > 0 {
			e["max_model_len"] = s.maxModelLen
		}
		data = append(data, e)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data})
}

func unauthorized(w http.ResponseWriter, auth string) {
	writeError(w, http.StatusUnauthorized, "invalid_request_error", "invalid_api_key",
		fmt.Sprintf("Incorrect API key provided in header %q.", auth))
}

// chat answers POST .../chat/completions: it counts the call, holds it as long as its delays say, then checks the
// key and answers with the injected failure or a completion.
func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		writeError(w, http.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed", "use POST")
		return
	}
	var req ChatRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		// A body cut short (its client killed while sending) is no call: a real endpoint bills none, and counting it
		// would make a killed sweep look as if it had asked a question it never finished asking.
		if s.authorize(w, r) {
			writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_json", "the body is not JSON: "+err.Error())
		}
		return
	}
	req.TaskName = r.Header.Get(offlinetask.TaskHeader)
	task, fail, delay := s.admit(req)
	defer s.leave(task)
	holdFor(r, delay)

	if !s.authorize(w, r) {
		return
	}
	if fail != 0 {
		s.fail(w, r, fail)
		return
	}
	if req.Model == "" || len(req.Messages) == 0 {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "missing_required_parameter", "model and messages are required")
		return
	}
	s.complete(w, r, req)
}

// admit counts a chat call as received and in flight and records it; it returns the call's task, the failure it
// is to get (0: none) and how long to hold it before answering.
func (s *Server) admit(req ChatRequest) (task string, fail Failure, delay time.Duration) {
	task = req.Task()
	s.mu.Lock()
	s.calls++
	s.perTask[task]++
	s.inFlight[""]++
	if task != "" { // "" already counts every call: a call of no known task is counted once
		s.inFlight[task]++
	}
	s.requests = append(s.requests, req)
	if len(s.failures) > 0 {
		fail, s.failures = s.failures[0], s.failures[1:]
	}
	delay, failWhen, delayWhen := s.delays[task], s.failWhen, s.delayWhen
	s.mu.Unlock()
	// The test's functions run outside the lock, so they may call the server's accessors.
	if fail == 0 && failWhen != nil {
		fail = failWhen(req)
	}
	if delayWhen != nil {
		delay += delayWhen(req)
	}
	return task, fail, delay
}

// leave counts a call admitted for task as no longer in flight.
func (s *Server) leave(task string) {
	s.mu.Lock()
	s.inFlight[""]--
	if task != "" {
		s.inFlight[task]--
	}
	s.mu.Unlock()
}

// holdFor waits for delay, or until the client goes away.
func holdFor(r *http.Request, delay time.Duration) {
	if delay <= 0 {
		return
	}
	t := time.NewTimer(delay)
	select {
	case <-r.Context().Done():
	case <-t.C:
	}
	t.Stop()
}

// complete writes the chat completion for req: the answer (as a native tool call when the request offers tools
// and the answer calls one) with its token usage.
func (s *Server) complete(w http.ResponseWriter, r *http.Request, req ChatRequest) {
	answer, model := s.answer(req), cmp.Or(s.served, req.Model)
	if token := bearerToken(r); s.echoKey && token != "" {
		answer = "Served for " + token + ".\n\n" + answer + "\n(key " + token + ")\n"
		model += "@" + token
	}
	prompt, completion := approxTokens(req.Prompt()), approxTokens(answer)
	s.mu.Lock()
	if s.usage != nil {
		prompt, completion = s.usage[0], s.usage[1]
	}
	cached := s.cached
	s.mu.Unlock()
	usage := map[string]any{"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
	if cached != 0 {
		usage["prompt_tokens_details"] = map[string]any{"cached_tokens": cached}
	}
	message, finish := map[string]any{"role": "assistant", "content": answer}, "stop"
	if len(req.Tools) > 0 && string(req.Tools) != "null" {
		if m, ok := toolCallsOf(answer, toolCallID(s.Calls())); ok {
			message, finish = m, "tool_calls"
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id":      fmt.Sprintf("chatcmpl-fake-%d", s.Calls()),
		"object":  "chat.completion",
		"created": 1700000000,
		"model":   model,
		"choices": []any{map[string]any{
			"index":         0,
			"message":       message,
			"finish_reason": finish,
			"logprobs":      nil,
		}},
		"usage": usage,
	})
}

func (s *Server) fail(w http.ResponseWriter, r *http.Request, f Failure) {
	switch f {
	case RateLimit:
		w.Header().Set("Retry-After-Ms", fmt.Sprint(s.retryAfter.Milliseconds()))
		w.Header().Set("Retry-After", fmt.Sprint(int(math.Ceil(s.retryAfter.Seconds()))))
		writeError(w, http.StatusTooManyRequests, "requests", "rate_limit_exceeded", "Rate limit reached for requests.")
	case Quota:
		writeError(w, http.StatusTooManyRequests, "insufficient_quota", "insufficient_quota", "You exceeded your current quota.")
	case NoChoices:
		writeJSON(w, http.StatusOK, map[string]any{"id": "chatcmpl-empty", "object": "chat.completion",
			"created": 1700000000, "model": "fake", "choices": []any{},
			"usage": map[string]any{"prompt_tokens": 100, "completion_tokens": 50, "total_tokens": 150}})
	case BilledContextLength:
		writeJSON(w, http.StatusOK, map[string]any{"error": map[string]any{"type": "invalid_request_error",
			"code": "context_length_exceeded", "param": "messages",
			"message": "This model's maximum context length was exceeded: the answer did not fit."},
			"usage": map[string]any{"prompt_tokens": 1000, "completion_tokens": 0, "total_tokens": 1000}})
	case QuotaIn200:
		writeError(w, http.StatusOK, "insufficient_quota", "insufficient_quota",
			"You exceeded your current quota, please check your plan and billing details.")
	case ServerError:
		writeError(w, http.StatusInternalServerError, "server_error", "", "The server had an error while processing your request.")
	case BadGateway:
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusBadGateway)
		fmt.Fprint(w, "<html><body><h1>502 Bad Gateway</h1></body></html>")
	case Malformed:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		fmt.Fprint(w, `{"id": "chatcmpl-broken", "object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assi`)
	case ContextLength:
		writeError(w, http.StatusBadRequest, "invalid_request_error", "context_length_exceeded",
			"This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens. Please reduce the length of the messages.")
	case Unauthorized:
		unauthorized(w, r.Header.Get("Authorization"))
	case EchoKey:
		writeError(w, http.StatusBadRequest, "invalid_request_error", "",
			fmt.Sprintf("Request for token %s refused.", bearerToken(r)))
	case Hang:
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
		writeError(w, http.StatusGatewayTimeout, "server_error", "", "timed out")
	default:
		writeError(w, http.StatusInternalServerError, "server_error", "", fmt.Sprintf("unknown failure %d", f))
	}
}

// bearerToken is the token of the request's "Authorization: Bearer" header, "" when there is none.
func bearerToken(r *http.Request) string {
	auth := r.Header.Get("Authorization")
	if len(auth) > len("Bearer ") && strings.EqualFold(auth[:len("Bearer ")], "Bearer ") {
		return strings.TrimSpace(auth[len("Bearer "):])
	}
	return ""
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, typ, code, msg string) {
	var c any
	if code != "" {
		c = code
	}
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": c}})
}

// approxTokens counts about one token per four bytes, at least one for non-empty text.
func approxTokens(s string) int {
	if s == "" {
		return 0
	}
	return max(1, (len(s)+3)/4)
}
