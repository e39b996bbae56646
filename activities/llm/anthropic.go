package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3/option"

	"ctxlab/activities/api/errkind"
	"ctxlab/activities/tokens"
	"ctxlab/internal/offlinetask"
	"ctxlab/specs"
)

// The anthropic provider (specs.Anthropic): Anthropic's Messages API at ANTHROPIC_BASE_URL (default Anthropic's)
// with the key in ANTHROPIC_API_KEY, through the official Go SDK with its environment defaults, config profiles and
// retries off. The model ID, temperature and max_tokens (AnthropicMaxTokens) come from the spec's model; the price
// table turns usage into cost, cache reads at cached_input and cache writes at cache_write. The retry loop tries 429
// (honouring retry-after), 529 overloaded, other 5xx, timeouts and broken answers again, and never a prompt too long,
// an authentication, permission or billing error, or another request error. Its errors read as OpenAI-compatible
// servers' do (errorshape.go). The config's tokenizer estimates whether a prefix is long enough to mark for the
// prompt cache.
func init() {
	Register(specs.Anthropic, Implementation{New: newAnthropic, Usage: anthropicUsage, Errors: OpenAICompatibleErrors,
		MaxTokens: func(specMax int, _ string, _ int) int { return AnthropicMaxTokens(specMax) },
		Counter:   AnthropicCounter, Check: checkAnthropic})
}

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

// anthropicMessages calls Anthropic's Messages API.
type anthropicMessages struct {
	model    specs.Model
	cfg      Config
	messages anthropic.MessageService
	ep       Endpoint
}

func newAnthropic(m specs.Model, cfg Config) (Client, error) {
	ep, err := ReadEndpoint(specs.Anthropic)
	if err != nil {
		return nil, err
	}
	client := anthropicClient(ep, cfg.HTTPClient)
	return &anthropicMessages{model: m, cfg: cfg, messages: client.Messages, ep: ep}, nil
}

// anthropicClient is the SDK's client for ep: only what ctxlab sets, none of the SDK's environment defaults (its own
// reading of ANTHROPIC_* variables, config profiles, federation), no retries of its own, and no OpenTelemetry spans
// (which could carry prompts to whatever tracer a process registers).
func anthropicClient(ep Endpoint, h *http.Client) anthropic.Client {
	return anthropic.NewClient(aoption.WithoutEnvironmentDefaults(), aoption.WithBaseURL(ep.Base),
		aoption.WithAPIKey(ep.key), aoption.WithHTTPClient(h), aoption.WithMaxRetries(0), aoption.WithoutOpenTelemetry())
}

// Prepare builds the request every attempt sends; Anthropic's API has no slots to gate.
func (p *anthropicMessages) Prepare(_ context.Context, req Request) (Attempt, *Error) {
	params, perr := p.params(req)
	if perr != nil {
		return Attempt{}, perr
	}
	return Attempt{Send: func(ctx context.Context) (Response, *Error, time.Duration) {
		return p.ep.Exchange(ctx, p.cfg.CallTimeout, p.model.Price, p.send(req.Task, params))
	}}, nil
}

