package llm

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/rs/zerolog"

	"ctxlab/specs"
)

// The only places the openai provider reads its endpoint and key from. A spec never holds either, so neither
// reaches Temporal history or results.
const (
	EnvBaseURL = "OPENAI_BASE_URL"
	EnvAPIKey  = "OPENAI_API_KEY"
)

// TaskHeader carries Request.Task with every call. Endpoints ignore it; a test server (testkit/fakeopenai) counts
// calls per task with it.
const TaskHeader = "X-Ctxlab-Task"

// defaultBaseURL is used when OPENAI_BASE_URL is unset.
const defaultBaseURL = "https://api.openai.com/v1/"

// openAIConfig holds what OpenAIOptions set.
type openAIConfig struct {
	attempts    int
	baseDelay   time.Duration
	maxDelay    time.Duration
	callTimeout time.Duration
	httpClient  *http.Client
	log         zerolog.Logger
	tokenizer   string
}

// OpenAIOption configures NewOpenAI.
type OpenAIOption func(*openAIConfig)

// WithAttempts sets how many times one Complete may call the endpoint in total (default 4; at least 1).
func WithAttempts(n int) OpenAIOption { return func(c *openAIConfig) { c.attempts = max(n, 1) } }

// WithBaseDelay sets the first backoff (default 1s); each further retry doubles it, with jitter.
func WithBaseDelay(d time.Duration) OpenAIOption { return func(c *openAIConfig) { c.baseDelay = d } }

// WithMaxDelay caps one wait between attempts (default 60s). A Retry-After longer than this ends the retries: the
// call fails with KindRateLimit and the activity's own retry policy comes back later.
func WithMaxDelay(d time.Duration) OpenAIOption { return func(c *openAIConfig) { c.maxDelay = d } }

// WithCallTimeout bounds one HTTP attempt (default 5 minutes). An attempt that runs out fails with KindTimeout and
// is retried.
func WithCallTimeout(d time.Duration) OpenAIOption {
	return func(c *openAIConfig) { c.callTimeout = d }
}

// WithHTTPClient sets the HTTP client (default: a plain http.Client; timeouts come from WithCallTimeout).
func WithHTTPClient(h *http.Client) OpenAIOption { return func(c *openAIConfig) { c.httpClient = h } }

// WithTokenizer names the tokenizer that estimates a prompt's tokens when the server cannot count them (default
// o200k_base; see fitMaxTokens).
func WithTokenizer(name string) OpenAIOption { return func(c *openAIConfig) { c.tokenizer = name } }

// WithLogger sets where retries are logged (default: nowhere). Log lines never hold the key.
func WithLogger(l zerolog.Logger) OpenAIOption { return func(c *openAIConfig) { c.log = l } }

// openAIProvider calls the chat completions API of an OpenAI-compatible endpoint.
type openAIProvider struct {
	model specs.Model
	cfg   openAIConfig
	chat  openai.ChatCompletionService
	ep    Endpoint
	// completionTokensField: OpenAI's own API wants max_completion_tokens (its reasoning models refuse
	// max_tokens); other OpenAI-compatible servers widely understand only max_tokens.
	completionTokensField bool
}

// newProviderConfig applies opts to the providers' defaults (4 attempts, 1 s to 1 min backoff, 5 min per call,
// o200k_base estimates) and refuses a model without an id.
func newProviderConfig(m specs.Model, opts []OpenAIOption) (openAIConfig, error) {
	cfg := openAIConfig{
		attempts:    4,
		baseDelay:   time.Second,
		maxDelay:    time.Minute,
		callTimeout: 5 * time.Minute,
		log:         zerolog.Nop(),
		tokenizer:   "o200k_base",
	}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.httpClient == nil {
		cfg.httpClient = &http.Client{}
	}
	if strings.TrimSpace(m.ID) == "" {
		return cfg, &Error{Kind: KindBadRequest, Msg: fmt.Sprintf("model %q has no id: set the model's id in the spec", m.Name)}
	}
	return cfg, nil
}

