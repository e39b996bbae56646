package llm

import (
	"context"
	"ctxlab/activities/api/errkind"
	"ctxlab/specs"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// llamaLike answers as llama-server does (the shapes of Debian's llama.cpp b11669, seen with stories260K): /props
// with default_generation_settings.n_ctx, /apply-template, /tokenize (a token per word here) and chat completions,
// whose max_tokens it records. A prompt at or past the context is refused with its real 400.
type llamaLike struct {
	nCtx int
	mu   sync.Mutex
	sent []*int64 // max_tokens of each chat request (nil: none)
}

func (s *llamaLike) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	_ = json.NewDecoder(r.Body).Decode(&body)
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/props":
		fmt.Fprintf(w, `{"default_generation_settings":{"params":{"n_predict":-1},"n_ctx":%d},"total_slots":4}`, s.nCtx)
	case "/apply-template":
		var b strings.Builder
		for _, m := range body["messages"].([]any) {
			mm := m.(map[string]any)
			fmt.Fprintf(&b, "<|im_start|>%s\n%s<|im_end|>\n", mm["role"], mm["content"])
		}
		b.WriteString("<|im_start|>assistant\n")
		json.NewEncoder(w).Encode(map[string]any{"prompt": b.String()})
	case "/tokenize":
		n := len(strings.Fields(body["content"].(string)))
		json.NewEncoder(w).Encode(map[string]any{"tokens": make([]int, n)})
	case "/v1/chat/completions":
		var mt *int64
		if v, ok := body["max_tokens"].(float64); ok {
			n := int64(v)
			mt = &n
		}
		s.mu.Lock()
		s.sent = append(s.sent, mt)
		s.mu.Unlock()
		prompt := 3 // the template's markup
		for _, m := range body["messages"].([]any) {
			prompt += len(strings.Fields(m.(map[string]any)["content"].(string)))
		}
		fmt.Fprintf(w, `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Once upon a time"},"finish_reason":"stop"}],"usage":{"prompt_tokens":%d,"completion_tokens":4}}`, prompt)
	default:
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"error":{"code":404,"message":"File Not Found","type":"not_found_error"}}`)
	}
}

func words(n int) string { return strings.Repeat("cat ", n) }

// TestMaxTokensFitTheContext: against a server that reports its context, a call asks for no more than the context
// leaves beside the prompt (the server's own count), so a local server is never asked to fill its context; a prompt
// the server counts at or past the context fails as context_length without a call. Before, the spec's max_tokens
// (4,096 by default) went out as it was, and llama-server filled its context.
func TestMaxTokensFitTheContext(t *testing.T) {
	srv := &llamaLike{nCtx: 1024}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	t.Setenv(specs.OpenAI.Env.BaseURL, ts.URL+"/v1")
	t.Setenv(specs.OpenAI.Env.Key, "")
	w := DiscoverWindow(context.Background(), "stories260K")
	if w.Tokens != 1024 || w.Source != "llama.cpp /props" || w.Slots != 4 {
		t.Fatalf("window %+v, want 1024 from /props", w)
	}
	for _, c := range []struct {
		specMax, words int
		want           int64 // max_tokens sent
	}{
		{4096, 100, 1024 - 100 - 3}, // the template adds 3 "tokens" of markup to one user message here
		{200, 100, 200},             // a cap the context can hold goes as it is
		{0, 10, 1024 - 10 - 3},      // no max_tokens in the spec: DefaultMaxTokens, lowered to fit
		{4096, 1020, 1},             // one token left
	} {
		m := testModel()
		m.MaxTokens = c.specMax
		p, err := New(m)
		if err != nil {
			t.Fatal(err)
		}
		req := Request{Task: specs.Patch.Task, Messages: []Message{{Role: "user", Content: words(c.words)}},
			Context: w.Tokens, ContextSource: w.Source}
		if _, err := p.Complete(context.Background(), req); err != nil {
			t.Fatalf("%d words, max_tokens %d: %v", c.words, c.specMax, err)
		}
		got := srv.sent[len(srv.sent)-1]
		if got == nil || *got != c.want {
			t.Errorf("%d words, spec max_tokens %d: sent max_tokens %s, want %d", c.words, c.specMax, show(got), c.want)
		}
	}
	before := len(srv.sent)
	p, _ := New(testModel())
	_, err := p.Complete(context.Background(), Request{Task: specs.Patch.Task,
		Messages: []Message{{Role: "user", Content: words(1021)}}, Context: w.Tokens, ContextSource: w.Source})
	e := wantKind(t, err, errkind.ContextLength, 0)
	if len(srv.sent) != before || !strings.Contains(e.Msg, "1024 tokens") || !strings.Contains(e.Msg, "context") {
		t.Errorf("a prompt past the context: %d calls made, message %q", len(srv.sent)-before, e.Msg)
	}
}

// TestDiscoverWindowShapes: vLLM's max_model_len and llama.cpp's /slots are read too; a server that says nothing
// gives no window, and a remote one no default cap.
func TestDiscoverWindowShapes(t *testing.T) {
	for name, c := range map[string]struct {
		path, body string
		want       Window
	}{
		"vLLM": {"/v1/models", `{"object":"list","data":[{"id":"other","max_model_len":2048},{"id":"fake-model-1","object":"model","owned_by":"vllm","max_model_len":32768}]}`,
			Window{Tokens: 32768, Source: "/v1/models max_model_len"}},
		"llama.cpp slots": {"/slots", `[{"id":0,"n_ctx":512},{"id":1,"n_ctx":2048}]`,
			Window{Tokens: 512, Source: "llama.cpp /slots", Slots: 2}},
		"silent": {"/v1/models", `{"object":"list","data":[{"id":"fake-model-1"}]}`, Window{}},
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
			if got := DiscoverWindow(context.Background(), "fake-model-1"); got != c.want {
				t.Errorf("window %+v, want %+v", got, c.want)
			}
		})
	}
	if MaxTokensCap(0, "https://api.openai.com/v1/", 0) != 0 || MaxTokensCap(0, "http://127.0.0.1:8090/v1", 0) !=
		DefaultMaxTokens || MaxTokensCap(0, "https://gpu.example/v1", 8192) != DefaultMaxTokens ||
		MaxTokensCap(300, "https://api.openai.com/v1/", 0) != 300 {
		t.Error("MaxTokensCap: the spec's cap, else the default only for a local server or a known context")
	}
}

func show(p *int64) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprint(*p)
}
