package llm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"ctxlab/activities/api/errkind"
	"ctxlab/specs"
	"ctxlab/testkit/fakeopenai"
)

const testKey = "sk-test-SECRET-0123456789abcdef"

func testModel() specs.Model {
	temp, seed := 0.2, int64(7)
	return specs.Model{Name: "fake", Provider: "openai", ID: "fake-model-1", Temperature: &temp, MaxTokens: 512,
		Seed: &seed, Price: specs.Price{Input: 2.5, Output: 10}}
}

// serve starts fake behind httptest and points the environment at it with the test key.
func serve(t *testing.T, fake *fakeopenai.Server) {
	t.Helper()
	ts := httptest.NewServer(fake)
	t.Cleanup(ts.Close)
	t.Setenv(specs.OpenAI.Env.BaseURL, ts.URL+"/v1")
	t.Setenv(specs.OpenAI.Env.Key, testKey)
}

func newProvider(t *testing.T, opts ...Option) Provider {
	t.Helper()
	p, err := New(testModel(), append([]Option{WithBaseDelay(time.Millisecond), WithMaxDelay(time.Second)}, opts...)...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p
}

func localizeRequest() Request {
	return Request{Task: specs.Localize.Task, Messages: []Message{
		{Role: "system", Content: "You rank files."},
		{Role: "user", Content: "<issue>The parser drops quoted paths</issue>\nRank these files:\nparse/parser.go\nmain.go"},
	}}
}

func wantKind(t *testing.T, err error, kind errkind.Kind, status int) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not *llm.Error", err, err)
	}
	if e.Kind != kind || e.Status != status {
		t.Fatalf("error kind %s status %d, want %s status %d: %v", e.Kind, e.Status, kind, status, err)
	}
	return e
}

func TestOpenAISuccess(t *testing.T) {
	fake := fakeopenai.New(fakeopenai.WithUsage(1000, 200),
		fakeopenai.WithAnswer(func(r fakeopenai.ChatRequest) string { return "1. parse/parser.go" }))
	serve(t, fake)
	resp, err := newProvider(t).Complete(context.Background(), localizeRequest())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "1. parse/parser.go" || resp.Model != "fake-model-1" {
		t.Errorf("response %+v", resp)
	}
	if resp.Usage != (Usage{PromptTokens: 1000, CompletionTokens: 200}) {
		t.Errorf("usage %+v", resp.Usage)
	}
	// 1000 * 2.5/1e6 + 200 * 10/1e6
	if math.Abs(resp.CostUSD-0.0045) > 1e-12 {
		t.Errorf("cost %v, want 0.0045", resp.CostUSD)
	}
	if fake.Calls() != 1 || fake.CallsFor(specs.Localize.Task) != 1 {
		t.Errorf("calls %d, localize calls %d", fake.Calls(), fake.CallsFor(specs.Localize.Task))
	}
	if !fake.LastAuthorizedWith(testKey) {
		t.Error("the server did not see the key from OPENAI_API_KEY")
	}
	req := fake.Requests()[0]
	if req.Model != "fake-model-1" || len(req.Messages) != 2 || req.Messages[0].Role != "system" ||
		!strings.Contains(req.Messages[1].Content, "parse/parser.go") {
		t.Errorf("request %+v", req)
	}
	if req.Temperature == nil || *req.Temperature != 0.2 || req.Seed == nil || *req.Seed != 7 {
		t.Errorf("temperature/seed not sent: %+v", req)
	}
	// A local server gets max_tokens, the field every OpenAI-compatible server knows.
	if req.MaxTokens == nil || *req.MaxTokens != 512 || req.MaxCompletionTokens != nil {
		t.Errorf("max tokens: %v / %v", req.MaxTokens, req.MaxCompletionTokens)
	}
}

func TestOpenAIUsesMaxCompletionTokensForOpenAI(t *testing.T) {
	t.Setenv(specs.OpenAI.Env.BaseURL, "https://api.openai.com/v1")
	t.Setenv(specs.OpenAI.Env.Key, testKey)
	p, err := New(testModel())
	if err != nil {
		t.Fatal(err)
	}
	params, _, perr := p.(retrying).client.(*openAIClient).params(context.Background(), localizeRequest())
	if perr != nil {
		t.Fatal(perr)
	}
	if !params.MaxCompletionTokens.Valid() || params.MaxCompletionTokens.Value != 512 || params.MaxTokens.Valid() {
		t.Errorf("OpenAI's API should get max_completion_tokens: %+v %+v", params.MaxCompletionTokens, params.MaxTokens)
	}
}

