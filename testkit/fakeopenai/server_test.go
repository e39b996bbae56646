package fakeopenai

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"ctxlab/internal/offlinetask"
)

func chatReq(task string, prompt string) ChatRequest {
	return ChatRequest{Model: "m", Messages: []Message{{Role: "user", Content: prompt}}, TaskName: task}
}

func TestDefaultAnswerLocalize(t *testing.T) {
	prompt := "<issue>The CSV reader drops quoted fields</issue>\nRank the files to edit:\n" +
		"- http/server.go\n- csv/writer.go\n- csv/reader.go\n- docs/quoting.md\n"
	got := DefaultAnswer(chatReq("localize", prompt))
	want := "1. `csv/reader.go`\n2. `csv/writer.go`\n"
	if !strings.Contains(got, want) || strings.Contains(got, "http/server.go") {
		t.Errorf("answer %q, want the list %q and no http/server.go", got, want)
	}
	// The prompt's own limit.
	got = DefaultAnswer(chatReq("localize", strings.Replace(prompt, "Rank the files to edit:", "Rank at most 1 paths:", 1)))
	if !strings.Contains(got, "1. `csv/reader.go`\n") || strings.Contains(got, "csv/writer.go") {
		t.Errorf("limit ignored: %q", got)
	}
	// No path shares a word: the first three in prompt order.
	got = DefaultAnswer(chatReq("localize", "<issue>nothing</issue>\na.go\nb/c.py\nd.rs\ne.md\n"))
	if !strings.Contains(got, "1. `a.go`\n2. `b/c.py`\n3. `d.rs`\n") || strings.Contains(got, "e.md") {
		t.Errorf("fallback answer %q", got)
	}
}

func TestDefaultAnswerEvidence(t *testing.T) {
	prompt := "## Issue\nCalling ParseConfig with an empty path panics in load_file(); see the Config type.\n\n" +
		"## Files\nconfig/parse.go\n\nPlan at most 4 searches as JSON."
	got := DefaultAnswer(chatReq("", prompt))
	start, end := strings.Index(got, "```json\n"), strings.LastIndex(got, "```")
	if start < 0 || end <= start {
		t.Fatalf("no fenced JSON in %q", got)
	}
	var plan struct {
		Searches []struct {
			Kind    string   `json:"kind"`
			Strings []string `json:"strings"`
		} `json:"searches"`
	}
	if err := json.Unmarshal([]byte(got[start+8:end]), &plan); err != nil {
		t.Fatal(err)
	}
	if len(plan.Searches) != 2 || plan.Searches[0].Kind != "definition" || plan.Searches[1].Kind != "callers" {
		t.Fatalf("plan %+v", plan)
	}
	if fmt.Sprint(plan.Searches[0].Strings) != "[ParseConfig load_file]" {
		t.Errorf("identifiers %v, want [ParseConfig load_file] (Config is plain, files are not the issue)", plan.Searches[0].Strings)
	}
}

func TestTaskGuess(t *testing.T) {
	cases := map[string]string{
		"Answer with a unified diff that fixes the issue.":             "patch",
		"Use <<<<<<< SEARCH blocks to edit.":                           "patch",
		"Plan at most 4 searches; answer with JSON.":                   "evidence",
		"Rank the repository files by how likely they need to change.": "localize",
		"Tell me a joke.": "",
		"Rank these, then write a unified diff (patch wins over ranking)": "patch",
	}
	for prompt, want := range cases {
		if got := chatReq("", prompt).Task(); got != want {
			t.Errorf("%q: task %q, want %q", prompt, got, want)
		}
	}
	if got := chatReq("evidence", "write a unified diff").Task(); got != "evidence" {
		t.Errorf("the header should win: %q", got)
	}
	if a := DefaultAnswer(chatReq("patch", "x")); !strings.Contains(a, "```diff\n```") {
		t.Errorf("patch answer %q", a)
	}
}