// NewOpenAI returns the openai provider for model m: chat completions against OPENAI_BASE_URL (default OpenAI's
// API) with the key in OPENAI_API_KEY. The model ID, temperature, max tokens and seed come from m; the price table
// turns usage into cost.
//
// When OPENAI_API_KEY is unset or empty NewOpenAI fails with KindAuth naming the variable, unless OPENAI_BASE_URL
// points at a loopback host (localhost, 127.0.0.0/8, ::1): local servers (llama.cpp, vLLM, Ollama) commonly need no
// key, and then no Authorization header is sent.
//
// The client's own retries are off; Complete retries 429, 5xx, timeouts, broken connections and malformed bodies
// itself with exponential backoff and jitter, honouring Retry-After, and never retries context-length,
// authentication, quota or other request errors. Every failure is an *Error.
func NewOpenAI(m specs.Model, opts ...OpenAIOption) (Provider, error) {
	cfg, err := newProviderConfig(m, opts)
	if err != nil {
		return nil, err
	}
	ep, err := EndpointFromEnv()
	if err != nil {
		return nil, err
	}
	ropts := append(ep.Options(cfg.httpClient), option.WithMaxRetries(0))
	return &openAIProvider{
		model:                 m,
		cfg:                   cfg,
		chat:                  openai.NewChatCompletionService(ropts...),
		ep:                    ep,
		completionTokensField: ep.Host == "api.openai.com",
	}, nil
}

// Endpoint is the OpenAI-compatible endpoint the environment names, shared by chat completions and embeddings.
type Endpoint struct {
	Base, Host string
	// key is kept only to send it and to scrub it from anything the endpoint sends back; keyEnv names the variable
	// it came from (OPENAI_API_KEY when empty).
	key, keyEnv string
}

// BaseURLFromEnv is the base URL OPENAI_BASE_URL names, or OpenAI's API; unlike EndpointFromEnv it checks nothing
// and needs no key, so a response cache can look up answers with it on a machine that holds no key.
func BaseURLFromEnv() string {
	if b := strings.TrimSpace(os.Getenv(EnvBaseURL)); b != "" {
		return b
	}
	return defaultBaseURL
}

// EndpointFromEnv reads OPENAI_BASE_URL (default OpenAI's API) and OPENAI_API_KEY. A missing key is a KindAuth
// error unless the endpoint is on a loopback host, where keyless local servers are common.
func EndpointFromEnv() (Endpoint, error) {
	return endpointEnv{baseVar: EnvBaseURL, keyVar: EnvAPIKey, defaultBase: defaultBaseURL,
		defaultHost: "api.openai.com", example: "http://localhost:8000/v1", keylessLoopback: true}.read()
}

// endpointEnv names the variables a provider's endpoint and key are read from, and its defaults.
type endpointEnv struct {
	baseVar, keyVar, defaultBase, defaultHost string
	// example is a well-formed base URL, for the error of a malformed one.
	example string
	// keylessLoopback lets a server on a loopback host run without a key.
	keylessLoopback bool
}

func (v endpointEnv) read() (Endpoint, error) {
	base := strings.TrimSpace(os.Getenv(v.baseVar))
	key := strings.TrimSpace(os.Getenv(v.keyVar))
	host := v.defaultHost
	if base != "" {
		u, err := url.Parse(base)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			// The value is not repeated: a malformed URL may carry credentials.
			return Endpoint{}, &Error{Kind: KindBadRequest, Msg: v.baseVar + " is not an http(s) URL such as " + v.example}
		}
		host = u.Hostname()
	} else {
		base = v.defaultBase
	}
	if key == "" && !(v.keylessLoopback && isLoopback(host)) {
		msg := fmt.Sprintf("%s is not set: export it to call %s", v.keyVar, host)
		if v.keylessLoopback {
			msg += " (only servers on localhost may run without a key)"
		}
		return Endpoint{}, &Error{Kind: KindAuth, Msg: msg}
	}
	return Endpoint{Base: base, Host: host, key: key, keyEnv: v.keyVar}, nil
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

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Complete sends req and retries what is worth retrying (retryLoop), holding the call's place in the server's
// shared context while each attempt is in flight.
func (p *openAIProvider) Complete(ctx context.Context, req Request) (Response, error) {
	params, reserve, perr := p.params(ctx, req)
	if perr != nil {
		return Response{}, perr
	}
	slots := &slotGate{reserve: reserve, slot: req.Context}
	if reserve > 0 { // 0: the server's context is unknown, and nothing is gated
		slots.shared = sharedContextOf(p.ep.Base)
	}
	loop := retryLoop{cfg: p.cfg, model: p.model, req: req, slots: slots}
	return loop.run(ctx, func(ctx context.Context) (Response, *Error, time.Duration) {
		return p.once(ctx, req.Task, params)
	})
}

