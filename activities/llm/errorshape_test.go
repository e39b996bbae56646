package llm

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"ctxlab/activities/api/errkind"
	"ctxlab/specs"
)

// serverShape is one failure as a real server sends it: its status and body, byte for byte as the server's code or
// its users' reports show it (llama.cpp's server.cpp format_error_response, vLLM's and SGLang's ErrorResponse,
// Ollama's openai middleware, LiteLLM proxy, OpenRouter, Anthropic's OpenAI-compatible endpoint, OpenAI).
type serverShape struct {
	server, what string
	status       int
	body         string
	want         errkind.Kind
}

var serverShapes = []serverShape{
	// llama.cpp (llama-server)
	{"llama.cpp", "prompt longer than the context (-c)", 400,
		`{"error":{"code":400,"message":"request (8633 tokens) exceeds the available context size (2048 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":8633,"n_ctx":2048}}`,
		errkind.ContextLength},
	// The slots' shared KV cache (kv_unified) filled by the requests in flight together: every one of them gets
	// this, and each succeeds alone (a slot's own context running out is a 200 with finish_reason "length").
	{"llama.cpp", "shared context filled by concurrent requests", 500,
		`{"error":{"code":500,"message":"Context size has been exceeded.","type":"server_error"}}`, errkind.ContextCapacity},
	// An embeddings (or rerank) input longer than the server's physical batch (-ub, 2048 by default here): the
	// endpoint's setting, which no retry changes (seen from Debian's llama-server with whole files as inputs).
	{"llama.cpp", "embeddings input longer than the physical batch", 500,
		`{"error":{"code":500,"message":"input (2969 tokens) is too large to process. increase the physical batch size (current batch size: 2048)","type":"server_error"}}`,
		errkind.BadRequest},
	{"llama.cpp", "model still loading", 503,
		`{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}`, errkind.Server},
	{"llama.cpp", "--api-key set, wrong key", 401,
		`{"error":{"code":401,"message":"Invalid API Key","type":"authentication_error"}}`, errkind.Auth},
	{"llama.cpp", "wrong path under the base URL", 404,
		`{"error":{"code":404,"message":"File Not Found","type":"not_found_error"}}`, errkind.BadRequest},
	// vLLM
	{"vLLM", "prompt longer than max_model_len", 400,
		`{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 6000 tokens (5000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}`,
		errkind.ContextLength},
	{"vLLM", "the spec's max_tokens does not fit beside a prompt that does", 400,
		`{"object":"error","message":"This model's maximum context length is 6048 tokens. However, you requested 6616 tokens (568 in the messages, 6048 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}`,
		errkind.ContextWindow},
	{"vLLM", "model id it does not serve", 404,
		`{"object":"error","message":"The model ` + "`gpt-4o`" + ` does not exist.","type":"NotFoundError","param":null,"code":404}`,
		errkind.ModelNotFound},
	// SGLang
	{"SGLang", "prompt longer than the context", 400,
		`{"object":"error","message":"The input (61709 tokens) is longer than the model's context length (40960 tokens).","type":"BadRequestError","param":null,"code":400}`,
		errkind.ContextLength},
	// Ollama
	{"Ollama", "model not pulled", 404,
		`{"error":{"message":"model \"llama3\" not found, try pulling it first","type":"api_error","param":null,"code":null}}`,
		errkind.ModelNotFound},
	{"Ollama", "input longer than num_ctx", 400, `{"error":"the input length exceeds the context length"}`,
		errkind.ContextLength},
	// LiteLLM proxy
	{"LiteLLM proxy", "ContextWindowExceededError", 400,
		`{"error":{"message":"litellm.BadRequestError: litellm.ContextWindowExceededError: AnthropicError - {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"prompt is too long: 209303 tokens > 200000 maximum\"}}\nReceived Model Group=anthropic/claude-3-5-sonnet-20241022\nAvailable Model Group Fallbacks=None","type":null,"param":null,"code":"400"}}`,
		errkind.ContextLength},
	{"LiteLLM proxy", "max_tokens beside a prompt that fits", 400,
		`{"error":{"message":"litellm.BadRequestError: AnthropicException - b'{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"input length and ` + "`max_tokens`" + ` exceed context limit: 179413 + 32768 > 200000, decrease input length or ` + "`max_tokens`" + ` and try again\"}}'. Received Model Group=anthropic/claude-sonnet-4-20250514\nAvailable Model Group Fallbacks=None","type":null,"param":null,"code":"400"}}`,
		errkind.ContextWindow},
	{"LiteLLM proxy", "model name it does not route", 400,
		`{"error":{"message":"Invalid model name passed in model=gpt-9. Call ` + "`/v1/models`" + ` to view available models for your key.","type":"invalid_request_error","param":"model","code":"400"}}`,
		errkind.ModelNotFound},
	// OpenRouter
	{"OpenRouter", "out of credit", 402,
		`{"error":{"message":"Insufficient credits. Add more using https://openrouter.ai/settings/credits","code":402,"metadata":{"limit_source":"openrouter_credits"}}}`,
		errkind.Quota},
	{"OpenRouter", "max_tokens beside a prompt that fits", 400,
		`{"error":{"message":"This endpoint's maximum context length is 131072 tokens. However, you requested about 141607 tokens (10535 of text input, 131072 in the output). Please reduce the length of either one, or use the \"middle-out\" transform to compress your prompt automatically.","code":400,"metadata":{"provider_name":"Chutes"}}}`,
		errkind.ContextWindow},
	{"OpenRouter", "prompt longer than the context", 400,
		`{"error":{"message":"This endpoint's maximum context length is 65536 tokens. However, you requested about 92208 tokens (70833 of text input, 21375 in the output). Please reduce the length of either one, or use the \"middle-out\" transform to compress your prompt automatically.","code":400,"metadata":{"provider_name":null}}}`,
		errkind.ContextLength},
	// Anthropic's OpenAI-compatible endpoint (its errors keep Anthropic's shape)
	{"Anthropic", "prompt too long", 400,
		`{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 209303 tokens > 200000 maximum"}}`,
		errkind.ContextLength},
	{"Anthropic", "overloaded", 529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
		errkind.Server},
	{"Anthropic", "unknown model", 404, `{"type":"error","error":{"type":"not_found_error","message":"model: claude-9"}}`,
		errkind.ModelNotFound},
	{"Anthropic", "bad key", 401,
		`{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`, errkind.Auth},
	{"Anthropic", "no credit", 400,
		`{"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."}}`,
		errkind.Quota},
	// OpenAI
	{"OpenAI", "unknown model", 404,
		`{"error":{"message":"The model ` + "`gpt-9`" + ` does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}`,
		errkind.ModelNotFound},
	{"OpenAI", "out of quota", 429,
		`{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`,
		errkind.Quota},
	{"OpenAI", "prompt too long", 400,
		`{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 202868 tokens (202767 in the messages, 101 in the functions). Please reduce the length of the messages or functions.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
		errkind.ContextLength},
	{"OpenAI", "an unsupported parameter", 400,
		`{"error":{"message":"Unsupported value: 'temperature' does not support 0.2 with this model. Only the default (1) value is supported.","type":"invalid_request_error","param":"temperature","code":"unsupported_value"}}`,
		errkind.BadRequest},
	// Errors inside a 200 body (issue 28, item 12): classified as the error they are, not as a broken answer.
	{"OpenAI", "insufficient_quota inside a 200 body", 200,
		`{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`,
		errkind.Quota},
	{"OpenRouter", "a rate limit inside a 200 body", 200,
		`{"error":{"message":"Rate limit exceeded: free-models-per-day.","code":429,"metadata":{}}}`, errkind.RateLimit},
	{"a proxy", "an error of no known kind inside a 200 body", 200, `{"error":{"message":"upstream said no"}}`,
		errkind.BadResponse},
}

// replay serves one status and body for every request and counts the requests.
func replay(t *testing.T, status int, body string) *atomic.Int32 {
	t.Helper()
	var calls atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}))
	t.Cleanup(ts.Close)
	t.Setenv(specs.OpenAI.Env.BaseURL, ts.URL+"/v1")
	t.Setenv(specs.OpenAI.Env.Key, testKey)
	return &calls
}

// TestRealServerErrorShapes: each server's failure, as the server sends it, gets the kind that says whose failure it
// is. Before, llama.cpp's 500 "Context size has been exceeded." was an outage (waited on for hours), its 400
// exceed_context_size_error a bad_request, every model id the endpoint does not serve a bad_request filed as the
// model's, OpenRouter's 402 and Anthropic's "credit balance is too low" bad requests, and insufficient_quota inside a
// 200 a broken answer retried.
func TestRealServerErrorShapes(t *testing.T) {
	for _, c := range serverShapes {
		t.Run(c.server+": "+c.what, func(t *testing.T) {
			calls := replay(t, c.status, c.body)
			_, err := newProvider(t, WithAttempts(2)).Complete(context.Background(), localizeRequest())
			e, ok := err.(*Error)
			if !ok {
				t.Fatalf("error %v (%T), want *Error", err, err)
			}
			if e.Kind != c.want {
				t.Errorf("kind %s, want %s (class %s): %v", e.Kind, c.want, errkind.ClassOf(string(c.want)), err)
			}
			if want := 1 + btoi(c.want.Retryable()); int(calls.Load()) != want {
				t.Errorf("%d requests, want %d (a %s is retried: %v)", calls.Load(), want, c.want, c.want.Retryable())
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestDeterministicServerErrorBecomesFinal: a 5xx whose body is the same error, for the same request, every attempt
// in a row is not an outage: the call gives up as repeated_error (not waited on: the row fails now, and a re-run
// tries again). An outage's message, which says so, or one a gateway sends, stays a server error (waited on), however
// often it repeats. Before, every 5xx was waited on, for up to 8 rounds of 1 to 30 minutes.
func TestDeterministicServerErrorBecomesFinal(t *testing.T) {
	for _, c := range []struct {
		what   string
		status int
		body   string
		want   errkind.Kind
	}{
		{"llama.cpp: a template it cannot render", 500,
			`{"error":{"code":500,"message":"Unable to generate parser for this template. Automatic parser generation failed: unexpected token","type":"server_error"}}`,
			errkind.RepeatedError},
		{"OpenAI: its outage text", 500,
			`{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`,
			errkind.Server},
		{"llama.cpp: loading", 503, `{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}`, errkind.Server},
		{"nginx: a gateway page", 500, `<html><head><title>500 Internal Server Error</title></head></html>`, errkind.Server},
		{"Anthropic: overloaded", 529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, errkind.Server},
	} {
		t.Run(c.what, func(t *testing.T) {
			calls := replay(t, c.status, c.body)
			_, err := newProvider(t, WithAttempts(4)).Complete(context.Background(), localizeRequest())
			e := wantKind(t, err, c.want, c.status)
			if calls.Load() != 4 {
				t.Errorf("%d requests, want the 4 attempts before concluding", calls.Load())
			}
			if c.want == errkind.RepeatedError && (e.Kind.Retryable() || e.Kind.Waited() ||
				!strings.Contains(e.Msg, "4 times in a row")) {
				t.Errorf("a repeated error must be final for the sweep and say why: %v", e)
			}
		})
	}
	// With fewer attempts than minRepeats nothing is concluded.
	replay(t, 500, `{"error":{"code":500,"message":"Unable to generate parser for this template.","type":"server_error"}}`)
	_, err := newProvider(t, WithAttempts(2)).Complete(context.Background(), localizeRequest())
	wantKind(t, err, errkind.Server, 500)
}

// TestImpossibleUsageIsNoMoney: negative, fractional, non-numeric or absurd token counts make the answer a broken one
// (bad_response: retried, then failed), never a cost; a sane count after them is taken. Before, usage of -3000 tokens
// became a negative cost that let a $1 cap pass $3.50 of calls.
func TestImpossibleUsageIsNoMoney(t *testing.T) {
	for name, usage := range map[string]string{
		"negative":   `{"prompt_tokens":-3000,"completion_tokens":10}`,
		"fractional": `{"prompt_tokens":12.5,"completion_tokens":10}`,
		"a string":   `{"prompt_tokens":"NaN","completion_tokens":10}`,
		"absurd":     `{"prompt_tokens":10,"completion_tokens":1e15}`,
	} {
		t.Run(name, func(t *testing.T) {
			var calls atomic.Int32
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				u := usage
				if calls.Add(1) == 3 {
					u = `{"prompt_tokens":100,"completion_tokens":20}`
				}
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprintf(w, `{"id":"x","object":"chat.completion","created":1,"model":"fake-model-1","choices":[{"index":0,"message":{"role":"assistant","content":"1. a.go"},"finish_reason":"stop"}],"usage":%s}`, u)
			}))
			t.Cleanup(ts.Close)
			t.Setenv(specs.OpenAI.Env.BaseURL, ts.URL+"/v1")
			t.Setenv(specs.OpenAI.Env.Key, testKey)
			_, err := newProvider(t, WithAttempts(2)).Complete(context.Background(), localizeRequest())
			e := wantKind(t, err, errkind.BadResponse, 200)
			if !strings.Contains(e.Msg, "usage.") {
				t.Errorf("the error does not say which count: %v", e)
			}
			resp, err := newProvider(t, WithAttempts(2)).Complete(context.Background(), localizeRequest())
			if err != nil || resp.Usage != (Usage{PromptTokens: 100, CompletionTokens: 20}) || resp.CostUSD <= 0 {
				t.Errorf("the sane answer after them: %+v, %v", resp, err)
			}
		})
	}
}
