package workflows

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"

	"ctxlab/activities/api"
	"ctxlab/jsonnet"
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
	registerRowSink(env, func(_ context.Context, in api.RecordInput) (int, error) {
		rows = append(rows, in.Rows...)
		return len(in.Rows), nil
	})
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

// TestBorrowedStepsByPlanMark: in a plan that marks borrowed steps, the mark alone decides (a step id with a "." of
// the method's own counts, a marked one does not); a plan from before the mark falls back to the "." rule; and
// cutting a plan down to some arms keeps its format.
func TestBorrowedStepsByPlanMark(t *testing.T) {
	usage := func(calls int) api.NodeOutput {
		return api.NodeOutput{Row: map[string]any{"model_calls": calls, "cost_usd": float64(calls)}}
	}
	outputs := map[string]api.NodeOutput{"k-anchor": usage(1), "k-dotted": usage(10), "k-own": usage(100)}
	arm := specs.Arm{Method: "m", Model: "offline", Steps: []specs.ArmStep{
		{ID: "anchor.patch", Key: "k-anchor", Borrowed: true},
		{ID: "fix.patch", Key: "k-dotted"}, // a dotted id of the method's own
		{ID: "patch", Key: "k-own"},
	}}
	plan := specs.Plan{Format: specs.PlanFormatBorrowed, Arms: []specs.Arm{arm}, Nodes: []specs.Node{
		{Key: "k-anchor", Activity: "patch"}, {Key: "k-dotted", Activity: "patch"}, {Key: "k-own", Activity: "patch"}}}
	for _, tc := range []struct {
		format int
		want   float64
	}{{specs.PlanFormatBorrowed, 110}, {0, 100}} {
		plan.Format = tc.format
		row, ok := ArmRow("i-1", plan, arm, outputs)
		if got, _ := row.Float("model_calls"); !ok || got != tc.want {
			t.Errorf("plan format %d: model_calls %v, want %v", tc.format, row["model_calls"], tc.want)
		}
	}
	plan.Format = specs.PlanFormatBorrowed
	if cut := onlyArms(plan, []results.Key{{Method: "m", Model: "offline"}}); cut.Format != plan.Format ||
		len(cut.Arms) != 1 {
		t.Errorf("onlyArms: format %d, %d arms; want format %d, 1 arm", cut.Format, len(cut.Arms), plan.Format)
	}
}

// TestBuildPlanMarksTheDemosBorrowedSteps: the plan compiler marks the steps ctxlab.libsonnet namespaces from
// another method, and they are exactly the demo's steps the "." rule took for borrowed, so the demo's rows do not
// change with the rule.
func TestBuildPlanMarksTheDemosBorrowedSteps(t *testing.T) {
	e, err := jsonnet.Compile(filepath.Join("..", "specs", "demo.jsonnet"), jsonnet.Options{})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := specs.BuildPlan(e)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Format != specs.PlanFormatBorrowed {
		t.Errorf("plan format %d, want %d", plan.Format, specs.PlanFormatBorrowed)
	}
	marked := 0
	for _, arm := range plan.Arms {
		for _, st := range arm.Steps {
			if st.Borrowed != strings.Contains(st.ID, ".") {
				t.Errorf("%s: step %s borrowed=%v", arm.Method, st.ID, st.Borrowed)
			}
			if st.Borrowed {
				marked++
			}
		}
	}
	if marked == 0 {
		t.Error("no step of the demo is marked borrowed; its fitted baselines borrow the anchor's steps")
	}
}

// TestReplacingContextResetsContextFields: a step whose activity replaces the context (compress over a retrieve)
// resets every field the catalog marks Context before its own are merged, so the row shows none of the replaced
// context's fields (and names each such field, null); a context step that does not replace (assemble over a
// selection) keeps its selection's fields.
func TestReplacingContextResetsContextFields(t *testing.T) {
	outputs := map[string]api.NodeOutput{
		"k-retrieve": {Row: map[string]any{"files_shown": 3, "chunks_shown": 5, "template_shown": true,
			"budget_tokens": 100}},
		"k-compress":  {Row: map[string]any{"files_shown": 2, "compress_rate": 0.5, "template_shown": false}},
		"k-intersect": {Row: map[string]any{"files_selected": 2, "loc_f1": 0.5}},
		"k-assemble":  {Row: map[string]any{"files_shown": 2, "assembled_tokens": 40}},
	}
	plan := specs.Plan{Format: specs.PlanFormatBorrowed, Nodes: []specs.Node{
		{Key: "k-retrieve", Activity: "retrieve"}, {Key: "k-compress", Activity: "compress"},
		{Key: "k-intersect", Activity: "intersect"}, {Key: "k-assemble", Activity: "assemble"}}}
	compressed := specs.Arm{Method: "compressed", Steps: []specs.ArmStep{{ID: "source", Key: "k-retrieve"},
		{ID: "context", Key: "k-compress"}}}
	row, _ := ArmRow("i-1", plan, compressed, outputs)
	want := map[string]any{"files_shown": 2, "compress_rate": 0.5, "template_shown": false, "chunks_shown": nil,
		"budget_tokens": nil}
	for k, v := range want {
		if row[k] != v {
			t.Errorf("compressed: %s = %v, want %v", k, row[k], v)
		}
	}
	resets := specs.ContextResetFields()
	for _, k := range resets {
		if _, named := row[k]; !named {
			t.Errorf("compressed: context field %s is not named in the row: %v", k, row)
		}
	}
	if len(resets) < 20 || !slices.Contains(resets, "loc_f1") || slices.Contains(resets, "files_shown") {
		t.Errorf("context fields %v", resets)
	}
	assembled := specs.Arm{Method: "assembled", Steps: []specs.ArmStep{{ID: "files", Key: "k-intersect"},
		{ID: "context", Key: "k-assemble"}}}
	row, _ = ArmRow("i-1", plan, assembled, outputs)
	if row["files_selected"] != 2 || row["loc_f1"] != 0.5 || row["files_shown"] != 2 {
		t.Errorf("assembled: %v keeps its selection's fields", row)
	}
	if _, named := row["compress_rate"]; named {
		t.Errorf("assembled: %v names fields of a context it did not replace", row)
	}
}