// params builds the Messages API request: system messages joined into the system prompt, the rest as alternating
// turns (in the native tool protocol when req offers tools), and cache breakpoints on the shared prefix.
func (p *anthropicMessages) params(req Request) (anthropic.MessageNewParams, *Error) {
	params := anthropic.MessageNewParams{Model: anthropic.Model(p.model.ID),
		MaxTokens: int64(AnthropicMaxTokens(p.model.MaxTokens))}
	if len(req.Messages) == 0 {
		return params, &Error{Kind: errkind.BadRequest, Msg: "the request has no messages"}
	}
	system, sizes, err := p.turns(req, &params)
	if err != nil {
		return params, err
	}
	if len(params.Messages) == 0 {
		return params, &Error{Kind: errkind.BadRequest, Msg: "the request has only system messages: Anthropic needs a user message"}
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
func (p *anthropicMessages) turns(req Request, params *anthropic.MessageNewParams) (system []string, sizes []int, err *Error) {
	pending := "" // the id of the tool call whose result the next user message holds
	for i, m := range req.Messages {
		switch {
		case m.Role == "system" || m.Role == "developer":
			if len(params.Messages) > 0 {
				return nil, nil, &Error{Kind: errkind.BadRequest, Msg: fmt.Sprintf(
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
			return nil, nil, &Error{Kind: errkind.BadRequest, Msg: fmt.Sprintf("message %d has role %q (want system, developer, user or assistant)", i+1, m.Role)}
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
func (p *anthropicMessages) estimate(text string) int {
	tok := p.cfg.Tokenizer
	if strings.Contains(tok, ":") {
		tok = "o200k_base" // a remote tokenizer's exact count is not worth a request here
	}
	if n, err := tokens.Count(tok, text); err == nil {
		return n
	}
	return len(text) / 4
}

// send is one Messages API call through the SDK.
func (p *anthropicMessages) send(task string, params anthropic.MessageNewParams) func(context.Context, **http.Response) (Reply, error) {
	return func(actx context.Context, hres **http.Response) (Reply, error) {
		ropts := []aoption.RequestOption{aoption.WithResponseInto(hres), aoption.WithMiddleware(
			func(r *http.Request, next aoption.MiddlewareNext) (*http.Response, error) {
				return capAnswer(r, option.MiddlewareNext(next))
			})}
		if task != "" {
			ropts = append(ropts, aoption.WithHeader(offlinetask.TaskHeader, task))
		}
		if p.model.Temperature != nil {
			// The SDK's params do not carry the deprecated sampling parameters; the API still reads them.
			ropts = append(ropts, aoption.WithJSONSet("temperature", *p.model.Temperature))
		}
		res, err := p.messages.New(actx, params, ropts...)
		switch {
		case err != nil:
			return Reply{}, err
		case res == nil:
			return Reply{Missing: "the endpoint sent no message"}, nil
		case len(res.Content) == 0 && res.StopReason == "":
			// An error inside a 200 body, or a message with nothing in it: billed for what it reports, and retried.
			return Reply{Body: []byte(res.RawJSON()), Missing: "the message has no content"}, nil
		}
		return Reply{Body: []byte(res.RawJSON()), Text: anthropicAnswer(res.Content), Model: string(res.Model)}, nil
	}
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

// checkAnthropic asks the endpoint ANTHROPIC_BASE_URL names whether it serves m's id (GET /v1/models/{id}, which
// resolves aliases such as claude-opus-4-1) with the key in ANTHROPIC_API_KEY: a missing or refused key, an id it
// does not serve and an endpoint that does not answer are problems. Nothing it says holds the key.
func checkAnthropic(ctx context.Context, m specs.Model, timeout time.Duration) ModelCheck {
	ep, err := ReadEndpoint(specs.Anthropic)
	if err != nil {
		return ModelCheck{Problem: errorText(err)}
	}
	client := anthropicClient(ep, &http.Client{Timeout: timeout})
	var hres *http.Response
	_, err = client.Models.Get(ctx, m.ID, anthropic.ModelGetParams{}, aoption.WithResponseInto(&hres))
	if err == nil {
		return ModelCheck{Served: true, Host: ep.Host}
	}
	le := ep.Classify(ctx, ctx, hres, err, timeout)
	switch {
	case le.Kind == errkind.Auth:
		return ModelCheck{Host: ep.Host, Problem: fmt.Sprintf("the endpoint at %s refuses the key (HTTP %d)", ep.Host,
			le.Status), Fix: "export the right key in " + specs.Anthropic.Env.Key}
	case le.Kind == errkind.ModelNotFound || le.Status == http.StatusNotFound:
		return ModelCheck{Host: ep.Host, Problem: fmt.Sprintf("the endpoint at %s does not serve model id %q", ep.Host,
			m.ID), Fix: "set the model's id to one it serves"}
	}
	return ModelCheck{Host: ep.Host, Problem: fmt.Sprintf("the endpoint at %s does not answer GET /v1/models/%s: %s",
		ep.Host, m.ID, errorText(le)), Fix: "check the network, or point " + specs.Anthropic.Env.BaseURL + " at the gateway"}
}

// AnthropicCounter is the anthropic provider's counter (its scheme: tokenizer "anthropic:MODEL"): it counts a text
// with Anthropic's count_tokens (POST /v1/messages/count_tokens, free) for model id, the text sent as one user
// message. The count is the text's: the message's own framing, measured once per model as the count of a
// one-character message less one, is taken off. Answers are cached by (endpoint, model, text digest), as the
// openai scheme's are.
func AnthropicCounter(ctx context.Context, id string) (tokens.Counter, error) {
	ep, err := ReadEndpoint(specs.Anthropic)
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
			return 0, &Error{Kind: errkind.BadResponse, Msg: fmt.Sprintf("count_tokens: %d input tokens", res.InputTokens)}
		}
		return int(res.InputTokens), nil
	}
	// The framing's count is cached like any count (a resolver is asked for a counter at every count), apart from
	// the texts' own.
	name := specs.Anthropic.Counting.Scheme + ":" + id
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
