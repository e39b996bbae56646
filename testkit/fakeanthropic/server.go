// Package fakeanthropic is a small stand-in for Anthropic's Messages API (POST /v1/messages and /v1/messages/count_tokens, GET /v1/models/{id}) for
// tests: answers as text or tool_use blocks, usage with prompt-cache reads and writes (a prefix marked with
// cache_control is written on its first call and read on the next ones, as the API does), and the API's failures as
// it sends them (429 with retry-after, 529 overloaded_error, 400 "prompt is too long", 401, 403, 404, billing). It
// never stores an API key: it records a SHA-256 of the key, sent as x-api-key or as a bearer token.
package fakeanthropic

import (
	"cmp"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	// The fake OpenAI endpoint registers its prompt answers (localize, evidence, patch) with offlinetask; they are
	// this server's default answers too.
	"ctxlab/internal/offlinetask"
	_ "ctxlab/testkit/fakeopenai"
)

// Failure is a way an injected call fails.
type Failure int

// Failures the server can inject, each with the status and body Anthropic's API sends.
const (
	RateLimit     Failure = iota + 1 // 429 rate_limit_error with retry-after
	Overloaded                       // 529 overloaded_error
	ServerError                      // 500 api_error
	PromptTooLong                    // 400 invalid_request_error "prompt is too long: N tokens > M maximum"
	Unauthorized                     // 401 authentication_error whose message echoes the key, as careless gateways do
	Permission                       // 403 permission_error
	NotFound                         // 404 not_found_error "model: <id>"
	Billing                          // 400 invalid_request_error "Your credit balance is too low ..."
)

// Block is one content block of a request's message, as the server read it.
type Block struct {
	Type         string          `json:"type"`
	Text         string          `json:"text,omitempty"`
	ID           string          `json:"id,omitempty"`
	Name         string          `json:"name,omitempty"`
	Input        json.RawMessage `json:"input,omitempty"`
	ToolUseID    string          `json:"tool_use_id,omitempty"`
	Content      json.RawMessage `json:"content,omitempty"`
	CacheControl *struct {
		Type string `json:"type"`
	} `json:"cache_control,omitempty"`
}

// text is the block's text: a text block's, a tool result's, or a tool call's name and input.
func (b Block) text() string {
	switch b.Type {
	case "tool_use": // as the plain-text protocol, so prompt answers see every call
		c := offlinetask.AgentCall{Tool: b.Name}
		_ = json.Unmarshal(b.Input, &c.Args)
		return offlinetask.FormatAgentCall(c)
	case "tool_result":
		var s string
		if json.Unmarshal(b.Content, &s) == nil {
			return s
		}
		var parts []Block
		_ = json.Unmarshal(b.Content, &parts)
		var out strings.Builder
		for _, p := range parts {
			out.WriteString(p.Text)
		}
		return out.String()
	}
	return b.Text
}

// Message is one turn of a request.
type Message struct {
	Role    string  `json:"role"`
	Content []Block `json:"content"`
}

// Request is a Messages API request as the server read it.
type Request struct {
	Model       string          `json:"model"`
	MaxTokens   *int64          `json:"max_tokens"`
	Temperature *float64        `json:"temperature,omitempty"`
	System      []Block         `json:"system,omitempty"`
	Messages    []Message       `json:"messages"`
	Tools       json.RawMessage `json:"tools,omitempty"`
	// TaskName is the X-Ctxlab-Task header ("" when absent).
	TaskName string `json:"-"`
}

// Prompt is the text of the system prompt and every turn, in order, separated by blank lines.
func (r Request) Prompt() string {
	var parts []string
	for _, b := range r.System {
		parts = append(parts, b.text())
	}
	for _, m := range r.Messages {
		for _, b := range m.Content {
			parts = append(parts, b.text())
		}
	}
	return strings.Join(parts, "\n\n")
}

// Breakpoints is how many blocks carry cache_control.
func (r Request) Breakpoints() int {
	n := 0
	for _, b := range r.System {
		if b.CacheControl != nil {
			n++
		}
	}
	for _, m := range r.Messages {
		for _, b := range m.Content {
			if b.CacheControl != nil {
				n++
			}
		}
	}
	return n
}

// prefixes are the request's text up to each cache breakpoint, and all of it.
func (r Request) prefixes() (marked []string, all string) {
	var b strings.Builder
	for _, s := range r.System {
		b.WriteString(s.text())
		if s.CacheControl != nil {
			marked = append(marked, b.String())
		}
	}
	for _, m := range r.Messages {
		b.WriteString("\x00" + m.Role + "\x00")
		for _, c := range m.Content {
			b.WriteString(c.text())
			if c.CacheControl != nil {
				marked = append(marked, b.String())
			}
		}
	}
	return marked, b.String()
}

