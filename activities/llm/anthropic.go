package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3/option"

	"ctxlab/activities/tokens"
	"ctxlab/internal/offlinetask"
	"ctxlab/specs"
)

// The only places the anthropic provider reads its endpoint and key from. A spec never holds either, so neither
// reaches Temporal history or results. ANTHROPIC_BASE_URL is for a gateway or a test server (testkit/fakeanthropic).
const (
	EnvAnthropicBaseURL = "ANTHROPIC_BASE_URL"
	EnvAnthropicAPIKey  = "ANTHROPIC_API_KEY"
)

// defaultAnthropicBaseURL is used when ANTHROPIC_BASE_URL is unset.
const defaultAnthropicBaseURL = "https://api.anthropic.com/"

// MinCacheTokens is the shortest prefix the anthropic provider marks for Anthropic's prompt cache: the API caches
// nothing shorter than 1,024 tokens on most models (2,048 or 4,096 on some Haiku and Opus versions, which then
// simply do not cache), and a write costs more than plain input, so only a prefix at least this long is marked.
const MinCacheTokens = 1024

// AnthropicMaxTokens is the max_tokens an anthropic call sends: the spec's, or DefaultMaxTokens (the Messages API
// requires one).
func AnthropicMaxTokens(specMax int) int {
	if specMax > 0 {
		return specMax
	}
	return DefaultMaxTokens
}

// AnthropicBaseURLFromEnv is the base URL ANTHROPIC_BASE_URL names, or Anthropic's API; it checks nothing and needs
// no key, so a response cache can look up answers with it on a machine that holds no key.
func AnthropicBaseURLFromEnv() string {
	if b := strings.TrimSpace(os.Getenv(EnvAnthropicBaseURL)); b != "" {
		return b
	}
	return defaultAnthropicBaseURL
}

// AnthropicEndpointFromEnv reads ANTHROPIC_BASE_URL (default Anthropic's API) and ANTHROPIC_API_KEY. A missing key
// is a KindAuth error: Anthropic's API always wants one.
func AnthropicEndpointFromEnv() (Endpoint, error) {
	return endpointEnv{baseVar: EnvAnthropicBaseURL, keyVar: EnvAnthropicAPIKey, defaultBase: defaultAnthropicBaseURL,
		defaultHost: "api.anthropic.com", example: "https://api.anthropic.com"}.read()
}

// anthropicProvider calls Anthropic's Messages API.
type anthropicProvider struct {
	model    specs.Model
	cfg      openAIConfig
	messages anthropic.MessageService
	ep       Endpoint
}

// NewAnthropic returns the anthropic provider for model m: Anthropic's Messages API at ANTHROPIC_BASE_URL (default
// Anthropic's) with the key in ANTHROPIC_API_KEY, through the official Go SDK with its environment defaults, config
// profiles and retries off. The model ID, temperature and max_tokens (AnthropicMaxTokens) come from m; the price
// table turns usage into cost, cache reads at cached_input and cache writes at cache_write.
//
// The options are the openai provider's (attempts, delays, call timeout, HTTP client, logger, tokenizer: the
// tokenizer estimates whether a prefix is long enough to mark for the prompt cache). Complete retries 429 (honouring
// retry-after), 529 overloaded, other 5xx, timeouts and broken answers, and never a prompt too long, an
// authentication, permission or billing error, or another request error. Every failure is an *Error whose text
// never holds the key.
func NewAnthropic(m specs.Model, opts ...OpenAIOption) (Provider, error) {
	cfg, err := newProviderConfig(m, opts)
	if err != nil {
		return nil, err
	}
	ep, err := AnthropicEndpointFromEnv()
	if err != nil {
		return nil, err
	}
	client := anthropicClient(ep, cfg.httpClient)
	return &anthropicProvider{model: m, cfg: cfg, messages: client.Messages, ep: ep}, nil
}

// anthropicClient is the SDK's client for ep: only what ctxlab sets, none of the SDK's environment defaults (its own
// reading of ANTHROPIC_* variables, config profiles, federation), no retries of its own, and no OpenTelemetry spans
// (which could carry prompts to whatever tracer a process registers).
func anthropicClient(ep Endpoint, h *http.Client) anthropic.Client {
	return anthropic.NewClient(aoption.WithoutEnvironmentDefaults(), aoption.WithBaseURL(ep.Base),
		aoption.WithAPIKey(ep.key), aoption.WithHTTPClient(h), aoption.WithMaxRetries(0), aoption.WithoutOpenTelemetry())
}

