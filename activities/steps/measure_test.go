package steps

import (
	"testing"

	"ctxlab/activities/api"
	"ctxlab/testkit/demorun"
)

func TestCheckoutContextsAndMeasure(t *testing.T) {
	f := newFixture(t)
	co := f.Must(f.Node("checkout", demorun.Instance, nil, nil))
	if n, _ := co.Row["repo_files"].(float64); n < 30 {
		t.Errorf("snapshot has %v files, want the demo repo's dozens", co.Row["repo_files"])
	}
	oracle := f.Must(f.Node("oracle_files", demorun.Instance, nil, map[string]api.NodeOutput{"checkout": co}))
	none := f.Must(f.Node("no_source", demorun.Instance, nil, map[string]api.NodeOutput{"checkout": co}))
	tok := map[string]any{"tokenizer": "o200k_base"}
	mo := f.Must(f.Node("measure", demorun.Instance, tok, map[string]api.NodeOutput{"checkout": co, "context": oracle}))
	if mo.Row["rho"] != 1.0 || mo.Row["epsilon"] != 1.0 || mo.Row["context_tokens"].(float64) < 50 {
		t.Errorf("oracle metrics: %v", mo.Row)
	}
	// The gold files whole show every gold line and block verbatim, and nothing but gold files.
	if mo.Row["line_recall"] != 1.0 || mo.Row["block_recall"] != 1.0 || mo.Row["file_precision"] != 1.0 ||
		mo.Row["gold_lines"].(float64) < 1 || mo.Row["gold_block_lines"].(float64) < mo.Row["gold_lines"].(float64) {
		t.Errorf("oracle line truth: %v", mo.Row)
	}
	if lp := mo.Row["line_precision"].(float64); lp <= 0 || lp > mo.Row["block_precision"].(float64) {
		t.Errorf("oracle line precision %v, block precision %v", lp, mo.Row["block_precision"])
	}
	mn := f.Must(f.Node("measure", demorun.Instance, tok, map[string]api.NodeOutput{"checkout": co, "context": none}))
	if mn.Row["rho"] != 0.0 || mn.Row["epsilon"] != nil || mn.Row["context_tokens"] != 0.0 {
		t.Errorf("no-source metrics: %v", mn.Row)
	}
	if mn.Row["line_recall"] != 0.0 || mn.Row["line_precision"] != nil || mn.Row["file_precision"] != nil {
		t.Errorf("no-source line truth: %v", mn.Row)
	}
	if _, err := f.Node("measure", demorun.Instance, map[string]any{"tokenizer": "nope"},
		map[string]api.NodeOutput{"checkout": co, "context": oracle}); !isPermanent(err) {
		t.Errorf("unknown tokenizer should be a non-retryable failure, got %v", err)
	}
}
