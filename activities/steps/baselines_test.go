package steps

import (
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"ctxlab/activities/api"
	"ctxlab/specs"
	"ctxlab/testkit/demorun"
	"ctxlab/workflows"
)

// baselineFixture is the demo instance with its checkout and the oracle context (the budget anchor).
type baselineFixture struct {
	*demorun.Fixture
	co, oracle api.NodeOutput
	anchor     float64 // the oracle context's tokens
}

var tok = map[string]any{"tokenizer": "o200k_base"}

func newBaselineFixture(t *testing.T) *baselineFixture {
	f := newFixture(t)
	co := f.Must(f.Node("checkout", demorun.Instance, nil, nil))
	oracle := f.Must(f.Node("oracle_files", demorun.Instance, tok, map[string]api.NodeOutput{"checkout": co}))
	b := &baselineFixture{Fixture: f, co: co, oracle: oracle}
	b.anchor = b.measure(oracle)["context_tokens"].(float64)
	return b
}

func (b *baselineFixture) measure(ctx api.NodeOutput) map[string]any {
	return b.Must(b.Node("measure", demorun.Instance, tok, map[string]api.NodeOutput{"checkout": b.co, "context": ctx})).Row
}

func params(kv ...any) map[string]any {
	p := map[string]any{"tokenizer": "o200k_base"}
	for i := 0; i < len(kv); i += 2 {
		p[kv[i].(string)] = kv[i+1]
	}
	return p
}

func within(got, want, tol float64) bool { return math.Abs(got-want) <= tol*want }

func TestRetrieveFitsTheAnchorBudget(t *testing.T) {
	b := newBaselineFixture(t)
	for _, unit := range []string{"definition", "function", "window", "file", "swebench_file"} {
		for _, m := range []float64{0.5, 1, 2} {
			out := b.Must(b.Node("retrieve", demorun.Instance, params("unit", unit, "multiplier", m),
				map[string]api.NodeOutput{"checkout": b.co, "budget": b.oracle}))
			got := b.measure(out)["context_tokens"].(float64)
			target := math.Round(b.anchor * m)
			if out.Row["budget_reached"] != true || !within(got, target, 0.02) || out.Row["budget_tokens"] != target {
				t.Errorf("%s x%v: %v tokens for a budget of %v: %v", unit, m, got, target, out.Row)
			}
			if ev := out.Row["budget_evals"].(float64); ev < 1 || ev > 12 {
				t.Errorf("%s x%v: %v evaluations", unit, m, ev)
			}
		}
	}
	// Without a budget input the fixed max_tokens is the budget, and no budget fields are recorded.
	out := b.Must(b.Node("retrieve", demorun.Instance, params("unit", "function", "max_tokens", 500),
		map[string]api.NodeOutput{"checkout": b.co}))
	if got := b.measure(out)["context_tokens"].(float64); !within(got, 500, 0.02) || out.Row["budget_tokens"] != nil {
		t.Errorf("max_tokens 500: %v tokens, row %v", got, out.Row)
	}
}

func TestRetrieveFallsIntoTheTemplateTrap(t *testing.T) {
	b := newBaselineFixture(t)
	out := b.Must(b.Node("retrieve", demorun.Instance, params("unit", "window"), map[string]api.NodeOutput{"checkout": b.co,
		"budget": b.oracle}))
	if out.Row["template_shown"] != true {
		t.Errorf("BM25 over windows did not rank the issue template: %v", out.Row)
	}
}

func TestWholeFilesUnreachableBudgetIsRecorded(t *testing.T) {
	b := newBaselineFixture(t)
	out := b.Must(b.Node("retrieve", demorun.Instance, params("unit", "file", "partial", false, "multiplier", 0.3),
		map[string]api.NodeOutput{"checkout": b.co, "budget": b.oracle}))
	why, _ := out.Row["budget_error"].(string)
	if out.Row["budget_reached"] != false || !strings.Contains(why, "no knob value gives") {
		t.Errorf("whole files at 0.3x: want an unreachable budget on the row, got %v", out.Row)
	}
}