func post(t *testing.T, url, auth, task, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if task != "" {
		req.Header.Set(offlinetask.TaskHeader, task)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return res
}

const body = `{"model": "m", "messages": [{"role": "user", "content": [{"type": "text", "text": "Rank the files"}]}]}`

func TestFailuresQueueAndCounters(t *testing.T) {
	s := New(WithFailures(1, RateLimit), WithFailures(1, ServerError), WithUsage(11, 3))
	ts := httptest.NewServer(s)
	defer ts.Close()
	url := ts.URL + "/v1/chat/completions"

	r1 := post(t, url, "", "localize", body)
	if r1.StatusCode != 429 || r1.Header.Get("Retry-After") != "1" || r1.Header.Get("Retry-After-Ms") != "10" {
		t.Errorf("first: %d %v", r1.StatusCode, r1.Header)
	}
	if r2 := post(t, url, "", "localize", body); r2.StatusCode != 500 {
		t.Errorf("second: %d", r2.StatusCode)
	}
	r3 := post(t, ts.URL+"/chat/completions", "", "", body) // no /v1, task guessed from the prompt
	var out struct {
		Choices []struct {
			Message Message `json:"message"`
		} `json:"choices"`
		Usage struct {
			Prompt     int `json:"prompt_tokens"`
			Completion int `json:"completion_tokens"`
		} `json:"usage"`
	}
	if err := json.NewDecoder(r3.Body).Decode(&out); err != nil || r3.StatusCode != 200 {
		t.Fatalf("third: %d %v", r3.StatusCode, err)
	}
	if len(out.Choices) != 1 || out.Usage.Prompt != 11 || out.Usage.Completion != 3 {
		t.Errorf("third: %+v", out)
	}
	if s.Calls() != 3 || s.CallsFor("localize") != 3 || s.CallsFor("patch") != 0 {
		t.Errorf("calls %d, localize %d", s.Calls(), s.CallsFor("localize"))
	}
	if s.Requests()[2].Messages[0].Content != "Rank the files" {
		t.Errorf("text parts not joined: %+v", s.Requests()[2])
	}

	s.Fail(1, Malformed)
	r4 := post(t, url, "", "", body)
	var v any
	if r4.StatusCode != 200 || json.NewDecoder(r4.Body).Decode(&v) == nil {
		t.Error("a malformed body decoded as JSON")
	}
	s.Fail(1, ContextLength)
	if r5 := post(t, url, "", "", body); r5.StatusCode != 400 {
		t.Errorf("context length: %d", r5.StatusCode)
	}
}

func TestAuthorizationIsHashedNotStored(t *testing.T) {
	const key = "sk-fake-KEY-42"
	s := New(WithKey(key))
	ts := httptest.NewServer(s)
	defer ts.Close()
	url := ts.URL + "/v1/chat/completions"
	if s.SawAuthorization() {
		t.Fatal("saw a header before any request")
	}
	bad := post(t, url, "Bearer sk-wrong", "", body)
	var e struct {
		Error struct {
			Message string `json:"message"`
			Code    string `json:"code"`
		} `json:"error"`
	}
	_ = json.NewDecoder(bad.Body).Decode(&e)
	if bad.StatusCode != 401 || e.Error.Code != "invalid_api_key" || !strings.Contains(e.Error.Message, "Bearer sk-wrong") {
		t.Errorf("wrong key: %d %+v (the 401 should echo the header)", bad.StatusCode, e)
	}
	if r := post(t, url, "Bearer "+key, "", body); r.StatusCode != 200 {
		t.Errorf("right key: %d", r.StatusCode)
	}
	if !s.SawAuthorization() || !s.LastAuthorizedWith(key) || s.LastAuthorizedWith("sk-wrong") {
		t.Error("authorization not recorded")
	}
	if dump := fmt.Sprintf("%+v", s); strings.Contains(dump, key) || strings.Contains(dump, "sk-wrong") {
		t.Error("the server holds a key in clear")
	}
}

func TestThroughOpenAIClient(t *testing.T) {
	s := New()
	ts := httptest.NewServer(s)
	defer ts.Close()
	client := openai.NewClient(option.WithBaseURL(ts.URL+"/v1"), option.WithAPIKey("k"), option.WithMaxRetries(0))
	ctx := context.Background()

	res, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:    "fake",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Answer with a unified diff.")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Choices[0].Message.Content, "```diff") || res.Usage.PromptTokens == 0 || s.CallsFor("patch") != 1 {
		t.Errorf("chat: %+v", res)
	}

	texts := []string{"parse the config file", "parse the config file", "config file parser", "network socket timeout"}
	emb, err := client.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "fake-embed",
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: texts}})
	if err != nil {
		t.Fatal(err)
	}
	if len(emb.Data) != 4 || len(emb.Data[0].Embedding) != 64 || s.EmbeddingCalls() != 1 {
		t.Fatalf("embeddings: %d vectors", len(emb.Data))
	}
	cos := func(a, b []float64) float64 {
		d := 0.0
		for i := range a {
			d += a[i] * b[i]
		}
		return d
	}
	v := func(i int) []float64 { return emb.Data[i].Embedding }
	if math.Abs(cos(v(0), v(0))-1) > 1e-9 || cos(v(0), v(1)) < 1-1e-9 {
		t.Errorf("not unit or not deterministic: %v %v", cos(v(0), v(0)), cos(v(0), v(1)))
	}
	if !(cos(v(0), v(2)) > cos(v(0), v(3))) {
		t.Errorf("related texts %v not closer than unrelated %v", cos(v(0), v(2)), cos(v(0), v(3)))
	}

	// base64 and a requested dimension.
	emb2, err := client.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "fake-embed", Dimensions: openai.Int(16),
		EncodingFormat: openai.EmbeddingNewParamsEncodingFormatBase64,
		Input:          openai.EmbeddingNewParamsInputUnion{OfString: openai.String(texts[0])}})
	if err != nil {
		t.Fatal(err)
	}
	want := Embed(texts[0], 16)
	got := emb2.Data[0].Embedding
	if len(got) != 16 {
		t.Fatalf("dimensions %d, want 16", len(got))
	}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-6 {
			t.Fatalf("base64 vector differs at %d: %v vs %v", i, got[i], want[i])
		}
	}
}

func TestWords(t *testing.T) {
	got := fmt.Sprint(words("CSVReader parse_file HTTP2Server getURLPath the"))
	if want := "[csv reader parse http server get url path]"; got != want {
		t.Errorf("words %s, want %s", got, want)
	}
}

// TestDelayAndInFlight holds a task's answers while the gauges count them, lets a client that gives up end the wait,
// and lifts the delay on a running server.
func TestDelayAndInFlight(t *testing.T) {
	s := New(WithDelay("patch", time.Minute))
	ts := httptest.NewServer(s)
	defer ts.Close()
	url := ts.URL + "/v1/chat/completions"

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
		req.Header.Set(offlinetask.TaskHeader, "patch")
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			res.Body.Close()
		}
		done <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for s.InFlightFor("patch") != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the delayed call never showed in flight")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// A call of another task is answered at once while the patch waits, and is not in flight afterwards.
	if r := post(t, url, "", "localize", body); r.StatusCode != 200 {
		t.Errorf("localize: %d", r.StatusCode)
	}
	if s.InFlight() != 1 || s.InFlightFor("localize") != 0 || s.Calls() != 2 {
		t.Errorf("in flight %d (localize %d), calls %d; want 1, 0, 2", s.InFlight(), s.InFlightFor("localize"), s.Calls())
	}
	cancel() // the client goes away, as a killed process does
	if err := <-done; err == nil {
		t.Error("the canceled call got an answer")
	}
	for s.InFlight() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the abandoned call stayed in flight")
		}
		time.Sleep(5 * time.Millisecond)
	}

	s.SetDelay("patch", 0)
	start := time.Now()
	if r := post(t, url, "", "patch", body); r.StatusCode != 200 || time.Since(start) > 5*time.Second {
		t.Errorf("patch after the delay was lifted: %d in %s", r.StatusCode, time.Since(start))
	}
	if s.CallsFor("patch") != 2 || s.InFlightFor("patch") != 0 {
		t.Errorf("patch calls %d, in flight %d", s.CallsFor("patch"), s.InFlightFor("patch"))
	}
}

// TestEchoKey: in echo mode a 200 answer carries the bare bearer token in its text and model name, an EchoKey
// failure carries it in the error message, and the server still keeps no key in clear.
func TestEchoKey(t *testing.T) {
	const key = "sk-echo-ME-0042"
	s := New(WithEchoKey(), WithFailures(1, EchoKey))
	ts := httptest.NewServer(s)
	defer ts.Close()
	url := ts.URL + "/v1/chat/completions"
	read := func(r *http.Response) string {
		b, _ := io.ReadAll(r.Body)
		return string(b)
	}
	bad := post(t, url, "Bearer "+key, "", body)
	if text := read(bad); bad.StatusCode != 400 || !strings.Contains(text, key) || strings.Contains(text, "Bearer") {
		t.Errorf("EchoKey failure: %d %s (want 400 holding the bare token)", bad.StatusCode, text)
	}
	ok := post(t, url, "Bearer "+key, "localize", body)
	var res struct {
		Model   string `json:"model"`
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.NewDecoder(ok.Body).Decode(&res); err != nil || ok.StatusCode != 200 || len(res.Choices) != 1 {
		t.Fatalf("echo answer: %d %v %+v", ok.StatusCode, err, res)
	}
	if !strings.Contains(res.Choices[0].Message.Content, key) || !strings.Contains(res.Model, key) {
		t.Errorf("the 200 answer does not echo the token: %+v", res)
	}
	// Without a header there is nothing to echo.
	none := post(t, url, "", "localize", body)
	if text := read(none); strings.Contains(text, "Served for") {
		t.Errorf("echoed a missing header: %s", text)
	}
	if dump := fmt.Sprintf("%+v", s); strings.Contains(dump, key) {
		t.Error("the server holds a key in clear")
	}
}

// A body cut short by a client killed while sending is answered 400 and counted as no call and no request.
func TestTruncatedBodyIsNoCall(t *testing.T) {
	s := New()
	ts := httptest.NewServer(s)
	defer ts.Close()
	res, err := http.Post(ts.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"Loca`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusBadRequest || s.Calls() != 0 || len(s.Requests()) != 0 {
		t.Errorf("status %d, %d calls, %d requests; want 400 and none", res.StatusCode, s.Calls(), len(s.Requests()))
	}
}

// TestFailWhen: the chosen requests fail as the function says, the others are answered, and the function can be
// changed on a running server.
func TestFailWhen(t *testing.T) {
	s := New(WithRetryAfter(time.Hour), WithFailWhen(func(r ChatRequest) Failure {
		if strings.Contains(r.Prompt(), "busy") {
			return RateLimit
		}
		return 0
	}))
	hs := httptest.NewServer(s)
	defer hs.Close()
	post := func(prompt string) *http.Response {
		t.Helper()
		body := `{"model":"m","messages":[{"role":"user","content":"` + prompt + `"}]}`
		res, err := http.Post(hs.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	if res := post("busy now"); res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") != "3600" {
		t.Errorf("chosen request: %d, Retry-After %q; want 429 asking for 3600 s", res.StatusCode,
			res.Header.Get("Retry-After"))
	}
	if res := post("free"); res.StatusCode != http.StatusOK {
		t.Errorf("other request: %d", res.StatusCode)
	}
	s.SetFailWhen(nil)
	if res := post("busy now"); res.StatusCode != http.StatusOK {
		t.Errorf("after SetFailWhen(nil): %d", res.StatusCode)
	}
}

// TestDelayWhen: a request the function picks is held while others are answered at once, a client that goes away
// ends its wait early, and removing the function lifts the hold.
func TestDelayWhen(t *testing.T) {
	s := New()
	s.SetDelayWhen(func(r ChatRequest) time.Duration {
		if strings.Contains(r.Prompt(), "hold") {
			return time.Minute
		}
		return 0
	})
	ts := httptest.NewServer(s)
	defer ts.Close()
	url := ts.URL + "/v1/chat/completions"
	held := `{"model": "m", "messages": [{"role": "user", "content": "hold me"}]}`

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(held))
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			res.Body.Close()
		}
		done <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for s.InFlight() != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("the held call never showed in flight: %d in flight, %d calls", s.InFlight(), s.Calls())
		}
		time.Sleep(5 * time.Millisecond)
	}
	start := time.Now()
	if r := post(t, url, "", "", body); r.StatusCode != 200 || time.Since(start) > 5*time.Second {
		t.Errorf("a request the function leaves alone: %d in %s", r.StatusCode, time.Since(start))
	}
	if s.InFlight() != 1 {
		t.Errorf("%d in flight, want the held call", s.InFlight())
	}
	cancel()
	if err := <-done; err == nil {
		t.Error("the canceled held call got an answer")
	}
	for s.InFlight() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the abandoned held call stayed in flight")
		}
		time.Sleep(5 * time.Millisecond)
	}

	s.SetDelayWhen(nil)
	start = time.Now()
	if r := post(t, url, "", "", held); r.StatusCode != 200 || time.Since(start) > 5*time.Second {
		t.Errorf("after SetDelayWhen(nil): %d in %s", r.StatusCode, time.Since(start))
	}
}