func TestOpenAIRateLimitThenSuccess(t *testing.T) {
	fake := fakeopenai.New(fakeopenai.WithFailures(1, fakeopenai.RateLimit), fakeopenai.WithRetryAfter(40*time.Millisecond))
	serve(t, fake)
	start := time.Now()
	resp, err := newProvider(t).Complete(context.Background(), localizeRequest())
	if err != nil {
		t.Fatal(err)
	}
	if fake.Calls() != 2 {
		t.Errorf("%d requests, want 2", fake.Calls())
	}
	if resp.Text == "" {
		t.Error("empty answer after the retry")
	}
	// The base delay is 1ms; only honouring Retry-After makes the call take 40ms.
	if el := time.Since(start); el < 40*time.Millisecond {
		t.Errorf("retried after %s, before the 40ms Retry-After", el)
	}
}

func TestOpenAIRetryAfterLongerThanMaxDelayStops(t *testing.T) {
	fake := fakeopenai.New(fakeopenai.WithFailures(5, fakeopenai.RateLimit), fakeopenai.WithRetryAfter(30*time.Second))
	serve(t, fake)
	_, err := newProvider(t, WithMaxDelay(100*time.Millisecond)).Complete(context.Background(), localizeRequest())
	e := wantKind(t, err, errkind.RateLimit, 429)
	if fake.Calls() != 1 || !strings.Contains(e.Msg, "asked to wait") {
		t.Errorf("calls %d, msg %q", fake.Calls(), e.Msg)
	}
	// The caller waits the rest durably (the Issue workflow's timer): it must know how long.
	if e.RetryAfter != 30*time.Second {
		t.Errorf("RetryAfter %v, want the 30s the endpoint asked for", e.RetryAfter)
	}
}

func TestOpenAIRepeatedServerErrors(t *testing.T) {
	fake := fakeopenai.New(fakeopenai.WithFailures(10, fakeopenai.ServerError))
	serve(t, fake)
	_, err := newProvider(t, WithAttempts(3)).Complete(context.Background(), localizeRequest())
	e := wantKind(t, err, errkind.Server, 500)
	if !e.Kind.Retryable() {
		t.Error("a server error should stay retryable for the activity's own retry policy")
	}
	if fake.Calls() != 3 {
		t.Errorf("%d requests, want 3 (the configured attempts)", fake.Calls())
	}
	if !strings.Contains(e.Msg, "3 attempts") {
		t.Errorf("message does not say how many attempts: %q", e.Msg)
	}
}

func TestOpenAIBadGatewayHTML(t *testing.T) {
	fake := fakeopenai.New(fakeopenai.WithFailures(10, fakeopenai.BadGateway))
	serve(t, fake)
	_, err := newProvider(t, WithAttempts(2)).Complete(context.Background(), localizeRequest())
	e := wantKind(t, err, errkind.Server, 502)
	if fake.Calls() != 2 || !strings.Contains(e.Msg, "Bad Gateway") {
		t.Errorf("calls %d, msg %q", fake.Calls(), e.Msg)
	}
}

func TestOpenAIMalformedBody(t *testing.T) {
	fake := fakeopenai.New(fakeopenai.WithFailures(10, fakeopenai.Malformed))
	serve(t, fake)
	_, err := newProvider(t, WithAttempts(2)).Complete(context.Background(), localizeRequest())
	wantKind(t, err, errkind.BadResponse, 200)
	if fake.Calls() != 2 {
		t.Errorf("%d requests, want 2", fake.Calls())
	}

	// One malformed body, then a good one: the retry recovers.
	fake2 := fakeopenai.New(fakeopenai.WithFailures(1, fakeopenai.Malformed))
	serve(t, fake2)
	if _, err := newProvider(t).Complete(context.Background(), localizeRequest()); err != nil || fake2.Calls() != 2 {
		t.Errorf("after one malformed body: err %v, calls %d", err, fake2.Calls())
	}
}

func TestOpenAIContextLength(t *testing.T) {
	fake := fakeopenai.New(fakeopenai.WithFailures(10, fakeopenai.ContextLength))
	serve(t, fake)
	_, err := newProvider(t).Complete(context.Background(), localizeRequest())
	e := wantKind(t, err, errkind.ContextLength, 400)
	if e.Kind.Retryable() || fake.Calls() != 1 {
		t.Errorf("context length: retryable %v, %d requests (want 1)", e.Kind.Retryable(), fake.Calls())
	}
	if !strings.Contains(e.Msg, "maximum context length") {
		t.Errorf("message %q lost the server's explanation", e.Msg)
	}
}

