package e2e

import (
	"math"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"ctxlab/results"
	"ctxlab/runfolder"
	"ctxlab/runlog"
	"ctxlab/specs"
	"ctxlab/testkit/fakeopenai"
)

// TestFailedStepRowCountsItsPaidCalls: a patch step whose model call was paid but gave no answer it could use
// fails its row, and the row's cost_usd and token counts must be what the ledger (calls.jsonl) says its calls cost.
// Before, a row's usage came only from successful steps' outputs: both rows said nothing was spent.
//
// One issue's patch call is billed and final (a context_length_exceeded error beside the prompt's usage: one call).
// The other's is billed and retried: its call is answered without choices 4 times (the provider's attempts, each
// billed, one line of the ledger) in each of the step's 2 attempts; the second attempt learns the first's spend
// from its heartbeat.
func TestFailedStepRowCountsItsPaidCalls(t *testing.T) {
	t.Parallel()
	srv := fakeopenai.New()
	var mu sync.Mutex
	modes := map[string]fakeopenai.Failure{} // by patch prompt: the first issue's final, the second's retried
	srv.SetFailWhen(func(r fakeopenai.ChatRequest) fakeopenai.Failure {
		if r.Task() != specs.Patch.Task {
			return 0
		}
		mu.Lock()
		defer mu.Unlock()
		if _, ok := modes[r.Prompt()]; !ok {
			modes[r.Prompt()] = []fakeopenai.Failure{fakeopenai.BilledContextLength,
				fakeopenai.NoChoices}[min(len(modes), 1)]
		}
		return modes[r.Prompt()]
	})
	hs := httptest.NewServer(srv)
	defer hs.Close()
	setStarterEnv(t, "OPENAI_BASE_URL="+hs.URL+"/v1", "OPENAI_API_KEY=")
	runs := t.TempDir()
	spec := demoVariant(t, "{ name: 'failedcost', dataset+: { limit: 2 }, methods: super.methods[0:1], anchor:: null, "+
		"models: [super.models[0] + { price: { input: 2.5, output: 10 } }], limits+: { retries: 2 } }")
	_, stderr, code := runStarter(t, 10*time.Minute, "run", spec, "--runs", runs, "--ext-str", "model=openai",
		"--infra-waits", "-1", "--quiet")
	if code != exitRowErrors {
		t.Fatalf("exit %d, want %d (rows failed)\n%s", code, exitRowErrors, stderr)
	}
	dir := filepath.Join(runs, "failedcost")
	calls, _, err := runlog.Read[runlog.Call](runfolder.Calls(dir))
	if err != nil {
		t.Fatal(err)
	}
	type sum struct {
		calls, prompt, completion int
		cost                      float64
	}
	ledger := map[string]sum{}
	for _, c := range calls {
		if !c.Paid() {
			continue
		}
		s := ledger[c.Instance]
		s.calls, s.prompt, s.completion, s.cost = s.calls+1, s.prompt+c.PromptTokens,
			s.completion+c.CompletionTokens, s.cost+c.CostUSD
		ledger[c.Instance] = s
	}
	rows := readRows(t, filepath.Join(dir, "results.jsonl"))
	if len(rows) != 2 {
		t.Fatalf("%d rows, want 2", len(rows))
	}
	var kinds []string
	for k, r := range rows {
		want := ledger[k.Instance]
		kind, _ := r[results.FieldErrorKind].(string)
		kinds = append(kinds, kind)
		cost, _ := specs.CostUSD.Get(r)
		calls, _ := specs.ModelCalls.Get(r)
		prompt, _ := specs.PromptTokens.Get(r)
		completion, _ := specs.CompletionTokens.Get(r)
		if r[results.FieldError] == nil || want.cost <= 0 {
			t.Errorf("%v: error %v, ledger $%v: want a failed row whose calls were paid", k, r[results.FieldError],
				want.cost)
		}
		if math.Abs(cost-want.cost) > 1e-12 || calls != want.calls || prompt != want.prompt ||
			completion != want.completion {
			t.Errorf("%v (%s): cost_usd %v, model_calls %d, prompt_tokens %d, completion_tokens %d; the ledger's "+
				"calls: $%v, %d, %d, %d", k, kind, cost, calls, prompt, completion, want.cost, want.calls, want.prompt,
				want.completion)
		}
	}
	final, retried := ledger[firstKeyWithKind(rows, "context_length")], ledger[firstKeyWithKind(rows, "bad_response")]
	if len(ledger) != 2 || final.calls != 1 || final.prompt != 1000 || retried.calls != 2 || retried.prompt != 2*4*100 {
		t.Errorf("ledger %v, row kinds %v: want one issue's single final call (1,000 prompt tokens) and the "+
			"other's call in each of 2 attempts, each billed 4 times 100 prompt tokens", ledger, kinds)
	}
}

// firstKeyWithKind is the instance of a row whose error_kind is kind ("" when none is).
func firstKeyWithKind(rows map[results.Key]results.Row, kind string) string {
	for k, r := range rows {
		if r[results.FieldErrorKind] == kind {
			return k.Instance
		}
	}
	return ""
}