// Complete sends req and retries what is worth retrying, as the openai provider does (retryLoop); Anthropic's API
// has no slots to gate.
func (p *anthropicProvider) Complete(ctx context.Context, req Request) (Response, error) {
	params, perr := p.params(req)
	if perr != nil {
		return Response{}, perr
	}
	loop := retryLoop{cfg: p.cfg, model: p.model, req: req}
	return loop.run(ctx, func(ctx context.Context) (Response, *Error, time.Duration) {
		return p.once(ctx, req.Task, params)
	})
}

// params builds the Messages API request: system messages joined into the system prompt, the rest as alternating
// turns (in the native tool protocol when req offers tools), and cache breakpoints on the shared prefix.
func (p *anthropicProvider) params(req Request) (anthropic.MessageNewParams, *Error) {
	params := anthropic.MessageNewParams{Model: anthropic.Model(p.model.ID),
		MaxTokens: int64(AnthropicMaxTokens(p.model.MaxTokens))}
	if len(req.Messages) == 0 {
		return params, &Error{Kind: KindBadRequest, Msg: "the request has no messages"}
	}
	system, sizes, err := p.turns(req, &params)
	if err != nil {
		return params, err
	}
	if len(params.Messages) == 0 {
		return params, &Error{Kind: KindBadRequest, Msg: "the request has only system messages: Anthropic needs a user message"}
	}
	prefix := 0
	if len(system) > 0 {
		text := strings.Join(system, "\n\n")
		block := anthropic.TextBlockParam{Text: text}
		if prefix = p.estimate(text); prefix >= MinCacheTokens {
			block.CacheControl = anthropic.NewCacheControlEphemeralParam()
		}
		params.System = []anthropic.TextBlockParam{block}
	}
	// Breakpoints: the first turn (the issue and its context, shared by every sample and every later agent turn)
	// and the last (so the next agent turn reads this one's), each only where the prefix it ends is long enough to
	// be cached. With the system prompt's that is at most three of the API's four.
	for i := range params.Messages {
		prefix += sizes[i]
		if (i == 0 || i == len(params.Messages)-1) && prefix >= MinCacheTokens {
			markCache(&params.Messages[i])
		}
	}
	for _, t := range req.Tools {
		params.Tools = append(params.Tools, anthropic.ToolUnionParam{OfTool: anthropicTool(t)})
	}
	return params, nil
}

// turns appends req's messages to params as turns, a tool call's result as a tool_result block, and returns the
// system messages, which Anthropic takes apart, and each turn's estimated tokens, for the cache breakpoints.
func (p *anthropicProvider) turns(req Request, params *anthropic.MessageNewParams) (system []string, sizes []int, err *Error) {
	pending := "" // the id of the tool call whose result the next user message holds
	for i, m := range req.Messages {
		switch {
		case m.Role == "system" || m.Role == "developer":
			if len(params.Messages) > 0 {
				return nil, nil, &Error{Kind: KindBadRequest, Msg: fmt.Sprintf(
					"message %d is a %s message after the conversation began: Anthropic takes one system prompt", i+1, m.Role)}
			}
			system = append(system, m.Content)
			continue
		case m.Role == "assistant":
			var blocks []anthropic.ContentBlockParamUnion
			blocks, pending = assistantBlocks(m.Content, i, len(req.Tools) > 0)
			params.Messages = append(params.Messages, anthropic.NewAssistantMessage(blocks...))
		case m.Role == "user" && pending != "":
			params.Messages = append(params.Messages, anthropic.NewUserMessage(anthropic.NewToolResultBlock(pending, m.Content, false)))
			pending = ""
		case m.Role == "user":
			params.Messages = append(params.Messages, anthropic.NewUserMessage(anthropic.NewTextBlock(m.Content)))
		default:
			return nil, nil, &Error{Kind: KindBadRequest, Msg: fmt.Sprintf("message %d has role %q (want system, developer, user or assistant)", i+1, m.Role)}
		}
		sizes = append(sizes, p.estimate(m.Content))
	}
	return system, sizes, nil
}

// assistantBlocks are the blocks of the assistant turn that is message i: with tools offered, a call in the
// plain-text tool protocol becomes a tool_use block (after the turn's other text), whose id pending is.
func assistantBlocks(content string, i int, tools bool) (blocks []anthropic.ContentBlockParamUnion, pending string) {
	if tools {
		if c, ok, err := offlinetask.ParseAgentCall(content); ok && err == nil {
			pending = fmt.Sprintf("toolu_%d", i)
			if text := strings.TrimSpace(stripToolBlock(content)); text != "" {
				blocks = append(blocks, anthropic.NewTextBlock(text))
			}
			args := c.Args
			if args == nil {
				args = map[string]any{}
			}
			blocks = append(blocks, anthropic.NewToolUseBlock(pending, args, c.Tool))
		}
	}
	if len(blocks) == 0 {
		blocks = append(blocks, anthropic.NewTextBlock(content))
	}
	return blocks, pending
}

