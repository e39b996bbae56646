package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"ctxlab/activities/api/errkind"
	"ctxlab/activities/tokens"
	"ctxlab/specs"
)

// A text of about 100 KB: a count of its tokens below a few hundred, or above its bytes, is no real tokenizer's.
var longText = strings.Repeat("func add(a, b int) int { return a + b }\n", 2500)

// TestEndpointTokenCountsAreChecked is issue 39's sixth defect: a server's POST /tokenize answered -1000000000, the
// count became every reservation's size (so $0) and rows' context_tokens. Every count an endpoint gives for a text
// is of the right type, in range, and consistent with the text's length, or it is the endpoint's broken answer
// (bad_response), never a number; a sane answer is still taken.
func TestEndpointTokenCountsAreChecked(t *testing.T) {
	for name, c := range map[string]struct {
		body string // the /tokenize answer
		text string
	}{
		"negative":              {`{"count":-1000000000}`, "one two three"},
		"zero for a long text":  {`{"count":0}`, longText},
		"a few for a long text": {`{"count":3}`, longText},
		"no tokens for a text":  {`{"tokens":[]}`, longText},
		"more than its bytes":   {`{"count":5000}`, "one two three"},
		"absurd":                {`{"count":1000000000000}`, longText},
		"a string":              {`{"count":"12"}`, "one two three"},
		"fractional":            {`{"count":2.5}`, "one two three"},
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				fmt.Fprint(w, c.body)
			}))
			defer srv.Close()
			t.Setenv(specs.OpenAI.Env.BaseURL, srv.URL+"/v1")
			t.Setenv(specs.OpenAI.Env.Key, "")
			n, err := tokens.Count("endpoint:"+name, c.text) // a model id per case: counts are cached by server and model
			if err == nil {
				t.Fatalf("the answer %s counted %d tokens in a text of %d bytes, want it refused", c.body, n, len(c.text))
			}
			if KindOf(err) != errkind.BadResponse || !strings.Contains(err.Error(), "/tokenize") {
				t.Errorf("error %v (kind %s), want a bad_response naming /tokenize", err, KindOf(err))
			}
		})
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"count":25000}`)
	}))
	defer srv.Close()
	t.Setenv(specs.OpenAI.Env.BaseURL, srv.URL+"/v1")
	if n, err := tokens.Count("endpoint:sane", longText); err != nil || n != 25000 {
		t.Errorf("a sane count: %d, %v", n, err)
	}
	nullCount := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"count":null,"tokens":[7,8,9]}`)
	}))
	defer nullCount.Close()
	t.Setenv(specs.OpenAI.Env.BaseURL, nullCount.URL+"/v1")
	if n, err := tokens.Count("endpoint:null-count", "one two three"); err != nil || n != 3 {
		t.Errorf("a null count beside a list of tokens: %d, %v; want the list's 3", n, err)
	}
}

// TestAnthropicCountIsChecked: count_tokens' answer, less the message's framing, is a count of the text like any
// other: one that leaves a long text no tokens, or a framing larger than any message's, is refused.
func TestAnthropicCountIsChecked(t *testing.T) {
	for name, c := range map[string]struct{ framing, text int }{
		"text counted as nothing": {8, 8},
		"framing of thousands":    {5000, 30000},
	} {
		t.Run(name, func(t *testing.T) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var body struct {
					Messages []struct {
						Content []struct {
							Text string `json:"text"`
						} `json:"content"`
					} `json:"messages"`
				}
				_ = json.NewDecoder(r.Body).Decode(&body)
				n := c.text
				if body.Messages[0].Content[0].Text == "." {
					n = c.framing
				}
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprintf(w, `{"input_tokens":%d}`, n)
			}))
			defer ts.Close()
			t.Setenv(specs.Anthropic.Env.BaseURL, ts.URL)
			t.Setenv(specs.Anthropic.Env.Key, anthropicTestKey)
			n, err := tokens.Count("anthropic:"+strings.ReplaceAll(name, " ", "-"), longText)
			if err == nil || KindOf(err) != errkind.BadResponse || !strings.Contains(err.Error(), "count_tokens") {
				t.Errorf("count %d, error %v (kind %s): want a bad_response naming count_tokens", n, err, KindOf(err))
			}
		})
	}
}

