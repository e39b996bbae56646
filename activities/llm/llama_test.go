package llm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"ctxlab/specs"
	"ctxlab/testkit/e2e"
	"ctxlab/testkit/llamaserver"
)

// TestLlamaSharedContext holds the provider against a real llama-server started as a user would (-c 4096, its
// default 4 slots, which share one cache: each may use 2048 tokens, all of them together 4096). Four calls at once,
// each of whose prompt fits a slot and whose max_tokens ctxlab fits beside it, together need more than the cache
// holds, and the server fails every one of them with HTTP 500 "Context size has been exceeded.". That is the
// server's capacity, not the prompts' size: each call finishes, with the server's usage, and none is a
// context_length error. Before, all four were filed as context_length (the model's failure, final).
func TestLlamaSharedContext(t *testing.T) {
	srv := llamaserver.Start(t, llamaserver.Options{})
	props, err := srv.Props()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(specs.OpenAI.Env.BaseURL, srv.URL+"/v1")
	t.Setenv(specs.OpenAI.Env.Key, "")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	w := DiscoverWindow(ctx, llamaserver.ModelID)
	if w.Tokens != props.Context || w.Tokens != 2048 || props.Slots != 4 {
		t.Fatalf("window %+v, /props %+v: want each of 4 slots' 2048 tokens", w, props)
	}
	m := specs.Model{Name: llamaserver.ModelID, Provider: "openai", ID: llamaserver.ModelID, MaxTokens: 200}
	zero, seed := 0.0, int64(0)
	m.Temperature, m.Seed = &zero, &seed
	p, err := New(m, WithBaseDelay(10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	// Prompts of about 1,800 of the server's tokens, each with a max_tokens of 200: four of them reserve 8,000 tokens
	// of a 4,096-token cache, and fill it while the server reads their prompts.
	const calls = 4
	var wg sync.WaitGroup
	resps := make([]Response, calls)
	errs := make([]error, calls)
	for i := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			text := strings.Repeat(fmt.Sprintf("Lily %d saw a big red ball in the park. ", i), 110)
			resps[i], errs[i] = p.Complete(ctx, Request{Task: specs.Patch.Task, Context: w.Tokens, ContextSource: w.Source,
				Messages: []Message{{Role: "user", Content: text}}})
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatalf("four calls to llama-server did not finish in 3 minutes (the gate on its shared context waited for "+
			"room that never came?); server output's end:\n%s", e2e.Tail(srv.Output(), 2000))
	}
	for i := range calls {
		var e *Error
		switch {
		case errors.As(errs[i], &e):
			t.Errorf("call %d: %v (kind %s), though its prompt fits a slot", i, errs[i], e.Kind)
		case errs[i] != nil:
			t.Errorf("call %d: %v", i, errs[i])
		case resps[i].Usage.PromptTokens < 1500 || resps[i].Usage.CompletionTokens < 1 ||
			resps[i].Usage.PromptTokens+resps[i].Usage.CompletionTokens > w.Tokens:
			t.Errorf("call %d: usage %+v, want a prompt of about 1,800 tokens and an answer within the slot's %d",
				i, resps[i].Usage, w.Tokens)
		}
	}
	t.Logf("shared context limit learned: %d tokens; usage %+v", sharedContextOf(srv.URL+"/v1").learned(),
		[]Usage{resps[0].Usage, resps[1].Usage, resps[2].Usage, resps[3].Usage})
}
