package workflows

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"

	"ctxlab/activities/api"
	"ctxlab/results"
	"ctxlab/specs"
)

// TestIssueSumsModelUsageOverSteps runs a method with three model-calling steps, one of them shared with a second
// method: each row's model_calls, tokens and cost are the sums over its own steps, a shared node counts once per row,
// and other fields keep the last step's value.
func TestIssueSumsModelUsageOverSteps(t *testing.T) {
	step := func(id, act string, params map[string]any, inputs map[string]string) specs.Step {
		return specs.Step{ID: id, Activity: act, Params: params, Inputs: inputs}
	}
	co := map[string]string{"checkout": "checkout"}
	loc := func(i int) specs.Step {
		return step("l"+string(rune('0'+i)), "localize", map[string]any{"sample": i},
			map[string]string{"checkout": "checkout", "inventory": "inventory"})
	}
	full := specs.Method{Name: "full", Steps: []specs.Step{
		step("checkout", "checkout", nil, nil),
		step("inventory", "inventory", nil, co),
		loc(0), loc(1), loc(2),
		step("files", "intersect", nil, map[string]string{"l0": "l0", "l1": "l1", "l2": "l2"}),
		step("context", "assemble", nil, map[string]string{"checkout": "checkout", "files": "files"}),
		step("patch", "patch", nil, map[string]string{"checkout": "checkout", "context": "context"}),
	}}
	// "fitted" borrows full's steps up to its context under "anchor." ids (the same nodes) and adds its own context
	// and patch: its row counts only its own patch call.
	fitted := specs.Method{Name: "fitted", Steps: []specs.Step{step("checkout", "checkout", nil, nil)}}
	for _, st := range full.Steps[:7] {
		st.ID, st.Borrowed = "anchor."+st.ID, true
		ins := map[string]string{}
		for k, v := range st.Inputs {
			ins[k] = "anchor." + v
		}
		st.Inputs = ins
		fitted.Steps = append(fitted.Steps, st)
	}
	fitted.Steps = append(fitted.Steps,
		step("context", "no_source", nil, map[string]string{"checkout": "checkout"}),
		step("patch", "patch", map[string]any{"sample": 2}, map[string]string{"checkout": "checkout", "context": "context"}))
	// "resample" shares everything but the patch.
	resample := specs.Method{Name: "resample", Steps: append(append([]specs.Step{}, full.Steps[:7]...),
		step("patch", "patch", map[string]any{"sample": 1}, map[string]string{"checkout": "checkout", "context": "context"}))}
	e := &specs.Experiment{Name: "t", Tokenizer: "o200k_base", Models: []specs.Model{{Name: "offline", Provider: "offline"}},
		Methods: []specs.Method{full, resample, fitted}}
	plan, err := specs.BuildPlan(e)
	if err != nil {
		t.Fatal(err)
	}
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	usage := map[string]map[string]any{
		"localize":  {"model_calls": 1, "prompt_tokens": 100, "completion_tokens": 10, "cost_usd": 0.25},
		"patch":     {"model_calls": 1, "prompt_tokens": 1000, "completion_tokens": 50, "cost_usd": 1.5},
		"intersect": {"files_selected": 2},
		"assemble":  {"files_shown": 3},
	}
	for name := range specs.Catalog {
		name := name
		env.RegisterActivityWithOptions(func(_ context.Context, in api.NodeInput) (api.NodeOutput, error) {
			return api.NodeOutput{Row: usage[name]}, nil
		}, activity.RegisterOptions{Name: name})
	}
	env.RegisterActivityWithOptions(func(context.Context, api.LoadPlanInput) (specs.Plan, error) {
		return *plan, nil
	}, activity.RegisterOptions{Name: api.LoadPlanName})
	var rows []results.Row
	env.RegisterActivityWithOptions(func(_ context.Context, in api.RecordInput) (int, error) {
		rows = append(rows, in.Rows...)
		return len(in.Rows), nil
	}, activity.RegisterOptions{Name: api.RecordName})
	env.ExecuteWorkflow(Issue, IssueInput{Run: "t", Instance: api.InstanceRef{ID: "i-1"}})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 {
		t.Fatalf("%d rows, want 3", len(rows))
	}
	if n := len(plan.Nodes); n != 11 {
		t.Errorf("%d nodes, want 11 (full's 8, resample's patch, fitted's context and patch)", n)
	}
	// ArmRow, which re-derives a lost row from the memoized node outputs, builds the rows the workflow recorded.
	outputs := map[string]api.NodeOutput{}
	for _, n := range plan.Nodes {
		outputs[n.Key] = jsonRoundTrip(t, api.NodeOutput{Row: usage[n.Activity]})
	}
	for i, arm := range plan.Arms {
		got, ok := ArmRow("i-1", *plan, arm, outputs)
		if want := jsonRoundTrip(t, rows[i]); !ok || !reflect.DeepEqual(jsonRoundTrip(t, got), want) {
			t.Errorf("ArmRow(%s) = %v, %v; the workflow recorded %v", arm.Method, got, ok, want)
		}
		last := arm.Steps[len(arm.Steps)-1].Key
		kept := outputs[last]
		delete(outputs, last)
		if _, ok := ArmRow("i-1", *plan, arm, outputs); ok {
			t.Errorf("ArmRow(%s) built a row without its last step's output", arm.Method)
		}
		outputs[last] = kept
	}
	for _, r := range rows {
		if r.String(results.FieldMethod) == "fitted" {
			want := map[string]any{"model_calls": 1.0, "prompt_tokens": 1000.0, "cost_usd": 1.5, "files_selected": nil}
			for k, v := range want {
				if r[k] != v {
					t.Errorf("fitted: %s = %v, want %v (borrowed steps count for their own method only)", k, r[k], v)
				}
			}
			continue
		}
		want := map[string]float64{"model_calls": 4, "prompt_tokens": 1300, "completion_tokens": 80, "cost_usd": 2.25}
		for k, v := range want {
			if got, ok := r.Float(k); !ok || got != v {
				t.Errorf("%s: %s = %v, want %v (three samples and one patch)", r.String(results.FieldMethod), k, r[k], v)
			}
		}
		if r["files_selected"] != 2.0 || r["files_shown"] != 3.0 {
			t.Errorf("%s: other fields should keep their step's value: %v", r.String(results.FieldMethod), r)
		}
	}
}

// jsonRoundTrip returns v as it comes back from JSON (numbers as float64), as workflows and memos see it.
func jsonRoundTrip[T any](t *testing.T, v T) T {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out T
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
