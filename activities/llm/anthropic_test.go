package llm

import (
	"context"
	"errors"
	"math"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"ctxlab/activities/api/errkind"
	"ctxlab/activities/tokens"
	"ctxlab/internal/offlinetask"
	"ctxlab/specs"
	"ctxlab/testkit/fakeanthropic"
)

const anthropicTestKey = "sk-ant-test-0123456789abcdef"

func anthropicModel() specs.Model {
	temp := 0.0
	return specs.Model{Name: "claude", Provider: "anthropic", ID: "claude-fake-1", Temperature: &temp, MaxTokens: 1000,
		Price: specs.Price{Input: 3, Output: 15, CachedInput: 0.3, CacheWrite: 3.75}}
}

// serveAnthropic starts fake behind httptest, points the environment at it and returns a provider for it.
func serveAnthropic(t *testing.T, fake *fakeanthropic.Server, opts ...Option) Provider {
	t.Helper()
	ts := httptest.NewServer(fake)
	t.Cleanup(ts.Close)
	t.Setenv(specs.Anthropic.Env.BaseURL, ts.URL)
	t.Setenv(specs.Anthropic.Env.Key, anthropicTestKey)
	p, err := New(anthropicModel(), append([]Option{WithBaseDelay(time.Millisecond),
		WithMaxDelay(time.Second)}, opts...)...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p
}

func TestAnthropicAnswersAndPricesCacheReadsAndWrites(t *testing.T) {
	fake := &fakeanthropic.Server{Answer: func(fakeanthropic.Request) fakeanthropic.Reply {
		return fakeanthropic.Reply{Text: "the answer"}
	}}
	p := serveAnthropic(t, fake)
	// A system prompt well past the cache's minimum: marked, written on the first call, read on the second.
	system := strings.Repeat("Shared instructions and the issue's inventory. ", 400)
	req := Request{Task: specs.Patch.Task, Messages: []Message{{Role: "system", Content: system},
		{Role: "user", Content: "fix the bug"}}}
	first, err := p.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if first.Text != "the answer" || first.Model != "claude-fake-1" {
		t.Fatalf("answer %q from %q", first.Text, first.Model)
	}
	got := fake.Requests()
	if len(got) != 1 || got[0].MaxTokens == nil || *got[0].MaxTokens != 1000 || got[0].Temperature == nil ||
		*got[0].Temperature != 0 || got[0].Model != "claude-fake-1" {
		t.Fatalf("request %+v", got)
	}
	if len(got[0].System) != 1 || got[0].System[0].CacheControl == nil || got[0].System[0].CacheControl.Type != "ephemeral" {
		t.Fatalf("the long system prompt is not marked for the cache: %+v", got[0].System)
	}
	if !fake.KeySeen(anthropicTestKey) {
		t.Fatal("the key was not sent as x-api-key")
	}
	u := first.Usage
	// The first user turn ends a prefix past the minimum too: marked, so the whole prompt is written.
	if n := got[0].Breakpoints(); n != 2 {
		t.Fatalf("%d cache breakpoints, want 2 (the system prompt and the first user turn)", n)
	}
	if u.CacheWriteTokens == 0 || u.CachedTokens != 0 || u.PromptTokens != u.CacheWriteTokens {
		t.Fatalf("first call's usage %+v: want a cache write and no read", u)
	}
	second, err := p.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	v := second.Usage
	if v.CachedTokens != u.CacheWriteTokens || v.CacheWriteTokens != 0 || v.PromptTokens != u.PromptTokens {
		t.Fatalf("second call's usage %+v after %+v: want the write read back, the same prompt tokens", v, u)
	}
	// Priced apart: reads at cached_input, writes at cache_write, the rest at input.
	plain := float64(v.PromptTokens - v.CachedTokens)
	want := (plain*3 + float64(v.CachedTokens)*0.3 + float64(v.CompletionTokens)*15) / 1e6
	if math.Abs(second.CostUSD-want) > 1e-12 {
		t.Fatalf("cost %v, want %v (usage %+v)", second.CostUSD, want, v)
	}
	wantFirst := (float64(u.PromptTokens-u.CacheWriteTokens)*3 + float64(u.CacheWriteTokens)*3.75 +
		float64(u.CompletionTokens)*15) / 1e6
	if math.Abs(first.CostUSD-wantFirst) > 1e-12 || first.CostUSD <= second.CostUSD {
		t.Fatalf("first cost %v, want %v (more than the cached call's %v)", first.CostUSD, wantFirst, second.CostUSD)
	}
}

func TestAnthropicShortPromptIsNotMarkedForTheCache(t *testing.T) {
	fake := &fakeanthropic.Server{}
	p := serveAnthropic(t, fake)
	if _, err := p.Complete(context.Background(), Request{Messages: []Message{{Role: "system", Content: "be brief"},
		{Role: "user", Content: "hello"}}}); err != nil {
		t.Fatal(err)
	}
	if n := fake.Requests()[0].Breakpoints(); n != 0 {
		t.Fatalf("%d cache breakpoints on a prompt far below %d tokens: a write would cost more and be read by none", n, MinCacheTokens)
	}
}

func TestAnthropicFailureKinds(t *testing.T) {
	for _, tc := range []struct {
		name     string
		fail     fakeanthropic.Failure
		kind     errkind.Kind
		requests int // how many the provider made (4 attempts)
	}{
		{"prompt too long", fakeanthropic.PromptTooLong, errkind.ContextLength, 1},
		{"unauthorized", fakeanthropic.Unauthorized, errkind.Auth, 1},
		{"permission", fakeanthropic.Permission, errkind.Auth, 1},
		{"model not found", fakeanthropic.NotFound, errkind.ModelNotFound, 1},
		{"billing", fakeanthropic.Billing, errkind.Quota, 1},
		{"overloaded every time", fakeanthropic.Overloaded, errkind.Server, 4},
		{"server error every time", fakeanthropic.ServerError, errkind.Server, 4},
		{"rate limited every time", fakeanthropic.RateLimit, errkind.RateLimit, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := &fakeanthropic.Server{RetryAfter: 5 * time.Millisecond}
			p := serveAnthropic(t, fake)
			fake.Fail(tc.fail, tc.fail, tc.fail, tc.fail)
			_, err := p.Complete(context.Background(), Request{Messages: []Message{{Role: "user", Content: "hi"}}})
			if err == nil {
				t.Fatal("no error")
			}
			if KindOf(err) != tc.kind {
				t.Fatalf("kind %s, want %s: %v", KindOf(err), tc.kind, err)
			}
			if n := len(fake.Requests()); n != tc.requests {
				t.Fatalf("%d requests, want %d: %v", n, tc.requests, err)
			}
			if strings.Contains(err.Error(), anthropicTestKey) {
				t.Fatalf("the key is in the error: %v", err)
			}
			if tc.kind == errkind.Auth && !strings.Contains(err.Error(), specs.Anthropic.Env.Key) {
				t.Fatalf("an auth error does not name %s: %v", specs.Anthropic.Env.Key, err)
			}
		})
	}
}