// delay is the wait before the attempt after attempt (openAIConfig.delay).
func (p *openAIProvider) delay(attempt int, retryAfter time.Duration) (time.Duration, bool) {
	return p.cfg.delay(attempt, retryAfter)
}

func (p *openAIProvider) params(ctx context.Context, req Request) (params openai.ChatCompletionNewParams,
	reserve int, perr *Error) {
	params = openai.ChatCompletionNewParams{Model: p.model.ID}
	if len(req.Messages) == 0 {
		return params, 0, &Error{Kind: KindBadRequest, Msg: "the request has no messages"}
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
			return params, 0, &Error{Kind: KindBadRequest, Msg: fmt.Sprintf("message %d has role %q (want system, developer, user or assistant)", i+1, m.Role)}
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

// once makes one HTTP attempt. retryAfter is the wait the endpoint asked for, 0 when it named none.
func (p *openAIProvider) once(ctx context.Context, task string, params openai.ChatCompletionNewParams) (Response, *Error, time.Duration) {
	actx, cancel := context.WithTimeout(ctx, p.cfg.callTimeout)
	defer cancel()
	var hres *http.Response
	ropts := []option.RequestOption{option.WithResponseInto(&hres), option.WithMiddleware(capAnswer)}
	if task != "" {
		ropts = append(ropts, option.WithHeader(TaskHeader, task))
	}
	res, err := p.chat.New(actx, params, ropts...)
	if e := answerTooLarge(err, hres); e != nil {
		return Response{}, e, 0
	}
	if err != nil {
		return Response{}, p.ep.Classify(ctx, actx, hres, err, p.cfg.callTimeout), retryAfter(hres)
	}
	if res == nil || len(res.Choices) == 0 {
		msg := "the completion has no choices"
		var paid Usage
		if res != nil {
			paid, _ = usageOf([]byte(res.RawJSON())) // impossible usage is no money
			// An error sent with 200 (OpenAI's insufficient_quota among them) is classified as if sent with its
			// status: a quota error is not retried as a broken answer.
			if st, kind, em, ok := bodyError(statusOf(hres), []byte(res.RawJSON())); ok {
				return Response{}, &Error{Kind: kind, Status: st, Msg: p.ep.Scrub(msg + ": " + em), Paid: paid}, 0
			}
		}
		return Response{}, &Error{Kind: KindBadResponse, Status: statusOf(hres), Msg: p.ep.Scrub(msg), Paid: paid}, 0
	}
	// Usage is money: counts that cannot be real make the answer a broken one (retried), never a negative or
	// absurd cost.
	u, uerr := usageOf([]byte(res.RawJSON()))
	if uerr != nil {
		return Response{}, &Error{Kind: KindBadResponse, Status: statusOf(hres), Msg: p.ep.Scrub(
			"the endpoint reported impossible usage: " + uerr.Error())}, 0
	}
	// A 200 answer is scrubbed too: an endpoint may echo the key in it, and answers are cached and stored.
	return Response{
		Text:    p.ep.ScrubText(answerWithToolCalls(res.Choices[0].Message)),
		Usage:   u,
		CostUSD: Cost(u, p.model.Price),
		Model:   p.ep.ScrubText(res.Model),
	}, nil, 0
}

func statusOf(r *http.Response) int {
	if r == nil {
		return 0
	}
	return r.StatusCode
}

// Classify turns a failed call into an *Error: ctx is the caller's context, actx the attempt's (with its timeout),
// hres the HTTP response if one came. The SDK's own error is not kept: it holds the request, and with it the
// Authorization header.
func (e Endpoint) Classify(ctx, actx context.Context, hres *http.Response, err error, timeout time.Duration) *Error {
	switch {
	case ctx.Err() != nil:
		return &Error{Kind: KindTimeout, Msg: "the call was cancelled", Err: ctx.Err()}
	case actx.Err() != nil:
		return &Error{Kind: KindTimeout, Msg: fmt.Sprintf("no answer within %s", timeout), Err: context.DeadlineExceeded}
	case hres == nil:
		return &Error{Kind: KindTimeout, Msg: e.Scrub("connection failed: " + err.Error())}
	case hres.StatusCode < 400:
		return &Error{Kind: KindBadResponse, Status: hres.StatusCode, Msg: e.Scrub("the response body does not parse: " + err.Error())}
	}
	var body []byte
	if hres.Body != nil {
		body, _ = io.ReadAll(io.LimitReader(hres.Body, 64<<10))
	}
	status := hres.StatusCode
	code, typ, msg := errorFields(body)
	fromBody := msg != "" && !strings.HasPrefix(msg, "<")
	if msg == "" {
		msg = http.StatusText(status)
	}
	ce := &Error{Kind: kindOf(status, code, typ, msg), Status: status, Msg: e.Scrub(msg), typ: typ,
		fromBody: fromBody}
	if ce.Kind == KindAuth {
		ce.Msg += fmt.Sprintf(" (check %s)", cmp.Or(e.keyEnv, EnvAPIKey))
	}
	return ce
}

// errorFields reads the code, type and message of an error body in the shapes OpenAI-compatible servers use:
// {"error": {"message", "type", "code"}}, {"error": "text"}, {"message": ...}, {"detail": ...}, or plain text.
func errorFields(body []byte) (code, typ, msg string) {
	var top struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  json.RawMessage `json:"detail"`
		Code    json.RawMessage `json:"code"`
		Type    string          `json:"type"`
	}
	if err := json.Unmarshal(body, &top); err != nil {
		return "", "", clip(strings.Join(strings.Fields(string(body)), " "), 300)
	}
	code, typ, msg = rawString(top.Code), top.Type, top.Message
	if len(top.Error) > 0 {
		var inner struct {
			Message string          `json:"message"`
			Type    string          `json:"type"`
			Code    json.RawMessage `json:"code"`
		}
		if json.Unmarshal(top.Error, &inner) == nil {
			code, typ, msg = firstNonEmpty(rawString(inner.Code), code), firstNonEmpty(inner.Type, typ), firstNonEmpty(inner.Message, msg)
		} else if s := rawString(top.Error); s != "" {
			msg = s
		}
	}
	if msg == "" {
		msg = rawString(top.Detail)
	}
	return code, typ, clip(msg, 500)
}

// rawString returns a JSON string's value, or a number's or object's text.
func rawString(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

var bearerRE = regexp.MustCompile(`(?i)bearer\s+[^\s"',;]+`)

// Scrub removes the key, every other secret the process holds (ScrubSecrets), and any bearer token an endpoint
// echoes back, from a message.
func (e Endpoint) Scrub(s string) string {
	return bearerRE.ReplaceAllString(e.ScrubText(s), "Bearer "+Redacted)
}

// ScrubText removes the key and every other secret the process holds from an answer, leaving the rest byte for
// byte (no bearer-token pattern: an answer's code may say "Bearer").
func (e Endpoint) ScrubText(s string) string {
	if e.key != "" {
		s = strings.ReplaceAll(s, e.key, Redacted)
	}
	return ScrubSecrets(s)
}

// retryAfter reads the wait an endpoint asks for: retry-after-ms (OpenAI), or Retry-After in seconds or as an
// HTTP date. It is 0 when there is none.
func retryAfter(r *http.Response) time.Duration {
	if r == nil {
		return 0
	}
	if v := r.Header.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := r.Header.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return 0
}