func TestOpenAIAuthErrors(t *testing.T) {
	// A wrong key: the server answers 401 and echoes the Authorization header in its message.
	fake := fakeopenai.New(fakeopenai.WithKey("sk-the-right-one"))
	serve(t, fake)
	_, err := newProvider(t).Complete(context.Background(), localizeRequest())
	e := wantKind(t, err, errkind.Auth, 401)
	if fake.Calls() != 1 || e.Kind.Retryable() {
		t.Errorf("auth: %d requests, retryable %v", fake.Calls(), e.Kind.Retryable())
	}
	if !strings.Contains(e.Msg, specs.OpenAI.Env.Key) || !strings.Contains(e.Msg, "Incorrect API key") {
		t.Errorf("message %q should keep the server's reason and name %s", e.Msg, specs.OpenAI.Env.Key)
	}

	fake2 := fakeopenai.New(fakeopenai.WithFailures(1, fakeopenai.Quota))
	serve(t, fake2)
	_, err = newProvider(t).Complete(context.Background(), localizeRequest())
	wantKind(t, err, errkind.Quota, 429)
	if fake2.Calls() != 1 {
		t.Errorf("quota: %d requests, want 1", fake2.Calls())
	}
}

// TestOpenAIKeyNeverLeaks drives every failure through a provider logging at debug level, with a server that echoes
// the Authorization header, and checks the key appears in no error text and no log line.
func TestOpenAIKeyNeverLeaks(t *testing.T) {
	var logs bytes.Buffer
	log := zerolog.New(&logs).Level(zerolog.DebugLevel)
	failures := []fakeopenai.Failure{fakeopenai.Unauthorized, fakeopenai.RateLimit, fakeopenai.ServerError,
		fakeopenai.Malformed, fakeopenai.ContextLength, fakeopenai.Quota, fakeopenai.BadGateway}
	var texts []string
	for _, f := range failures {
		fake := fakeopenai.New(fakeopenai.WithFailures(2, f))
		serve(t, fake)
		_, err := newProvider(t, WithAttempts(2), WithLogger(log)).Complete(context.Background(), localizeRequest())
		if err == nil {
			t.Fatalf("failure %d: no error", f)
		}
		texts = append(texts, err.Error(), fmt.Sprintf("%v|%+v|%#v", err, err, err))
		for u := errors.Unwrap(err); u != nil; u = errors.Unwrap(u) {
			texts = append(texts, u.Error())
		}
	}
	// The key in the Authorization header is echoed back by a 401 whose key does not match.
	fake := fakeopenai.New(fakeopenai.WithKey("sk-another"))
	serve(t, fake)
	_, err := newProvider(t, WithLogger(log)).Complete(context.Background(), localizeRequest())
	texts = append(texts, err.Error(), fmt.Sprintf("%#v", err))
	// And a connection that fails.
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	t.Setenv(specs.OpenAI.Env.BaseURL, closed.URL+"/v1")
	_, err = newProvider(t, WithAttempts(2), WithLogger(log)).Complete(context.Background(), localizeRequest())
	wantKind(t, err, errkind.Timeout, 0)
	texts = append(texts, err.Error())

	if !strings.Contains(logs.String(), "retrying") {
		t.Fatalf("no retry was logged; the log check would prove nothing:\n%s", logs.String())
	}
	texts = append(texts, logs.String())
	for _, s := range texts {
		if strings.Contains(s, testKey) || strings.Contains(s, "SECRET") {
			t.Errorf("the key leaked: %s", s)
		}
	}
	if !strings.Contains(strings.Join(texts, "\n"), "[redacted]") {
		t.Error("the echoed Authorization header was not seen redacted; the check may be vacuous")
	}
}

func TestOpenAIMissingKey(t *testing.T) {
	t.Setenv(specs.OpenAI.Env.Key, "")
	t.Setenv(specs.OpenAI.Env.BaseURL, "")
	_, err := New(testModel())
	e := wantKind(t, err, errkind.Auth, 0)
	if !strings.Contains(e.Msg, specs.OpenAI.Env.Key) {
		t.Errorf("message %q does not name %s", e.Msg, specs.OpenAI.Env.Key)
	}

	t.Setenv(specs.OpenAI.Env.BaseURL, "https://llm.example.com/v1")
	_, err = New(testModel())
	wantKind(t, err, errkind.Auth, 0)

	// A server on localhost runs without a key, and gets no Authorization header.
	fake := fakeopenai.New()
	ts := httptest.NewServer(fake)
	defer ts.Close()
	t.Setenv(specs.OpenAI.Env.BaseURL, ts.URL+"/v1")
	p, err := New(testModel())
	if err != nil {
		t.Fatalf("keyless localhost: %v", err)
	}
	if _, err := p.Complete(context.Background(), localizeRequest()); err != nil {
		t.Fatal(err)
	}
	if fake.SawAuthorization() {
		t.Error("an Authorization header was sent without a key")
	}
}