// anthropicTool is a tool's declaration in the Messages API's shape.
func anthropicTool(t Tool) *anthropic.ToolParam {
	schema := anthropic.ToolInputSchemaParam{Properties: t.Parameters["properties"]}
	if req, ok := t.Parameters["required"].([]string); ok {
		schema.Required = req
	} else if reqs, ok := t.Parameters["required"].([]any); ok {
		for _, r := range reqs {
			if s, ok := r.(string); ok {
				schema.Required = append(schema.Required, s)
			}
		}
	}
	tp := anthropic.ToolParam{Name: t.Name, InputSchema: schema}
	if t.Description != "" {
		tp.Description = anthropic.String(t.Description)
	}
	return &tp
}

// markCache sets a cache breakpoint on a turn's last block.
func markCache(m *anthropic.MessageParam) {
	var blocks []anthropic.ContentBlockParamUnion
	if m.OfUser != nil {
		blocks = m.OfUser.Content
	} else if m.OfAssistant != nil {
		blocks = m.OfAssistant.Content
	}
	if len(blocks) == 0 {
		return
	}
	b := &blocks[len(blocks)-1]
	switch {
	case b.OfText != nil:
		b.OfText.CacheControl = anthropic.NewCacheControlEphemeralParam()
	case b.OfToolResult != nil:
		b.OfToolResult.CacheControl = anthropic.NewCacheControlEphemeralParam()
	case b.OfToolUse != nil:
		b.OfToolUse.CacheControl = anthropic.NewCacheControlEphemeralParam()
	}
}

// estimate is a text's tokens as the provider's tokenizer counts them (o200k_base for a remote one, a byte in four
// when it cannot): close enough to tell a prefix worth caching.
func (p *anthropicProvider) estimate(text string) int {
	tok := p.cfg.tokenizer
	if strings.Contains(tok, ":") {
		tok = "o200k_base" // a remote tokenizer's exact count is not worth a request here
	}
	if n, err := tokens.Count(tok, text); err == nil {
		return n
	}
	return len(text) / 4
}

// once makes one HTTP attempt. wait is the wait the endpoint asked for, 0 when it named none.
func (p *anthropicProvider) once(ctx context.Context, task string, params anthropic.MessageNewParams) (Response, *Error, time.Duration) {
	actx, cancel := context.WithTimeout(ctx, p.cfg.callTimeout)
	defer cancel()
	var hres *http.Response
	ropts := []aoption.RequestOption{aoption.WithResponseInto(&hres), aoption.WithMiddleware(
		func(r *http.Request, next aoption.MiddlewareNext) (*http.Response, error) {
			return capAnswer(r, option.MiddlewareNext(next))
		})}
	if task != "" {
		ropts = append(ropts, aoption.WithHeader(TaskHeader, task))
	}
	if p.model.Temperature != nil {
		// The SDK's v2 params no longer carry the (deprecated) sampling parameters; the API still reads them.
		ropts = append(ropts, aoption.WithJSONSet("temperature", *p.model.Temperature))
	}
	res, err := p.messages.New(actx, params, ropts...)
	if e := answerTooLarge(err, hres); e != nil {
		return Response{}, e, 0
	}
	if err != nil {
		return Response{}, p.ep.Classify(ctx, actx, hres, err, p.cfg.callTimeout), retryAfter(hres)
	}
	if res == nil {
		return Response{}, &Error{Kind: KindBadResponse, Status: statusOf(hres), Msg: "the endpoint sent no message"}, 0
	}
	u, uerr := anthropicUsage([]byte(res.RawJSON()))
	if uerr != nil {
		return Response{}, &Error{Kind: KindBadResponse, Status: statusOf(hres), Msg: p.ep.Scrub(
			"the endpoint reported impossible usage: " + uerr.Error())}, 0
	}
	if len(res.Content) == 0 && res.StopReason == "" {
		// An error inside a 200 body, or a message with nothing in it: billed for what it reports, and retried.
		if st, kind, em, ok := bodyError(statusOf(hres), []byte(res.RawJSON())); ok {
			return Response{}, &Error{Kind: kind, Status: st, Msg: p.ep.Scrub("the message is an error: " + em), Paid: u}, 0
		}
		return Response{}, &Error{Kind: KindBadResponse, Status: statusOf(hres), Msg: "the message has no content", Paid: u}, 0
	}
	return Response{
		Text:    p.ep.ScrubText(anthropicAnswer(res.Content)),
		Usage:   u,
		CostUSD: Cost(u, p.model.Price),
		Model:   p.ep.ScrubText(string(res.Model)),
	}, nil, 0
}