func TestRetrieveBadParams(t *testing.T) {
	b := newBaselineFixture(t)
	for _, p := range []map[string]any{params("unit", "paragraph"), params("unit", "file", "scorer", "magic"),
		params("unit", "file", "b", 3.0), params("unit", "file", "scorer", "dense")} {
		_, err := b.Node("retrieve", demorun.Instance, p, map[string]api.NodeOutput{"checkout": b.co})
		if !isPermanent(err) || !strings.Contains(err.Error(), "m.retrieve") {
			t.Errorf("%v: want a non-retryable error naming the step, got %v", p, err)
		}
	}
}

func TestRetrieveDense(t *testing.T) {
	b := newBaselineFixture(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Input []string }
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			w.WriteHeader(400)
			return
		}
		// One dimension per letter: a bag of letters is enough to make a ranking.
		var data []map[string]any
		tokens := 0 // a token every four bytes, as a real tokenizer counts roughly
		for i, in := range req.Input {
			tokens += len(in)/4 + 1
			v := make([]float64, 26)
			for _, c := range strings.ToLower(in) {
				if c >= 'a' && c <= 'z' {
					v[c-'a']++
				}
			}
			data = append(data, map[string]any{"object": "embedding", "index": i, "embedding": v})
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "model": "m",
			"usage": map[string]int{"prompt_tokens": tokens, "total_tokens": tokens}})
	}))
	defer srv.Close()
	t.Setenv("OPENAI_BASE_URL", srv.URL+"/v1")
	t.Setenv("OPENAI_API_KEY", "k")
	out := b.Must(b.Node("retrieve", demorun.Instance, params("unit", "file", "scorer", "dense", "embedding_model", "m"),
		map[string]api.NodeOutput{"checkout": b.co, "budget": b.oracle}))
	if out.Row["budget_reached"] != true || out.Row["embedding_tokens"].(float64) < 30 {
		t.Errorf("dense: %v", out.Row)
	}
	// A second method over the same files embeds nothing again.
	out = b.Must(b.Node("retrieve", demorun.Instance, params("unit", "file", "scorer", "dense", "embedding_model", "m",
		"multiplier", 2), map[string]api.NodeOutput{"checkout": b.co, "budget": b.oracle}))
	if out.Row["embedding_tokens"] != 0.0 || out.Row["embeddings_cached"].(float64) < 30 {
		t.Errorf("dense, second time: %v", out.Row)
	}
}

func TestCompressFitsTheBudget(t *testing.T) {
	b := newBaselineFixture(t)
	src := b.Must(b.Node("retrieve", demorun.Instance, params("unit", "swebench_file", "max_tokens", 8000),
		map[string]api.NodeOutput{"checkout": b.co}))
	out := b.Must(b.Node("compress", demorun.Instance, params("compressor", "fake"),
		map[string]api.NodeOutput{"context": src, "budget": b.oracle}))
	got := b.measure(out)
	if out.Row["budget_reached"] != true || !within(got["context_tokens"].(float64), b.anchor, 0.02) {
		t.Errorf("fake compressor: %v tokens for %v: %v", got["context_tokens"], b.anchor, out.Row)
	}
	if eps := got["epsilon"].(float64); eps > 0.5 {
		t.Errorf("compressed text is %.2f verbatim", eps)
	}
	// A fixed rate without a budget; a rate out of range; a compressor without a server.
	if _, err := b.Node("compress", demorun.Instance, params("compressor", "fake", "rate", 0.0),
		map[string]api.NodeOutput{"context": src}); !isPermanent(err) {
		t.Errorf("rate 0: %v", err)
	}
	t.Setenv(CompressEndpointEnv, "")
	if _, err := b.Node("compress", demorun.Instance, params("compressor", "llmlingua2", "rate", 0.5),
		map[string]api.NodeOutput{"context": src}); !isPermanent(err) || !strings.Contains(err.Error(), CompressEndpointEnv) {
		t.Errorf("no server: %v", err)
	}
}