// TestUsageIsConsistentWithTheText: an answer's usage that counts a 100 KB prompt as one token, or a long answer as
// none, is no money: the answer is a broken one (retried, then failed), as an impossible count is.
func TestUsageIsConsistentWithTheText(t *testing.T) {
	for name, usage := range map[string]string{
		"prompt of one token": `{"prompt_tokens":1,"completion_tokens":10}`,
		"answer of no tokens": `{"prompt_tokens":30000,"completion_tokens":0}`,
	} {
		t.Run(name, func(t *testing.T) {
			var calls atomic.Int32
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				w.Header().Set("Content-Type", "application/json")
				answer, _ := json.Marshal(longText)
				fmt.Fprintf(w, `{"id":"x","object":"chat.completion","created":1,"model":"fake-model-1","choices":[{"index":0,"message":{"role":"assistant","content":%s},"finish_reason":"stop"}],"usage":%s}`, answer, usage)
			}))
			t.Cleanup(ts.Close)
			t.Setenv(specs.OpenAI.Env.BaseURL, ts.URL+"/v1")
			t.Setenv(specs.OpenAI.Env.Key, testKey)
			req := Request{Task: specs.Patch.Task, Messages: []Message{{Role: "user", Content: longText}}}
			resp, err := newProvider(t, WithAttempts(2)).Complete(context.Background(), req)
			if err == nil {
				t.Fatalf("usage %s taken: %+v, $%g", usage, resp.Usage, resp.CostUSD)
			}
			e := wantKind(t, err, errkind.BadResponse, 200)
			if !strings.Contains(e.Msg, "usage") || e.Paid != (Usage{}) || calls.Load() != 2 {
				t.Errorf("error %v (paid %+v) after %d calls: want the usage named, no money, a retry", e, e.Paid,
					calls.Load())
			}
		})
	}
}

// TestImpossibleWindowsAreNotWindows: a context window or a slot count no server has (negative, or past any model's
// context) is not read as the model's context: the endpoint is taken to say nothing.
func TestImpossibleWindowsAreNotWindows(t *testing.T) {
	for name, c := range map[string]struct{ path, body string }{
		"props of an absurd n_ctx": {"/props", `{"default_generation_settings":{"n_ctx":4611686018427387904},"total_slots":1}`},
		"props of negative slots":  {"/props", `{"default_generation_settings":{"n_ctx":4096},"total_slots":-4}`},
		"slots of an absurd n_ctx": {"/slots", `[{"id":0,"n_ctx":4611686018427387904}]`},
		"models of an absurd len":  {"/v1/models", `{"data":[{"id":"fake-model-1","max_model_len":4611686018427387904}]}`},
	} {
		t.Run(name, func(t *testing.T) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == c.path {
					fmt.Fprint(w, c.body)
					return
				}
				w.WriteHeader(http.StatusNotFound)
			}))
			defer ts.Close()
			t.Setenv(specs.OpenAI.Env.BaseURL, ts.URL+"/v1")
			if got := DiscoverWindow(context.Background(), "fake-model-1"); got != (Window{}) {
				t.Errorf("window %+v from %s, want none", got, c.body)
			}
		})
	}
}

// TestServerPromptCountIsChecked: llama.cpp's count of a rendered prompt decides whether a call is sent at all (a
// prompt it counts past the context fails as context_length, without a call). A /tokenize that counts a short
// prompt as 100,000 tokens is not believed: the call goes out.
func TestServerPromptCountIsChecked(t *testing.T) {
	var completions atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/apply-template":
			fmt.Fprint(w, `{"prompt":"<|user|>fix the bug<|assistant|>"}`)
		case "/tokenize":
			fmt.Fprintf(w, `{"tokens":[%s0]}`, strings.Repeat("0,", 100_000))
		case "/v1/chat/completions":
			completions.Add(1)
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"id":"x","object":"chat.completion","created":1,"model":"fake-model-1","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":1}}`)
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	defer ts.Close()
	t.Setenv(specs.OpenAI.Env.BaseURL, ts.URL+"/v1")
	t.Setenv(specs.OpenAI.Env.Key, testKey)
	req := Request{Task: specs.Patch.Task, Messages: []Message{{Role: "user", Content: "fix the bug"}},
		Context: 4096, ContextSource: "llama.cpp /props"}
	if _, err := newProvider(t, WithAttempts(1)).Complete(context.Background(), req); err != nil ||
		completions.Load() != 1 {
		t.Errorf("a call whose prompt the server counted as 100,000 tokens: %v after %d calls, want it sent",
			err, completions.Load())
	}
}

// TestCheckUsage: a usage from any reader is held to what a call can report.
func TestCheckUsage(t *testing.T) {
	for _, u := range []Usage{{PromptTokens: -1}, {CompletionTokens: -1}, {PromptTokens: 10, CachedTokens: -1},
		{PromptTokens: 10, CachedTokens: 8, CacheWriteTokens: 3}, {PromptTokens: maxUsageTokens + 1}} {
		if CheckUsage(u) == nil {
			t.Errorf("%+v passes", u)
		}
	}
	if err := CheckUsage(Usage{PromptTokens: 10, CompletionTokens: 5, CachedTokens: 6, CacheWriteTokens: 4}); err != nil {
		t.Errorf("a real usage: %v", err)
	}
}
