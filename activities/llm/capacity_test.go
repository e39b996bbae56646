package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"ctxlab/activities/api/errkind"
	"ctxlab/specs"
)

// sharedLlama answers as llama-server with slots that share one cache (llamaLike's shapes): each request may use a
// slot's nCtx tokens, all in flight together only cache tokens; when they need more, every request in flight fails
// with the real 500, as llama-server fails every slot that is processing.
type sharedLlama struct {
	llamaLike
	cache int

	mu       sync.Mutex
	inFlight map[*bool]int // doomed flag -> tokens (prompt + max_tokens)
	peak     int           // most requests in flight at once
	failed   int
}

func (s *sharedLlama) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/chat/completions" {
		s.llamaLike.ServeHTTP(w, r)
		return
	}
	var body struct {
		Messages []struct {
			Content string `json:"content"`
		} `json:"messages"`
		MaxTokens int `json:"max_tokens"`
	}
	_ = json.NewDecoder(r.Body).Decode(&body)
	need := body.MaxTokens + 3
	for _, m := range body.Messages {
		need += len(strings.Fields(m.Content))
	}
	doomed := new(bool)
	s.mu.Lock()
	s.inFlight[doomed] = need
	s.peak = max(s.peak, len(s.inFlight))
	total := 0
	for _, n := range s.inFlight {
		total += n
	}
	if total > s.cache {
		for d := range s.inFlight {
			*d = true
		}
	}
	s.mu.Unlock()
	time.Sleep(30 * time.Millisecond) // decoding
	s.mu.Lock()
	delete(s.inFlight, doomed)
	failed := *doomed
	if failed {
		s.failed++
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if failed {
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, `{"error":{"code":500,"message":"Context size has been exceeded.","type":"server_error"}}`)
		return
	}
	fmt.Fprint(w, `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Once upon a time"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":4}}`)
}

// TestSharedContextFullIsAskedAgain: eight calls at once to a server of 1,000-token slots sharing a 2,000-token cache,
// each reserving 800 tokens (a prompt that fits its slot, and the max_tokens fitted beside it): the server fails
// those in flight whenever more than two are, and every call still finishes, without waiting on an outage, once
// the provider has learned how many fit together. Before, each such 500 was a context_length error (final).
func TestSharedContextFullIsAskedAgain(t *testing.T) {
	srv := &sharedLlama{llamaLike: llamaLike{nCtx: 1000}, cache: 2000, inFlight: map[*bool]int{}}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	t.Setenv(specs.OpenAI.Env.BaseURL, ts.URL+"/v1")
	t.Setenv(specs.OpenAI.Env.Key, "")
	w := DiscoverWindow(context.Background(), "stories260K")
	m := testModel()
	m.MaxTokens = 300
	// A backoff of an hour: a call retried as an outage would wait it, and the test's deadline would end it.
	p, err := New(m, WithBaseDelay(time.Hour), WithMaxDelay(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = p.Complete(ctx, Request{Task: specs.Patch.Task, Context: w.Tokens, ContextSource: w.Source,
				Messages: []Message{{Role: "user", Content: words(497)}}})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("call %d: %v", i, err)
		}
	}
	if srv.failed == 0 {
		t.Error("the server never ran out of its shared context: nothing was tested")
	}
	if got := sharedContextOf(ts.URL + "/v1").learned(); got < 1000 || got >= 2400 {
		t.Errorf("learned a shared context of %d tokens; the server's holds 2,000, three calls 2,400", got)
	}
	t.Logf("%d calls failed by the server, at most %d in flight", srv.failed, srv.peak)
}

// TestSharedContextAloneIsTheServers: a call the server fails so while it is alone in flight cannot be the calls'
// doing (another client fills the server): it is retried as an outage is, and after its attempts its error is
// context_capacity, the endpoint's, never context_length.
func TestSharedContextAloneIsTheServers(t *testing.T) {
	srv := &sharedLlama{llamaLike: llamaLike{nCtx: 1000}, cache: 500, inFlight: map[*bool]int{}}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	t.Setenv(specs.OpenAI.Env.BaseURL, ts.URL+"/v1")
	t.Setenv(specs.OpenAI.Env.Key, "")
	w := DiscoverWindow(context.Background(), "stories260K")
	p, err := New(testModel(), WithBaseDelay(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Complete(context.Background(), Request{Task: specs.Patch.Task, Context: w.Tokens, ContextSource: w.Source,
		Messages: []Message{{Role: "user", Content: words(497)}}})
	e := wantKind(t, err, errkind.ContextCapacity, http.StatusInternalServerError)
	if srv.failed != 4 || !strings.Contains(e.Msg, "gave up after 4 attempts") || !strings.Contains(e.Msg, "-c") {
		t.Errorf("%d calls failed; message %q", srv.failed, e.Msg)
	}
	if errkind.ContextCapacity.Waited() || errkind.ClassOf(string(errkind.ContextCapacity)) != errkind.Endpoint {
		t.Error("context_capacity is waited on, or not the endpoint's")
	}
}
