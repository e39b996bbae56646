package steps

import (
	"maps"
	"path/filepath"
	"sort"
	"testing"

	"ctxlab/activities/api"
	"ctxlab/jsonnet"
	"ctxlab/specs"
)

// cq2careMethods compiles specs/demo.jsonnet and returns its CQ2-CARE methods (the library's own steps, prompts and
// caps), so the test runs exactly what the demo runs.
func cq2careMethods(t *testing.T) (*specs.Experiment, []specs.Method) {
	t.Helper()
	e, err := jsonnet.Compile(filepath.Join("..", "..", "specs", "demo.jsonnet"), jsonnet.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var out []specs.Method
	for _, m := range e.Methods {
		switch m.Name {
		case "cq2care", "cq2care_no_evidence", "cq2care_single_sample", "cq2care_patch_resample":
			out = append(out, m)
		}
	}
	return e, out
}

// libraryPatchParams returns the parameters (prompt, edit format) the library gives every method's patch step.
func libraryPatchParams(t *testing.T) map[string]any {
	t.Helper()
	e, _ := cq2careMethods(t)
	for _, s := range e.Methods[0].Steps {
		if s.Activity == "patch" {
			return maps.Clone(s.Params)
		}
	}
	t.Fatal("the demo's first method has no patch step")
	return nil
}

// armRow merges an arm's row fragments the way the Issue workflow does: model calls, tokens and cost add up, other
// fields take the last step's value.
func armRow(arm specs.Arm, outs map[string]api.NodeOutput) map[string]any {
	row := map[string]any{}
	seen := map[string]bool{}
	for _, s := range arm.Steps {
		if seen[s.Key] {
			continue
		}
		seen[s.Key] = true
		for k, v := range outs[s.Key].Row {
			switch k {
			case "model_calls", "prompt_tokens", "completion_tokens", "cost_usd":
				a, _ := row[k].(float64)
				b, _ := v.(float64)
				row[k] = a + b
			default:
				row[k] = v
			}
		}
	}
	return row
}

// TestCQ2CareDAGOnDemo runs CQ2-CARE and its ablations, as the demo spec declares them, on every demo instance with
// the offline stand-in, grading each patch with the instance's tests.
func TestCQ2CareDAGOnDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo's tests for every instance")
	}
	f := newFixture(t)
	e, methods := cq2careMethods(t)
	if len(methods) != 4 {
		t.Fatalf("demo spec has %d CQ2-CARE methods, want cq2care and three ablations", len(methods))
	}
	e.Methods = methods
	plan, err := specs.BuildPlan(e)
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, n := range plan.Nodes {
		count[n.Activity]++
	}
	// Shared steps run once: one inventory, three localize samples, one intersection for all four methods.
	if count["inventory"] != 1 || count["localize"] != 3 || count["intersect"] != 1 || count["trim"] != 1 ||
		count["evidence"] != 2 || count["assemble"] != 3 || count["patch"] != 4 {
		t.Errorf("plan nodes by activity %v", count)
	}
	ids := make([]string, 0, len(f.Rows))
	for id := range f.Rows {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	resolved := map[string]int{}
	for _, id := range ids {
		outs := f.RunPlan(plan, id)
		for _, arm := range plan.Arms {
			row := armRow(arm, outs)
			t.Logf("%s %-24s resolved=%v rho=%v eps=%v f1=%.2f files=%v fallback=%v tokens=%v calls=%v",
				id, arm.Method, row["resolved"], row["rho"], fmtPtr(row["epsilon"]), row["loc_f1"], row["files_selected"],
				row["fallback"], row["context_tokens"], row["model_calls"])
			if row["resolved"] == true {
				resolved[arm.Method]++
			}
			wantCalls := 5.0 // three localization samples, the evidence plan, the patch
			if arm.Method == "cq2care_no_evidence" {
				wantCalls = 4
			}
			if arm.Method == "cq2care_single_sample" {
				wantCalls = 5 // the trimmed sample needs the intersection's count, so all three samples ran
			}
			if row["model_calls"] != wantCalls {
				t.Errorf("%s %s: model_calls %v, want %v", id, arm.Method, row["model_calls"], wantCalls)
			}
			if pt, _ := row["prompt_tokens"].(float64); pt < 100 {
				t.Errorf("%s %s: prompt_tokens %v", id, arm.Method, row["prompt_tokens"])
			}
			if row["cost_usd"] != 0.0 {
				t.Errorf("%s %s: the offline stand-in cost %v", id, arm.Method, row["cost_usd"])
			}
			for _, k := range []string{"files_selected", "fallback", "loc_precision", "loc_recall", "loc_f1", "rho",
				"epsilon", "context_tokens", "patch_applied", "resolved"} {
				if _, ok := row[k]; !ok {
					t.Errorf("%s %s: row lacks %s: %v", id, arm.Method, k, row)
				}
			}
		}
	}
	t.Logf("resolved: %v of %d", resolved, len(ids))
	if resolved["cq2care"] < len(ids)-1 {
		t.Errorf("cq2care resolved %d of %d demo instances with the offline stand-in; the demo's gold files are findable",
			resolved["cq2care"], len(ids))
	}
}

func fmtPtr(v any) any {
	if v == nil {
		return "null"
	}
	return v
}

// TestPatchSearchReplaceFormat asks the offline stand-in for search/replace blocks on the oracle context of every
// demo instance: the blocks, turned into a diff against the real files, apply at base_commit.
func TestPatchSearchReplaceFormat(t *testing.T) {
	f := newFixture(t)
	e, methods := cq2careMethods(t)
	var prompt any
	for _, s := range methods[0].Steps {
		if s.ID == "patch" {
			prompt = s.Params["prompt"]
		}
	}
	for id := range f.Rows {
		co := f.Must(f.Node("checkout", id, nil, nil))
		ctx := f.Must(f.Node("oracle_files", id, nil, map[string]api.NodeOutput{"checkout": co}))
		in := map[string]api.NodeOutput{"checkout": co, "context": ctx}
		p := f.Must(f.Node("patch", id, map[string]any{"format": "search_replace", "prompt": prompt,
			"model": e.Models[0], "tokenizer": "o200k_base"}, in))
		if p.Row["patch_parse_error"] != nil || p.Row["model_calls"] != 1.0 {
			t.Errorf("%s: patch row %v", id, p.Row)
		}
		in["patch"] = p
		m := f.Must(f.Node("measure", id, map[string]any{"tokenizer": "o200k_base"}, in))
		if m.Row["patch_applied"] != true {
			t.Errorf("%s: search/replace patch does not apply: %v", id, m.Row)
		}
	}
}
