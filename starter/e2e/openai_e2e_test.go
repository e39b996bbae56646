package e2e

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ctxlab/results"
	"ctxlab/specs"
	"ctxlab/testkit/fakeopenai"
)

// TestOpenAIDemoSweep runs the demo spec with --ext-str model=openai against a local OpenAI-compatible server (the
// fake in testkit/fakeopenai, over real HTTP through the openai-go client): the sweep completes, rows carry model
// calls, tokens and cost, shared steps call the model once per issue, and the API key appears nowhere in the run
// folder: not in results, logs, attempts, the content store, node outputs or Temporal's database (workflow history),
// although the server echoes it inside every 200 answer's text and model name.
func TestOpenAIDemoSweep(t *testing.T) {
	t.Parallel()
	const key = "sk-ctxlab-e2e-DO-NOT-LEAK-7c1f93a2b8d4"
	srv := fakeopenai.New(fakeopenai.WithKey(key), fakeopenai.WithEchoKey())
	hs := httptest.NewServer(srv)
	defer hs.Close()
	setStarterEnv(t, "OPENAI_BASE_URL="+hs.URL+"/v1", "OPENAI_API_KEY="+key)

	// A price table makes cost visible ($ per million tokens). Two instances keep it short, and so do the methods up
	// to CQ2-CARE's ablations (the baselines' only model call is the patch, which these methods exercise too).
	spec := demoVariant(t, "{ name: 'oai', dataset+: { limit: 2 }, methods: super.methods[0:6], "+
		"models: [super.models[0] + { price: { input: 2.5, output: 10 } }] }")
	runs := t.TempDir()
	stdout, stderr, code := runStarter(t, 10*time.Minute, "run", spec, "--runs", runs, "--ext-str", "model=openai")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	dir := filepath.Join(runs, "oai")
	rows := readRows(t, filepath.Join(dir, "results.jsonl"))
	if len(rows) != 6*2 {
		t.Fatalf("%d rows, want 6 methods on 2 instances: %v", len(rows), keys(rows))
	}
	for k, r := range rows {
		if r[results.FieldError] != nil {
			t.Errorf("%v: error %v", k, r[results.FieldError])
		}
		if k.Model != "gpt-4o-mini" {
			t.Errorf("%v: model %q", k, k.Model)
		}
		calls, _ := r.Float(specs.ModelCalls.Name)
		pt, _ := r.Float(specs.PromptTokens.Name)
		ct, _ := r.Float(specs.CompletionTokens.Name)
		cost, _ := r.Float(specs.CostUSD.Name)
		want := 1.0 // the patch
		switch k.Method {
		case "cq2care", "cq2care_single_sample", "cq2care_patch_resample":
			want = 5 // three localization samples, the evidence plan, the patch
		case "cq2care_no_evidence":
			want = 4
		}
		if calls != want || pt <= 0 || ct <= 0 {
			t.Errorf("%v: model_calls %v (want %v), prompt_tokens %v, completion_tokens %v", k, calls, want, pt, ct)
		}
		if wantCost := (pt*2.5 + ct*10) / 1e6; cost <= 0 || cost < wantCost*0.999 || cost > wantCost*1.001 {
			t.Errorf("%v: cost_usd %v, want %v from the usage and the price table", k, cost, wantCost)
		}
	}
	// Shared steps ran once per issue: three localization samples for the four CQ2-CARE methods.
	if n := srv.CallsFor("localize"); n != 3*2 {
		t.Errorf("%d localize calls, want 3 per instance", n)
	}
	if !srv.SawAuthorization() {
		t.Error("the server never saw the key")
	}
	if !strings.Contains(stdout, "cq2care_no_evidence") {
		t.Errorf("summary lacks the ablations:\n%s", stdout)
	}

	// The key is nowhere in the run folder or the starter's output.
	if strings.Contains(stdout, key) || strings.Contains(stderr, key) {
		t.Error("the key was printed by the starter")
	}
	found, checked := grepTree(t, dir, key)
	if found > 0 {
		t.Errorf("the API key is in %d files of the run folder", found)
	}
	for _, want := range []string{"temporal.db", "results.jsonl", "attempts.jsonl", "ctxlab.log"} {
		if _, err := os.Stat(filepath.Join(dir, want)); err != nil {
			t.Errorf("run folder lacks %s, so it was not checked: %v", want, err)
		}
	}
	if checked < 50 {
		t.Errorf("only %d files checked for the key", checked)
	}
}
