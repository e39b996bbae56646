package e2e

import (
	"fmt"
	"math"
	"path/filepath"
	"testing"
	"time"

	"ctxlab/results"
	"ctxlab/specs"
	"ctxlab/testkit/e2e"
	"ctxlab/testkit/llamaserver"
)

// tokenizerSpec is the demo's data under two methods that call no model: oracle_files, the anchor, and BM25 over
// functions fitted to the anchor's tokens on each issue, both ending at measure (no patch, no grade). tokenizer is
// the experiment's tokenizer; the one model is llama-server's stories260K, whose own tokenizer is 'endpoint'.
func tokenizerSpec(t *testing.T, name, tokenizer string) string {
	t.Helper()
	return libVariant(t, fmt.Sprintf(`
local measureOnly(m) = m { steps: [
  if s.id == 'measure' then s { inputs: { checkout: 'checkout', context: s.inputs.context } } else s
  for s in m.steps if s.id != 'patch' && s.id != 'grade'
] };
{
  name: '%s',
  tokenizer: '%s',
  models: [ctxlab.models.openai('%s', tokenizer='endpoint')],
  anchor: 'oracle_files',
  methods: [measureOnly(ctxlab.methods.oracle_files),
            measureOnly(ctxlab.baselines.fitted(ctxlab.methods.bm25_function, ctxlab.methods.oracle_files))],
}`, name, tokenizer, llamaserver.ModelID))
}

// TestTokenizerEndpointFit is issue 30's first item against the real llama-server: the same demo sweep counted in
// o200k_base (pinned for every model) and in the model's own tokenizer (the server's POST /tokenize) fits the
// baseline's budget to different numbers of lines on the same issue, each row names the tokenizer that counted,
// and within one sweep the anchor's context_tokens and the fitted row's budget_anchor_tokens are one count: the
// budget and the measure step count with the same tokenizer.
func TestTokenizerEndpointFit(t *testing.T) {
	t.Parallel()
	srv := llamaserver.Start(t, llamaserver.Options{Context: 2048, Slots: 1})
	setStarterEnv(t, "OPENAI_BASE_URL="+srv.URL+"/v1", "OPENAI_API_KEY=")

	sweep := func(name, tokenizer string) map[results.Key]results.Row {
		runs := t.TempDir()
		stdout, stderr, code := runStarter(t, 10*time.Minute, "run", tokenizerSpec(t, name, tokenizer), "--runs", runs,
			"--quiet", "--no-check")
		if code != 0 {
			t.Fatalf("starter run (tokenizer %s): exit %d\nstdout:\n%s\nstderr:\n%s", tokenizer, code, stdout,
				e2e.Tail(stderr, 4000))
		}
		return readRows(t, filepath.Join(runs, name, "results.jsonl"))
	}
	own := sweep("tokown", "model")
	pinned := sweep("tokpin", "o200k_base")
	if len(own) != 22 || len(pinned) != 22 {
		t.Fatalf("%d and %d rows, want 22 each (11 issues, 2 methods)", len(own), len(pinned))
	}

	endpoint := "endpoint:" + llamaserver.ModelID
	differs := 0
	for k, r := range own {
		p := pinned[results.Key{Instance: k.Instance, Method: k.Method, Model: k.Model}]
		if r[results.FieldError] != nil || p[results.FieldError] != nil {
			t.Errorf("%v: errors %v / %v", k, r[results.FieldError], p[results.FieldError])
			continue
		}
		if got := r.String(specs.Tokenizer.Name); got != endpoint {
			t.Errorf("%v: tokenizer %q, want %q", k, got, endpoint)
		}
		if got := p.String(specs.Tokenizer.Name); got != "o200k_base" {
			t.Errorf("%v (pinned): tokenizer %q, want o200k_base", k, got)
		}
		ownTok, _ := r.Float(specs.ContextTokens.Name)
		pinTok, _ := p.Float(specs.ContextTokens.Name)
		// stories260K's vocabulary has 512 pieces: code costs it several times o200k_base's tokens.
		if !(ownTok > 1.5*pinTok) {
			t.Errorf("%v: %v tokens of the server's tokenizer, %v of o200k_base: not the server's count", k, ownTok,
				pinTok)
		}
		if k.Method == "oracle_files" {
			continue
		}
		anchor := own[results.Key{Instance: k.Instance, Method: "oracle_files", Model: k.Model}]
		for _, rows := range []struct {
			fitted, anchor results.Row
		}{{r, anchor}, {p, pinned[results.Key{Instance: k.Instance, Method: "oracle_files", Model: k.Model}]}} {
			a, _ := rows.anchor.Float(specs.ContextTokens.Name)
			b, _ := rows.fitted.Float(specs.BudgetAnchorTokens.Name)
			if a != b {
				t.Errorf("%v (%s): the anchor measured %v tokens, the budget counted %v", k,
					rows.fitted.String(specs.Tokenizer.Name), a, b)
			}
			budget, _ := rows.fitted.Float(specs.BudgetTokens.Name)
			got, _ := rows.fitted.Float(specs.ContextTokens.Name)
			if reached, _ := rows.fitted.Bool(specs.BudgetReached.Name); reached && math.Abs(got-budget) > 0.02*budget {
				t.Errorf("%v (%s): budget reached, but %v tokens for a budget of %v", k,
					rows.fitted.String(specs.Tokenizer.Name), got, budget)
			}
		}
		ko, _ := r.Float(specs.BudgetKnob.Name)
		kp, _ := p.Float(specs.BudgetKnob.Name)
		if ko != kp {
			differs++
			t.Logf("%s %s: fitted to %v lines counting the server's tokens (budget %v), %v lines counting "+
				"o200k_base (budget %v)", k.Instance, k.Method, ko, r[specs.BudgetTokens.Name], kp, p[specs.BudgetTokens.Name])
		}
	}
	if differs == 0 {
		t.Errorf("no issue's fit differs between o200k_base and the server's tokenizer")
	}
}
