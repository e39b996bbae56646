package e2e

import (
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"ctxlab/results"
	"ctxlab/runfolder"
	"ctxlab/testkit/fakeopenai"
)

// TestRerunRetriesInfrastructureFailures: a finished sweep whose row failed because the endpoint was rate limited
// (a 429 asking to wait an hour, with the sweep's waits turned off as older versions had none) is not a final
// result. Its re-run against the now healthy endpoint sends that request again and completes the row, while the row
// that failed by the model's own fault (context_length) is final: its request is not sent again. Before, the re-run
// said "already finished" and sent nothing. starter status tells the two kinds apart; --retry model asks the model's
// failure again.
func TestRerunRetriesInfrastructureFailures(t *testing.T) {
	t.Parallel()
	// The first distinct prompt is too long for the model, the second is rate limited until the endpoint heals.
	var mu sync.Mutex
	fate := map[string]fakeopenai.Failure{}
	sent := map[fakeopenai.Failure]int{}
	healed := false
	srv := fakeopenai.New(fakeopenai.WithRetryAfter(time.Hour), fakeopenai.WithFailWhen(func(r fakeopenai.ChatRequest) fakeopenai.Failure {
		mu.Lock()
		defer mu.Unlock()
		f, seen := fate[r.Prompt()]
		if !seen {
			f = fakeopenai.ContextLength
			if len(fate) == 1 {
				f = fakeopenai.RateLimit
			}
			fate[r.Prompt()] = f
		}
		sent[f]++
		if f == fakeopenai.RateLimit && healed {
			return 0
		}
		return f
	}))
	hs := httptest.NewServer(srv)
	defer hs.Close()
	setStarterEnv(t, "OPENAI_BASE_URL="+hs.URL+"/v1", "OPENAI_API_KEY=")
	spec := demoVariant(t, "{ name: 'infra', dataset+: { limit: 2 }, anchor:: null, methods: super.methods[0:1] }")
	runs := t.TempDir()
	dir := filepath.Join(runs, "infra")

	_, stderr, code := runStarter(t, 10*time.Minute, "run", spec, "--runs", runs, "--ext-str", "model=openai",
		"--infra-waits", "-1")
	if code != exitRowErrors {
		t.Fatalf("first run: exit %d, want %d\n%s", code, exitRowErrors, stderr)
	}
	mu.Lock()
	if len(fate) != 2 || sent[fakeopenai.RateLimit] != 1 || sent[fakeopenai.ContextLength] != 1 {
		t.Fatalf("first run sent %v for %d prompts; want one rate-limited and one too-long request", sent, len(fate))
	}
	mu.Unlock()
	rows := readRows(t, filepath.Join(dir, "results.jsonl"))
	kinds := map[string]int{}
	for _, r := range rows {
		kinds[r.String(results.FieldErrorKind)]++
	}
	if len(rows) != 2 || kinds["rate_limit"] != 1 || kinds["context_length"] != 1 {
		t.Fatalf("first run's rows by error kind: %v", kinds)
	}
	out, _ := mainOut(t, "status", "infra", "--runs", runs)
	for _, want := range []string{"endpoint 1 (rate_limit 1; a re-run retries them)",
		"model 1 (context_length 1; final)"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}

	mu.Lock()
	healed = true
	mu.Unlock()
	_, stderr, code = runStarter(t, 10*time.Minute, "run", spec, "--runs", runs, "--ext-str", "model=openai")
	if code != exitRowErrors || !strings.Contains(stderr, "running them again") {
		t.Fatalf("re-run: exit %d, want %d (the model's failure stays) after retrying\n%s", code, exitRowErrors, stderr)
	}
	mu.Lock()
	if sent[fakeopenai.RateLimit] != 2 || sent[fakeopenai.ContextLength] != 1 {
		t.Errorf("the re-run sent %d rate-limited and %d too-long requests again; want 1 and 0",
			sent[fakeopenai.RateLimit]-1, sent[fakeopenai.ContextLength]-1)
	}
	mu.Unlock()
	all, _, err := results.ReadFile(filepath.Join(dir, "results.jsonl"))
	if err != nil || len(all) != 2 {
		t.Fatalf("results.jsonl: %d rows (%v), want each row once", len(all), err)
	}
	var fixed, final int
	for _, r := range all {
		switch {
		case r[results.FieldError] == nil:
			fixed++
		case r.String(results.FieldErrorKind) == "context_length":
			final++
		}
	}
	if fixed != 1 || final != 1 {
		t.Errorf("after the re-run: %d rows without error, %d context_length; want 1 and 1: %v", fixed, final, all)
	}
	if old := readRows(t, filepath.Join(dir, runfolder.RetriedFile)); len(old) != 1 {
		t.Errorf("%s keeps %d rows, want the retried one", runfolder.RetriedFile, len(old))
	}

	// --retry forces the model's failure to be asked again (a prompt fixed by a template edit, another server).
	_, stderr, code = runStarter(t, 10*time.Minute, "run", spec, "--runs", runs, "--ext-str", "model=openai",
		"--retry", "model")
	if code != exitRowErrors || !strings.Contains(stderr, "1 row(s) to retry: model 1 (context_length 1)") {
		t.Fatalf("--retry model: exit %d, want %d saying it retries the model's row\n%s", code, exitRowErrors, stderr)
	}
	mu.Lock()
	if sent[fakeopenai.ContextLength] != 2 {
		t.Errorf("--retry model sent the too-long request %d times in all, want 2", sent[fakeopenai.ContextLength])
	}
	mu.Unlock()
}
