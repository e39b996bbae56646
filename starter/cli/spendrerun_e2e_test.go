package cli

import (
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"ctxlab/activities/llm"
	"ctxlab/internal/fakeopenai"
	"ctxlab/results"
)

// TestRaisedCapContinuesOnFirstRerun: a sweep of cq2care stops at a tiny spend cap during localization, with
// several localization samples of each issue waiting. The cap is raised and the sweep run again once: it must
// finish. On the re-run one sample of each issue is answered first; before the fix that node then reported the
// others, already woken and on their way, as paused, every running issue looked paused for two samples, and the
// re-run stopped at once with "spend cap reached" (a third run went on).
//
// Not parallel: the cap must stop the sweep while samples still wait, which a machine loaded by the other
// end-to-end tests can miss (all six calls sent before the first is paid).
func TestRaisedCapContinuesOnFirstRerun(t *testing.T) {
	srv := fakeopenai.New()
	hs := httptest.NewServer(srv)
	defer hs.Close()
	setStarterEnv(t, "OPENAI_BASE_URL="+hs.URL+"/v1", "OPENAI_API_KEY=")
	runs := t.TempDir()
	spec := func(spend string) string {
		return demoVariant(t, "{ name: 'raise', dataset+: { limit: 2 }, methods: super.methods[2:4], "+
			"models: [super.models[0] + { price: { input: 2.5, output: 10 } }], limits+: { spend_usd: "+spend+" } }")
	}
	_, stderr, code := runStarter(t, 10*time.Minute, "run", spec("0.000001"), "--runs", runs, "--ext-str", "model=openai")
	if code != exitPaused {
		t.Fatalf("capped run: exit %d, want %d\n%s", code, exitPaused, stderr)
	}
	if n := srv.CallsFor(llm.TaskLocalize); n >= 2*3 {
		t.Fatalf("%d localization calls before the cap stopped the sweep; the test needs some to wait", n)
	}
	// On the re-run, the first request of each prompt is answered at once, the other samples of it after 4 s: each
	// issue has a woken node that passes while others are still on their way.
	var mu sync.Mutex
	seen := map[string]bool{}
	srv.SetFailWhen(func(r fakeopenai.ChatRequest) fakeopenai.Failure {
		mu.Lock()
		first := !seen[r.Prompt()]
		seen[r.Prompt()] = true
		mu.Unlock()
		if !first {
			time.Sleep(4 * time.Second)
		}
		return 0
	})
	stdout, stderr, code := runStarter(t, 10*time.Minute, "run", spec("100"), "--runs", runs, "--ext-str", "model=openai")
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