// Reply is an answer: text, and a tool call when Tool is set.
type Reply struct {
	Text  string
	Tool  string
	Input map[string]any
}

// Server is the fake endpoint. It is safe for concurrent use.
type Server struct {
	// Answer makes the reply to a request (default: the prompt answer offlinetask holds for the request's task, as
	// testkit/fakeopenai gives it, or "ok").
	Answer func(Request) Reply
	// RetryAfter is the wait a RateLimit failure asks for (default 1s; sent in whole seconds, at least 1, unless
	// below a second, when it is sent as a fraction).
	RetryAfter time.Duration
	// Delay holds every answer back this long.
	Delay time.Duration
	// Models are the model ids GET /v1/models/{id} knows (default claude-fake-1).
	Models []string

	mu       sync.Mutex
	failures []Failure
	requests []Request
	cached   map[[32]byte]bool
	keys     map[[32]byte]int
	counts   int
}

// Fail makes the next calls fail, one failure each, in order.
func (s *Server) Fail(f ...Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures = append(s.failures, f...)
}

// Requests are the requests the server read, answered or failed.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// KeySeen reports whether key came (as x-api-key or a bearer token) (compared by digest: the key is never kept).
func (s *Server) KeySeen(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keys[sha256.Sum256([]byte(key))] > 0
}

// CountFraming is what POST /v1/messages/count_tokens adds to the Tokens of a request's blocks, as the real API
// counts a message's framing.
const CountFraming = 7

// Counts is how many count_tokens requests the server answered.
func (s *Server) Counts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts
}

// Tokens is the fake's token count of a text: a token every four bytes, at least one for any text.
func Tokens(text string) int {
	if text == "" {
		return 0
	}
	return max(len(text)/4, 1)
}

// ServeHTTP answers POST /v1/messages and GET /v1/models/{id}.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := s.recordKey(r)
	if key == "" {
		apiError(w, http.StatusUnauthorized, "authentication_error", "x-api-key header is required")
		return
	}
	switch {
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/models/"):
		s.getModel(w, r)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages/count_tokens":
		s.countTokens(w, r)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages":
		s.messages(w, r, key)
	default:
		apiError(w, http.StatusNotFound, "not_found_error", "Not found")
	}
}

// recordKey is the request's API key, sent as x-api-key or as a bearer token ("" when none came); it counts the
// key by digest for KeySeen.
func (s *Server) recordKey(r *http.Request) string {
	key := r.Header.Get("X-Api-Key")
	if a := r.Header.Get("Authorization"); key == "" && len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		key = a[7:] // how the v2 SDK sends an API key
	}
	s.mu.Lock()
	if s.keys == nil {
		s.keys = map[[32]byte]int{}
	}
	if key != "" {
		s.keys[sha256.Sum256([]byte(key))]++
	}
	s.mu.Unlock()
	return key
}

// getModel answers GET /v1/models/{id}: the model when Models (or the default) knows it, else 404.
func (s *Server) getModel(w http.ResponseWriter, r *http.Request) {
	id := strings.TrimPrefix(r.URL.Path, "/v1/models/")
	models := s.Models
	if models == nil {
		models = []string{"claude-fake-1"}
	}
	if !slices.Contains(models, id) {
		apiError(w, http.StatusNotFound, "not_found_error", "model: "+id)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"type": "model", "id": id, "display_name": id,
		"created_at": "2026-01-01T00:00:00Z"})
}

