package e2e

import (
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"ctxlab/results"
	"ctxlab/specs"
	"ctxlab/testkit/fakeopenai"
)

// TestRaisedCapContinuesOnFirstRerun: a sweep of cq2care stops at a tiny spend cap during localization, with
// several localization samples of each issue waiting. The cap is raised and the sweep run again once: it must
// finish. On the re-run one sample of each issue is answered first; before the fix that node then reported the
// others, already woken and on their way, as paused, every running issue looked paused for two samples, and the
// re-run stopped at once with "spend cap reached" (a third run went on).
//
// Every answer is 4,000 tokens ($0.04) and the cap $0.06: a call reserves its worst case (4,096 tokens and its
// prompt) before it is sent, so the first sample is paid and the five others, which no longer fit, wait at the cap,
// whatever the timing. The capped run also runs one model call at a time (limits.queues.llm.concurrency 1).
func TestRaisedCapContinuesOnFirstRerun(t *testing.T) {
	t.Parallel()
	srv := fakeopenai.New(fakeopenai.WithUsage(100, 4000))
	hs := httptest.NewServer(srv)
	defer hs.Close()
	setStarterEnv(t, "OPENAI_BASE_URL="+hs.URL+"/v1", "OPENAI_API_KEY=")
	runs := t.TempDir()
	spec := func(limits string) string {
		return demoVariant(t, "{ name: 'raise', dataset+: { limit: 2 }, methods: super.methods[2:4], "+
			"models: [super.models[0] + { price: { input: 2.5, output: 10 } }], limits+: "+limits+" }")
	}
	capped := spec("{ spend_usd: 0.06, queues+: { llm: { concurrency: 1 } } }")
	_, stderr, code := runStarter(t, 10*time.Minute, "run", capped, "--runs", runs, "--ext-str", "model=openai")
	if code != exitPaused {
		t.Fatalf("capped run: exit %d, want %d\n%s", code, exitPaused, stderr)
	}
	// Exactly one call paid: the other five localization samples (two of one issue, three of the other) wait.
	if n, all := srv.CallsFor(specs.Localize.Task), srv.Calls(); n != 1 || all != 1 {
		t.Fatalf("%d localization calls (%d in all) before the cap stopped the sweep, want the first sample's alone",
			n, all)
	}
	// On the re-run, the first request of each prompt is answered at once, the other samples of it after 4 s: each
	// issue has a woken node that passes while others are still on their way.
	var mu sync.Mutex
	seen := map[string]bool{}
	srv.SetDelayWhen(func(r fakeopenai.ChatRequest) time.Duration {
		mu.Lock()
		defer mu.Unlock()
		if seen[r.Prompt()] {
			return 4 * time.Second
		}
		seen[r.Prompt()] = true
		return 0
	})
	raised := spec("{ spend_usd: 100 }")
	stdout, stderr, code := runStarter(t, 10*time.Minute, "run", raised, "--runs", runs, "--ext-str", "model=openai")
	if code != exitOK {
		t.Fatalf("first run after raising the cap: exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	rows := readRows(t, filepath.Join(runs, "raise", "results.jsonl"))
	if len(rows) != 4 {
		t.Errorf("%d rows, want 2 methods x 2 issues", len(rows))
	}
	for k, r := range rows {
		if r[results.FieldError] != nil {
			t.Errorf("%v: %v", k, r[results.FieldError])
		}
	}
	if strings.Contains(stderr, "spend cap reached") {
		t.Errorf("the re-run mentions the cap:\n%s", stderr)
	}
}