func TestAnthropicRetriesTransientFailuresThenAnswers(t *testing.T) {
	fake := &fakeanthropic.Server{RetryAfter: 20 * time.Millisecond}
	p := serveAnthropic(t, fake)
	fake.Fail(fakeanthropic.RateLimit, fakeanthropic.Overloaded, fakeanthropic.ServerError)
	start := time.Now()
	resp, err := p.Complete(context.Background(), Request{Messages: []Message{{Role: "user", Content: "hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "ok" || len(fake.Requests()) != 4 {
		t.Fatalf("answer %q after %d requests", resp.Text, len(fake.Requests()))
	}
	if time.Since(start) < 20*time.Millisecond {
		t.Fatal("retry-after was not honoured")
	}
}

func TestAnthropicRetryAfterLongerThanTheCallWaits(t *testing.T) {
	fake := &fakeanthropic.Server{RetryAfter: 30 * time.Second}
	p := serveAnthropic(t, fake) // waits at most a second
	fake.Fail(fakeanthropic.RateLimit)
	_, err := p.Complete(context.Background(), Request{Messages: []Message{{Role: "user", Content: "hi"}}})
	var e *Error
	if !errors.As(err, &e) || e.Kind != errkind.RateLimit || e.RetryAfter != 30*time.Second || len(fake.Requests()) != 1 {
		t.Fatalf("err %v (%+v), %d requests", err, e, len(fake.Requests()))
	}
}

func TestAnthropicMissingKey(t *testing.T) {
	t.Setenv(specs.Anthropic.Env.Key, "")
	t.Setenv(specs.Anthropic.Env.BaseURL, "")
	_, err := New(anthropicModel())
	if KindOf(err) != errkind.Auth || !strings.Contains(err.Error(), specs.Anthropic.Env.Key) {
		t.Fatalf("err %v", err)
	}
	t.Setenv(specs.Anthropic.Env.Key, anthropicTestKey)
	m := anthropicModel()
	m.ID = ""
	if _, err := New(m); KindOf(err) != errkind.BadRequest {
		t.Fatalf("a model without an id: %v", err)
	}
}

func TestAnthropicToolUse(t *testing.T) {
	fake := &fakeanthropic.Server{Answer: func(r fakeanthropic.Request) fakeanthropic.Reply {
		return fakeanthropic.Reply{Text: "Let me look.", Tool: "read_file", Input: map[string]any{"path": "b.go"}}
	}}
	p := serveAnthropic(t, fake)
	call := offlinetask.FormatAgentCall(offlinetask.AgentCall{Tool: "read_file", Args: map[string]any{"path": "a.go"}})
	req := Request{Task: "agent", Tools: []Tool{{Name: "read_file", Description: "read a file", Parameters: map[string]any{
		"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}},
		"required": []any{"path"}}}, {Name: "list", Parameters: map[string]any{"type": "object",
		"properties": map[string]any{"path": map[string]any{"type": "string"}}, "required": []string{"path"}}}},
		Messages: []Message{{Role: "system", Content: "you are an agent"}, {Role: "user", Content: "fix it"},
			{Role: "assistant", Content: "First a.go.\n" + call}, {Role: "user", Content: "package a"}}}
	resp, err := p.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	c, ok, err := offlinetask.ParseAgentCall(resp.Text)
	if !ok || err != nil || c.Tool != "read_file" || c.Args["path"] != "b.go" || !strings.HasPrefix(resp.Text, "Let me look.") {
		t.Fatalf("answer %q: not the tool call in the plain-text protocol", resp.Text)
	}
	got := fake.Requests()[0]
	if !strings.Contains(string(got.Tools), `"input_schema"`) || strings.Count(string(got.Tools), `"required":["path"]`) != 2 {
		t.Fatalf("tools sent %s", got.Tools)
	}
	if len(got.Messages) != 3 {
		t.Fatalf("messages sent %+v", got.Messages)
	}
	as, res := got.Messages[1], got.Messages[2]
	if as.Role != "assistant" || len(as.Content) != 2 || as.Content[0].Text != "First a.go." ||
		as.Content[1].Type != "tool_use" || as.Content[1].Name != "read_file" || string(as.Content[1].Input) != `{"path":"a.go"}` {
		t.Fatalf("assistant turn %+v", as)
	}
	if res.Role != "user" || len(res.Content) != 1 || res.Content[0].Type != "tool_result" ||
		res.Content[0].ToolUseID != as.Content[1].ID || !strings.Contains(string(res.Content[0].Content), "package a") {
		t.Fatalf("tool result turn %+v", res)
	}
}

func TestAnthropicUsageRefusesImpossibleCounts(t *testing.T) {
	for _, body := range []string{
		`{"usage":{"input_tokens":-1,"output_tokens":2}}`,
		`{"usage":{"input_tokens":1,"output_tokens":2.5}}`,
		`{"usage":{"input_tokens":1,"output_tokens":2,"cache_read_input_tokens":"x"}}`,
		`{"usage":{"input_tokens":1,"output_tokens":2,"cache_creation_input_tokens":1e12}}`,
	} {
		if _, err := anthropicUsage([]byte(body)); err == nil {
			t.Errorf("%s: no error", body)
		}
	}
	u, err := anthropicUsage([]byte(`{"usage":{"input_tokens":10,"output_tokens":5,"cache_read_input_tokens":100,"cache_creation_input_tokens":20}}`))
	if err != nil || u != (Usage{PromptTokens: 130, CompletionTokens: 5, CachedTokens: 100, CacheWriteTokens: 20}) {
		t.Fatalf("usage %+v, %v", u, err)
	}
}

func TestCheckAnthropicModel(t *testing.T) {
	fake := &fakeanthropic.Server{Models: []string{"claude-fake-1"}}
	serveAnthropic(t, fake)
	m := anthropicModel()
	if c := checkAnthropic(context.Background(), m, time.Second); !c.Served || c.Problem != "" {
		t.Fatalf("a served model: %+v", c)
	}
	m.ID = "claude-nope"
	if c := checkAnthropic(context.Background(), m, time.Second); c.Served ||
		!strings.Contains(c.Problem, `does not serve model id "claude-nope"`) {
		t.Fatalf("an id the endpoint does not serve: %+v", c)
	}
	t.Setenv(specs.Anthropic.Env.Key, "")
	if c := checkAnthropic(context.Background(), anthropicModel(), time.Second); c.Served ||
		!strings.Contains(c.Problem, specs.Anthropic.Env.Key+" is not set") {
		t.Fatalf("no key: %+v", c)
	}
}

// TestAnthropicAnswerEchoingTheKeyIsScrubbed: an answer (or a gateway's model name) holding the key is stored
// without it.
func TestAnthropicAnswerEchoingTheKeyIsScrubbed(t *testing.T) {
	fake := &fakeanthropic.Server{Answer: func(fakeanthropic.Request) fakeanthropic.Reply {
		return fakeanthropic.Reply{Text: "your key is " + anthropicTestKey}
	}}
	p := serveAnthropic(t, fake)
	resp, err := p.Complete(context.Background(), Request{Messages: []Message{{Role: "user", Content: "hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(resp.Text, anthropicTestKey) || !strings.Contains(resp.Text, Redacted) {
		t.Fatalf("answer %q", resp.Text)
	}
}

// TestAnthropicCounter: tokenizer "anthropic:MODEL" counts with count_tokens, the message's framing taken off (the
// fake adds CountFraming), cached by text: a second count of the same text asks nothing.
func TestAnthropicCounter(t *testing.T) {
	fake := &fakeanthropic.Server{}
	serveAnthropic(t, fake)
	text := "func main() { fmt.Println(\"counted by the API\") }"
	n, err := tokens.Count("anthropic:claude-fake-1", text)
	if err != nil {
		t.Fatal(err)
	}
	if n != fakeanthropic.Tokens(text) {
		t.Fatalf("count %d, want the text's own %d (without the framing)", n, fakeanthropic.Tokens(text))
	}
	asked := fake.Counts()
	if asked != 2 { // the framing (a one-character message) and the text
		t.Fatalf("%d count_tokens requests, want 2", asked)
	}
	if m, err := tokens.Count("anthropic:claude-fake-1", text); err != nil || m != n || fake.Counts() != asked {
		t.Fatalf("again: %d, %v, %d requests", m, err, fake.Counts())
	}
	t.Setenv(specs.Anthropic.Env.Key, "")
	if _, err := tokens.Count("anthropic:claude-fake-1", "another text"); err == nil || !strings.Contains(err.Error(), specs.Anthropic.Env.Key) {
		t.Fatalf("no key: %v", err)
	}
}