// anthropicAnswer is a message's text blocks joined, with its first tool_use block, if any, written in the
// plain-text tool protocol (one call per turn, as the agent runs one tool per turn). Thinking blocks are not the
// answer and are left out.
func anthropicAnswer(blocks []anthropic.ContentBlockUnion) string {
	var text strings.Builder
	for _, b := range blocks {
		if b.Type == "text" {
			text.WriteString(b.Text)
		}
	}
	out := text.String()
	for _, b := range blocks {
		if b.Type != "tool_use" || b.Name == "" {
			continue
		}
		c := offlinetask.AgentCall{Tool: b.Name}
		if err := json.Unmarshal(b.Input, &c.Args); err != nil && len(b.Input) > 0 {
			return strings.TrimSpace(out+"\n\n") + "```tool\n{\"tool\": \"" + b.Name + "\", \"args\": " +
				string(b.Input) + "}\n```\n"
		}
		if out != "" && !strings.HasSuffix(out, "\n") {
			out += "\n"
		}
		return out + offlinetask.FormatAgentCall(c)
	}
	return out
}

// CheckAnthropicModel asks the endpoint ANTHROPIC_BASE_URL names whether it serves model id (GET /v1/models/{id},
// which resolves aliases such as claude-opus-4-1), with the key in ANTHROPIC_API_KEY: the error of a missing or
// refused key (KindAuth), of an id it does not serve (KindModelNotFound) or of an endpoint that does not answer.
// The error never holds the key.
func CheckAnthropicModel(ctx context.Context, id string, timeout time.Duration) (Endpoint, *Error) {
	ep, err := AnthropicEndpointFromEnv()
	if err != nil {
		e, _ := err.(*Error)
		return ep, e
	}
	client := anthropicClient(ep, &http.Client{Timeout: timeout})
	var hres *http.Response
	if _, err := client.Models.Get(ctx, id, anthropic.ModelGetParams{}, aoption.WithResponseInto(&hres)); err != nil {
		e := ep.Classify(ctx, ctx, hres, err, timeout)
		if e.Status == http.StatusNotFound {
			e.Kind = KindModelNotFound
		}
		return ep, e
	}
	return ep, nil
}

// The "anthropic" tokenizer scheme: "anthropic:MODEL" counts a text with Anthropic's count_tokens (POST
// /v1/messages/count_tokens, free) for MODEL, the text sent as one user message. The count is the text's: the
// message's own framing, measured once per model as the count of a one-character message less one, is taken off.
// Answers are cached by (endpoint, model, text digest), as the endpoint scheme's are.
func init() {
	tokens.Register(specs.TokenizerAnthropic, func(id string) (tokens.Counter, error) {
		return AnthropicCounter(context.Background(), id)
	})
}

// AnthropicCounter returns the counter of the "anthropic" scheme for model id.
func AnthropicCounter(ctx context.Context, id string) (tokens.Counter, error) {
	ep, err := AnthropicEndpointFromEnv()
	if err != nil {
		return nil, err
	}
	client := anthropicClient(ep, &http.Client{Timeout: tokenizeTimeout})
	raw := func(text string) (int, error) {
		var hres *http.Response
		res, err := client.Messages.CountTokens(ctx, anthropic.MessageCountTokensParams{Model: anthropic.Model(id),
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(text))}},
			aoption.WithResponseInto(&hres))
		if err != nil {
			e := ep.Classify(ctx, ctx, hres, err, tokenizeTimeout)
			e.Msg = "count_tokens: " + e.Msg
			return 0, e
		}
		if res.InputTokens < 0 || res.InputTokens > maxUsageTokens {
			return 0, &Error{Kind: KindBadResponse, Msg: fmt.Sprintf("count_tokens: %d input tokens", res.InputTokens)}
		}
		return int(res.InputTokens), nil
	}
	// The framing's count is cached like any count (a resolver is asked for a counter at every count), apart from
	// the texts' own.
	name := specs.TokenizerAnthropic + ":" + id
	message := tokens.Remote(name+" (message)", "anthropic-message\x00"+ep.Base+"\x00"+id, func(text string) (int, error) {
		n, err := raw(text)
		if err != nil {
			return 0, err
		}
		if e := framingTokens(n); e != nil {
			return 0, e
		}
		return n, nil
	})
	count := func(text string) (int, error) {
		one, err := message.Count(".")
		if err != nil {
			return 0, err
		}
		n, err := raw(text)
		if err != nil {
			return 0, err
		}
		own := n - (one - 1)
		if e := textTokens("count_tokens, less the message's framing", own, len(text)); e != nil {
			return 0, e
		}
		return own, nil
	}
	return tokens.Remote(name, "anthropic\x00"+ep.Base+"\x00"+id, count), nil
}
