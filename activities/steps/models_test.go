package steps

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"ctxlab/activities/api"
	"ctxlab/activities/api/errkind"
	"ctxlab/activities/limiter"
	"ctxlab/activities/llm"
	"ctxlab/activities/tokens"
	"ctxlab/runfolder"
	"ctxlab/specs"
	"ctxlab/store/cas"
	"ctxlab/testkit/fakeanthropic"
	"ctxlab/testkit/fakeopenai"
)

// TestModelFailuresMapToStepErrors checks the mapping of provider failures: retryable kinds are retryable step
// errors with the kind as their type (Temporal retries them, the workflow tells the endpoint's kinds apart),
// context-length and authentication failures are non-retryable with the kind as the error type, which the row's
// error records.
func TestModelFailuresMapToStepErrors(t *testing.T) {
	m := specs.Model{Name: "gpt", Provider: "openai", ID: "gpt"}
	for kind, retryable := range map[errkind.Kind]bool{errkind.RateLimit: true, errkind.Server: true,
		errkind.Timeout: true, errkind.BadResponse: true, errkind.ContextLength: false, errkind.Auth: false,
		errkind.Quota: false, errkind.BadRequest: false} {
		err := modelError("m.patch", m, &llm.Error{Kind: kind, Status: 400, Msg: "nope"})
		var se *Error
		if !errors.As(err, &se) || se.Type != string(kind) || se.Retryable != retryable || se.Wait != nil {
			t.Errorf("%s: want a step error of type %s, retryable %v, got %#v", kind, kind, retryable, err)
		}
		if !strings.Contains(err.Error(), "m.patch") || !strings.Contains(err.Error(), string(kind)) {
			t.Errorf("%s: message %q names neither step nor kind", kind, err)
		}
	}
}

// TestSameRequestAtOnceIsPaidOnce: two nodes asking the same question at the same moment (two methods' steps that
// resolve to the same prompt, resumed together after a restart) pay for one call; the second waits for the answer.
func TestSameRequestAtOnceIsPaidOnce(t *testing.T) {
	const key = "sk-cache-test-0123456789"
	srv := fakeopenai.New(fakeopenai.WithKey(key), fakeopenai.WithDelay(specs.Patch.Task, 300*time.Millisecond))
	hs := httptest.NewServer(srv)
	defer hs.Close()
	t.Setenv("OPENAI_BASE_URL", hs.URL+"/v1")
	t.Setenv("OPENAI_API_KEY", key)
	runDir := t.TempDir()
	store, err := cas.NewDir(runfolder.CAS(runDir))
	if err != nil {
		t.Fatal(err)
	}
	mp := specs.ModelParams{Model: specs.Model{Name: "gpt", Provider: "openai", ID: "gpt-4o-mini"}}
	req := llm.Request{Task: specs.Patch.Task, Messages: []llm.Message{{Role: "user", Content: "fix the bug"}}}
	var wg sync.WaitGroup
	atts := make([]Attempt, 4)
	jobs := make([]*job, len(atts))
	for i := range jobs {
		jobs[i] = &job{env: Env{RunDir: runDir, Log: zerolog.Nop(), Models: Models{Budget: localBudget(limiter.Limits{})}}, store: store, usage: &atts[i].Usage,
			in: api.NodeInput{Run: "t", Node: fmt.Sprintf("patch-%d", i), Step: "m.patch"}}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, _, err := jobs[i].callModel(context.Background(), mp, req); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if got := srv.Calls(); got != 1 {
		t.Errorf("4 simultaneous askers of one request made %d calls", got)
	}
	hits := 0
	for i := range atts {
		hits += atts[i].Usage.CacheHits
	}
	if hits != 3 {
		t.Errorf("%d askers were served from the cache, want 3", hits)
	}
}

// TestAnthropicWorstCaseAsksNoCount: a reservation under tokenizer "anthropic:MODEL" estimates the prompt locally
// (o200k_base and half again) rather than asking count_tokens for every call, and still covers max_tokens.
func TestAnthropicWorstCaseAsksNoCount(t *testing.T) {
	fake := &fakeanthropic.Server{}
	hs := httptest.NewServer(fake)
	t.Cleanup(hs.Close)
	t.Setenv("ANTHROPIC_BASE_URL", hs.URL)
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-worst-case-0123456789")
	m := specs.Model{Provider: "anthropic", ID: "claude-fake-1", MaxTokens: 1000, Price: specs.Price{Input: 3, Output: 15}}
	text := strings.Repeat("word ", 1000)
	req := llm.Request{Messages: []llm.Message{{Role: "user", Content: text}}}
	got := worstCaseUSD(m, req, hs.URL, "anthropic:claude-fake-1")
	n, _ := tokens.Count("o200k_base", text)
	want := float64(n+n/2+16)*3/1e6 + 1000.0*15/1e6
	if math.Abs(got-want) > 1e-12 || fake.Counts() != 0 {
		t.Fatalf("worst case $%v, want $%v; %d count_tokens requests", got, want, fake.Counts())
	}
}