// TestSavedHistoriesBuildTheirRows: from each saved Issue history (made by code that predates the fields'
// declarations and the borrowed mark), the plan and node outputs it recorded build, with today's row builder, the
// very rows it recorded (those without an error; ArmRow builds only rows whose steps all succeeded).
func TestSavedHistoriesBuildTheirRows(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "histories", "issue-*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("saved issue histories: %v %v", files, err)
	}
	dc := converter.GetDefaultDataConverter()
	compared := 0
	for _, file := range files {
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		h, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		var instance string
		var plan specs.Plan
		var recorded []results.Row
		outputs := map[string]api.NodeOutput{}
		scheduled := map[int64]*historypb.HistoryEvent{}
		for _, ev := range h.GetEvents() {
			if a := ev.GetWorkflowExecutionStartedEventAttributes(); a != nil {
				var in IssueInput
				if err := dc.FromPayloads(a.GetInput(), &in); err != nil {
					t.Fatalf("%s: issue input: %v", file, err)
				}
				instance = in.Instance.ID
			}
			if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil {
				scheduled[ev.GetEventId()] = ev
				if a.GetActivityType().GetName() == api.RecordName {
					var in api.RecordInput
					if err := dc.FromPayloads(a.GetInput(), &in); err != nil {
						t.Fatalf("%s: record input: %v", file, err)
					}
					recorded = append(recorded, in.Rows...)
				}
			}
			a := ev.GetActivityTaskCompletedEventAttributes()
			if a == nil {
				continue
			}
			sa := scheduled[a.GetScheduledEventId()].GetActivityTaskScheduledEventAttributes()
			switch name := sa.GetActivityType().GetName(); {
			case name == api.LoadPlanName:
				if err := dc.FromPayloads(a.GetResult(), &plan); err != nil {
					t.Fatalf("%s: plan: %v", file, err)
				}
			case specs.Catalog[name].Name == name:
				var in api.NodeInput
				var out api.NodeOutput
				if err := dc.FromPayloads(sa.GetInput(), &in); err != nil {
					t.Fatalf("%s: %s input: %v", file, name, err)
				}
				if err := dc.FromPayloads(a.GetResult(), &out); err != nil {
					t.Fatalf("%s: %s output: %v", file, name, err)
				}
				outputs[in.Node] = out
			}
		}
		if plan.Format != 0 {
			t.Errorf("%s: plan format %d; these histories predate the borrowed mark", file, plan.Format)
		}
		byKey := map[results.Key]results.Row{}
		for _, r := range recorded {
			byKey[r.Key()] = r
		}
		for _, arm := range plan.Arms {
			want, has := byKey[results.Key{Instance: instance, Method: arm.Method, Model: arm.Model}]
			if !has || want[results.FieldError] != nil {
				continue
			}
			got, ok := ArmRow(instance, plan, arm, outputs)
			if !ok || !reflect.DeepEqual(jsonRoundTrip(t, got), jsonRoundTrip(t, want)) {
				t.Errorf("%s: %s: built %v, recorded %v", file, arm.Method, got, want)
			}
			compared++
		}
	}
	if compared < 3 {
		t.Errorf("compared %d rows; the histories hold more", compared)
	}
}

// TestSummedFieldsAreTheUsageFields: the fields rows add up over steps are the model-usage fields every model
// activity declares, and each is declared a number.
func TestSummedFieldsAreTheUsageFields(t *testing.T) {
	var usage []string
	for _, f := range specs.UsageFields {
		usage = append(usage, f.Name)
		if f.Kind != specs.KindInt && f.Kind != specs.KindFloat {
			t.Errorf("usage field %s is declared %s, not a number", f.Name, f.Kind)
		}
	}
	if !slices.Equal(usage, results.Summed) {
		t.Errorf("usage fields %v, summed fields %v", usage, results.Summed)
	}
	for _, name := range specs.ActivityNames() {
		if specs.Catalog[name].UsesModel {
			for _, f := range results.Summed {
				if _, ok := specs.FieldOf(name, f); !ok {
					t.Errorf("model activity %s does not declare %s", name, f)
				}
			}
		}
	}
}