// countTokens answers POST /v1/messages/count_tokens: the Tokens of every block plus CountFraming.
func (s *Server) countTokens(w http.ResponseWriter, r *http.Request) {
	var req Request
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "the body does not parse: "+err.Error())
		return
	}
	n := CountFraming
	for _, b := range req.System {
		n += Tokens(b.text())
	}
	for _, m := range req.Messages {
		for _, b := range m.Content {
			n += Tokens(b.text())
		}
	}
	s.mu.Lock()
	s.counts++
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"input_tokens":%d}`, n)
}

// messages answers POST /v1/messages: it records the request, holds it for Delay, then sends the next queued
// failure or the reply.
func (s *Server) messages(w http.ResponseWriter, r *http.Request, key string) {
	var req Request
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "the body does not parse: "+err.Error())
		return
	}
	if req.MaxTokens == nil {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "max_tokens: Field required")
		return
	}
	req.TaskName = r.Header.Get(offlinetask.TaskHeader)
	s.mu.Lock()
	s.requests = append(s.requests, req)
	var fail Failure
	if len(s.failures) > 0 {
		fail, s.failures = s.failures[0], s.failures[1:]
	}
	s.mu.Unlock()
	if s.Delay > 0 {
		time.Sleep(s.Delay)
	}
	if s.writeFailure(w, req, key, fail) {
		return
	}
	s.writeReply(w, req, s.reply(req))
}

// writeFailure writes fail as the API sends it and reports whether it wrote anything (not for 0 or a value that
// is no Failure: those calls are answered).
func (s *Server) writeFailure(w http.ResponseWriter, req Request, key string, fail Failure) bool {
	switch fail {
	case RateLimit:
		d := s.RetryAfter
		if d <= 0 {
			d = time.Second
		}
		v := strconv.Itoa(int(d / time.Second))
		if d < time.Second {
			v = strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
		}
		w.Header().Set("Retry-After", v)
		apiError(w, http.StatusTooManyRequests, "rate_limit_error",
			"This request would exceed the rate limit for your organization of 50,000 input tokens per minute.")
	case Overloaded:
		apiError(w, 529, "overloaded_error", "Overloaded")
	case ServerError:
		apiError(w, http.StatusInternalServerError, "api_error", "Internal server error")
	case PromptTooLong:
		_, all := req.prefixes()
		apiError(w, http.StatusBadRequest, "invalid_request_error",
			fmt.Sprintf("prompt is too long: %d tokens > 200000 maximum", max(Tokens(all), 200001)))
	case Unauthorized:
		apiError(w, http.StatusUnauthorized, "authentication_error", "invalid x-api-key: "+key)
	case Permission:
		apiError(w, http.StatusForbidden, "permission_error", "Your API key does not have permission to use the specified resource.")
	case NotFound:
		apiError(w, http.StatusNotFound, "not_found_error", "model: "+req.Model)
	case Billing:
		apiError(w, http.StatusBadRequest, "invalid_request_error",
			"Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.")
	default:
		return false
	}
	return true
}

// reply is the answer to req: Answer's, else the prompt answer of its task, else "ok"; with tools offered, a call
// in the plain-text protocol becomes a tool call.
func (s *Server) reply(req Request) Reply {
	reply := Reply{Text: "ok"}
	if s.Answer != nil {
		reply = s.Answer(req)
	} else if a, ok := offlinetask.Lookup(cmp.Or(req.TaskName, offlinetask.Guess(req.Prompt()))); ok && a.FromPrompt != nil {
		reply.Text = a.FromPrompt(req.Prompt())
	}
	// With tools offered, a call in the plain-text protocol is sent as a tool_use block.
	if c, ok, err := offlinetask.ParseAgentCall(reply.Text); reply.Tool == "" && len(req.Tools) > 0 && ok && err == nil {
		reply.Tool, reply.Input = c.Tool, c.Args
		reply.Text, _, _ = strings.Cut(reply.Text, "```tool")
		reply.Text = strings.TrimSpace(reply.Text)
	}
	return reply
}

// cacheUsage splits req's input tokens into those read from the prompt cache, those written to it and the rest:
// the longest marked prefix seen before is read, the rest of the marked prefixes written.
func (s *Server) cacheUsage(req Request) (read, write, input int) {
	marked, all := req.prefixes()
	s.mu.Lock()
	if s.cached == nil {
		s.cached = map[[32]byte]bool{}
	}
	for _, p := range marked {
		if s.cached[sha256.Sum256([]byte(p))] {
			read = Tokens(p)
		}
	}
	for _, p := range marked {
		if t := Tokens(p); t > read {
			write = t - read
		}
		s.cached[sha256.Sum256([]byte(p))] = true
	}
	s.mu.Unlock()
	return read, write, max(Tokens(all)-read-write, 0)
}

// writeReply writes reply as a message with its content blocks and usage.
func (s *Server) writeReply(w http.ResponseWriter, req Request, reply Reply) {
	read, write, input := s.cacheUsage(req)
	content := []map[string]any{}
	if reply.Text != "" {
		content = append(content, map[string]any{"type": "text", "text": reply.Text})
	}
	stop := "end_turn"
	output := Tokens(reply.Text)
	if reply.Tool != "" {
		in := reply.Input
		if in == nil {
			in = map[string]any{}
		}
		content = append(content, map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%d", len(s.Requests())),
			"name": reply.Tool, "input": in})
		stop = "tool_use"
		output += 10
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": fmt.Sprintf("msg_%d", len(s.Requests())), "type": "message", "role": "assistant", "model": req.Model,
		"content": content, "stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": input, "output_tokens": output,
			"cache_read_input_tokens": read, "cache_creation_input_tokens": write},
	})
}

// apiError writes an error as Anthropic's API does: {"type": "error", "error": {"type", "message"}}.
func apiError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"type": "error",
		"error": map[string]any{"type": typ, "message": msg}, "request_id": "req_fake"})
}