func TestCorruptionLowersEpsilonAndApplyRate(t *testing.T) {
	b := newBaselineFixture(t)
	patchParams := libraryPatchParams(t)
	patchParams["format"] = "diff"
	patchParams["model"] = map[string]any{"name": "offline", "provider": "offline"}
	patchOf := func(c api.NodeOutput) map[string]any {
		p := b.Must(b.Node("patch", demorun.Instance, patchParams, map[string]api.NodeOutput{"checkout": b.co, "context": c}))
		return b.Must(b.Node("measure", demorun.Instance, tok, map[string]api.NodeOutput{"checkout": b.co, "context": c, "patch": p})).Row
	}
	clean := patchOf(b.oracle)
	in := map[string]api.NodeOutput{"checkout": b.co, "context": b.oracle}
	toks := b.Must(b.Node("corrupt", demorun.Instance, params("mode", "tokens", "rate", 0.2, "seed", 1), in))
	// multiplier 1 is the default: another node, the same corruption.
	again := b.Must(b.Node("corrupt", demorun.Instance, params("mode", "tokens", "rate", 0.2, "seed", 1, "multiplier", 1), in))
	if toks.Ref != again.Ref {
		t.Error("the same seed gave a different corruption")
	}
	bad := patchOf(toks)
	if bad["epsilon"].(float64) >= clean["epsilon"].(float64) || bad["patch_applied"] != false ||
		clean["patch_applied"] != true || bad["rho"] != clean["rho"] {
		t.Errorf("20%% token deletion: clean %v, corrupted %v", clean, bad)
	}
	lines := patchOf(b.Must(b.Node("corrupt", demorun.Instance, params("mode", "lines", "rate", 0.5, "seed", 1), in)))
	if lines["epsilon"] != 1.0 || lines["patch_applied"] != false {
		t.Errorf("50%% line deletion: %v", lines)
	}
	if _, err := b.Node("corrupt", demorun.Instance, params("mode", "shuffle"), in); !isPermanent(err) {
		t.Errorf("unknown mode: %v", err)
	}
}

func TestPairings(t *testing.T) {
	b := newBaselineFixture(t)
	other := b.Must(b.Node("compress", demorun.Instance, params("compressor", "fake", "rate", 0.5),
		map[string]api.NodeOutput{"context": b.Must(b.Node("retrieve", demorun.Instance, params("unit", "function"),
			map[string]api.NodeOutput{"checkout": b.co}))}))
	otherM := b.measure(other)
	sf := b.Must(b.Node("corrupt", demorun.Instance, params("mode", "same_files_other_text", "seed", 2),
		map[string]api.NodeOutput{"checkout": b.co, "context": b.oracle, "other": other}))
	// The row of a method that pairs its context with a compressed one: the pairing replaces the context, so the
	// row keeps none of the compression's fields.
	plan := specs.Plan{Format: specs.PlanFormatBorrowed, Nodes: []specs.Node{{Key: "other", Activity: "compress"},
		{Key: "sf", Activity: "corrupt"}}}
	arm := specs.Arm{Method: "paired", Steps: []specs.ArmStep{{ID: "other", Key: "other"}, {ID: "context", Key: "sf"}}}
	row, _ := workflows.ArmRow(demorun.Instance, plan, arm, map[string]api.NodeOutput{"other": other, "sf": sf})
	if v, set := row["compress_rate"]; !set || v != nil || row["corrupt_lines_changed"] == nil {
		t.Errorf("a pairing must reset the context fields its other side set: %v", row)
	}
	m := b.measure(sf)
	if m["rho"] != 1.0 || math.Abs(m["epsilon"].(float64)-otherM["epsilon"].(float64)) > 0.1 {
		t.Errorf("same files, other text: %v; other: %v", m, otherM)
	}
	st := b.Must(b.Node("corrupt", demorun.Instance, params("mode", "same_text_other_files"),
		map[string]api.NodeOutput{"checkout": b.co, "context": b.oracle, "other": other}))
	m = b.measure(st)
	if m["epsilon"] != 1.0 || !within(m["context_tokens"].(float64), b.anchor, 0.02) || st.Row["budget_reached"] != true {
		t.Errorf("same text, other files: %v %v", m, st.Row)
	}
}