func TestOpenAIBadConfig(t *testing.T) {
	t.Setenv(specs.OpenAI.Env.Key, testKey)
	t.Setenv(specs.OpenAI.Env.BaseURL, "ftp://user:pw-secret@host/v1")
	_, err := New(testModel())
	e := wantKind(t, err, errkind.BadRequest, 0)
	if strings.Contains(e.Msg, "pw-secret") || !strings.Contains(e.Msg, specs.OpenAI.Env.BaseURL) {
		t.Errorf("message %q", e.Msg)
	}
	t.Setenv(specs.OpenAI.Env.BaseURL, "")
	m := testModel()
	m.ID = ""
	_, err = New(m)
	wantKind(t, err, errkind.BadRequest, 0)

	fake := fakeopenai.New()
	serve(t, fake)
	_, err = newProvider(t).Complete(context.Background(), Request{Messages: []Message{{Role: "robot", Content: "x"}}})
	wantKind(t, err, errkind.BadRequest, 0)
	if fake.Calls() != 0 {
		t.Error("a request with a bad role was sent")
	}
}

func TestOpenAICallTimeout(t *testing.T) {
	fake := fakeopenai.New(fakeopenai.WithFailures(1, fakeopenai.Hang))
	serve(t, fake)
	start := time.Now()
	resp, err := newProvider(t, WithCallTimeout(100*time.Millisecond)).Complete(context.Background(), localizeRequest())
	if err != nil {
		t.Fatal(err)
	}
	if fake.Calls() != 2 || resp.Text == "" {
		t.Errorf("calls %d, text %q", fake.Calls(), resp.Text)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("the hung attempt was not cut at the call timeout: %s", el)
	}

	fake2 := fakeopenai.New(fakeopenai.WithFailures(10, fakeopenai.Hang))
	serve(t, fake2)
	_, err = newProvider(t, WithCallTimeout(50*time.Millisecond), WithAttempts(2)).Complete(context.Background(), localizeRequest())
	e := wantKind(t, err, errkind.Timeout, 0)
	if !errors.Is(e, context.DeadlineExceeded) || fake2.Calls() != 2 {
		t.Errorf("timeout error %v, calls %d", e, fake2.Calls())
	}
}

func TestOpenAICancelledWhileWaiting(t *testing.T) {
	fake := fakeopenai.New(fakeopenai.WithFailures(10, fakeopenai.ServerError))
	serve(t, fake)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := newProvider(t, WithBaseDelay(10*time.Second), WithMaxDelay(time.Minute)).Complete(ctx, localizeRequest())
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v, want the context's deadline", err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("the backoff ignored the context: %s", el)
	}
}

func TestRetryAfterHeader(t *testing.T) {
	h := func(kv ...string) *http.Response {
		r := &http.Response{Header: http.Header{}}
		for i := 0; i < len(kv); i += 2 {
			r.Header.Set(kv[i], kv[i+1])
		}
		return r
	}
	if d := retryAfter(h("Retry-After", "2")); d != 2*time.Second {
		t.Errorf("seconds: %s", d)
	}
	if d := retryAfter(h("Retry-After", "2", "Retry-After-Ms", "150")); d != 150*time.Millisecond {
		t.Errorf("ms first: %s", d)
	}
	date := time.Now().Add(30 * time.Second).UTC().Format(http.TimeFormat)
	if d := retryAfter(h("Retry-After", date)); d < 25*time.Second || d > 31*time.Second {
		t.Errorf("date: %s", d)
	}
	if d := retryAfter(h("Retry-After", "soon")); d != 0 {
		t.Errorf("garbage: %s", d)
	}
	if d := retryAfter(nil); d != 0 {
		t.Errorf("nil: %s", d)
	}
}

func TestBackoffGrowsWithJitter(t *testing.T) {
	cfg := Config{BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second}
	for attempt, want := range map[int]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond,
		3: 400 * time.Millisecond, 4: 800 * time.Millisecond, 5: time.Second, 9: time.Second} {
		seen := map[time.Duration]bool{}
		for range 50 {
			d, ok := cfg.delay(attempt, 0)
			if !ok || d < want/2 || d > want {
				t.Fatalf("attempt %d: delay %s outside [%s, %s]", attempt, d, want/2, want)
			}
			seen[d] = true
		}
		if len(seen) < 2 {
			t.Errorf("attempt %d: no jitter", attempt)
		}
	}
}

func TestErrorFields(t *testing.T) {
	cases := []struct {
		body, code, typ, msg string
	}{
		{`{"error": {"message": "m1", "type": "t1", "code": "c1"}}`, "c1", "t1", "m1"},
		{`{"error": {"message": "m2", "code": 400}}`, "400", "", "m2"},
		{`{"error": "plain"}`, "", "", "plain"},
		{`{"detail": "fastapi says no"}`, "", "", "fastapi says no"},
		{`{"message": "top", "code": "x"}`, "x", "", "top"},
		{"<html>\n  oops  </html>", "", "", "<html> oops </html>"},
	}
	for _, c := range cases {
		code, typ, msg := errorFields([]byte(c.body))
		if code != c.code || typ != c.typ || msg != c.msg {
			t.Errorf("%s: got %q %q %q", c.body, code, typ, msg)
		}
	}
	for _, m := range []string{"This model's maximum context length is 4096 tokens", "prompt is too long: 300000 tokens > 200000 maximum",
		"the request exceeds the available context size (exceed_context_size_error)", "Input is too long for requested model."} {
		if !isContextLength("", m) {
			t.Errorf("not seen as context length: %q", m)
		}
	}
	if isContextLength("invalid_value", "temperature must be at most 2") {
		t.Error("an unrelated 400 seen as context length")
	}
}

func TestCost(t *testing.T) {
	if c := Cost(Usage{PromptTokens: 2_000_000, CompletionTokens: 500_000}, specs.Price{Input: 1.25, Output: 10}); math.Abs(c-7.5) > 1e-9 {
		t.Errorf("cost %v, want 7.5", c)
	}
}

// TestOpenAIEchoedKeyScrubbed: an endpoint that echoes the bare key inside a 200 answer (text and model name) and
// inside an error leaves it in no text the provider returns; another secret the process holds in its environment
// is scrubbed too, and the rest of the answer survives.
func TestOpenAIEchoedKeyScrubbed(t *testing.T) {
	const other = "ghp_otherSecretValue123456"
	t.Setenv("CTXLAB_TEST_GITHUB_TOKEN", other)
	fake := fakeopenai.New(fakeopenai.WithEchoKey(), fakeopenai.WithFailures(1, fakeopenai.EchoKey),
		fakeopenai.WithAnswer(func(fakeopenai.ChatRequest) string { return "1. parse/parser.go\nalso " + other }))
	serve(t, fake)
	p := newProvider(t)
	_, err := p.Complete(context.Background(), localizeRequest())
	wantKind(t, err, errkind.BadRequest, 400)
	resp, err2 := p.Complete(context.Background(), localizeRequest())
	if err2 != nil {
		t.Fatal(err2)
	}
	if fake.Calls() != 2 {
		t.Fatalf("%d calls, want 2", fake.Calls())
	}
	texts := []string{err.Error(), fmt.Sprintf("%#v", err), resp.Text, resp.Model, fmt.Sprintf("%+v", resp)}
	for _, s := range texts {
		if strings.Contains(s, testKey) || strings.Contains(s, other) {
			t.Errorf("a secret survived: %q", s)
		}
	}
	if !strings.Contains(resp.Text, "1. parse/parser.go") || !strings.Contains(resp.Text, "Served for [redacted]") ||
		!strings.Contains(err.Error(), "[redacted]") {
		t.Errorf("the answer should keep its text with the key redacted: %q / %v", resp.Text, err)
	}
}

// TestScrubSecrets: values of secret-named variables are replaced wherever they occur; short values and variables
// whose names do not say secret are left alone, so ordinary answer text is not mangled.
func TestScrubSecrets(t *testing.T) {
	t.Setenv("CTXLAB_TEST_API_KEY", "abcd1234efgh")
	t.Setenv("CTXLAB_TEST_PASSWORD", "hunter2-but-longer")
	t.Setenv("CTXLAB_TEST_SHORT_TOKEN", "abc")
	t.Setenv("CTXLAB_TEST_EDITOR", "vim-editor-name")
	in := "x abcd1234efgh y hunter2-but-longer z abc vim-editor-name"
	got := ScrubSecrets(in)
	if want := "x [redacted] y [redacted] z abc vim-editor-name"; got != want {
		t.Errorf("ScrubSecrets(%q) = %q, want %q", in, got, want)
	}
	r := Response{Text: "abcd1234efgh", Model: "m-abcd1234efgh"}.Scrubbed()
	if r.Text != "[redacted]" || r.Model != "m-[redacted]" {
		t.Errorf("Scrubbed: %+v", r)
	}
}
