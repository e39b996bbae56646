package workflows

import (
	"context"
	"sync"
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"

	"ctxlab/activities/api"
	"ctxlab/specs"
)

// runWhere runs an Issue of plan and returns, per activity name (with "/provider" for a model step), whether each
// call ran as a local activity.
func runWhere(t *testing.T, plan *specs.Plan, remoteOnly bool) map[string][]bool {
	t.Helper()
	var mu sync.Mutex
	where := map[string][]bool{}
	note := func(ctx context.Context, name string) {
		mu.Lock()
		defer mu.Unlock()
		where[name] = append(where[name], activity.GetInfo(ctx).IsLocalActivity)
	}
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	for name := range specs.Catalog {
		env.RegisterActivityWithOptions(func(ctx context.Context, in api.NodeInput) (api.NodeOutput, error) {
			label := name
			if model, ok := in.Params["model"].(map[string]any); ok {
				label += "/" + model["provider"].(string)
			}
			note(ctx, label)
			return api.NodeOutput{Row: map[string]any{name + "_ran": true}}, nil
		}, activity.RegisterOptions{Name: name})
	}
	env.RegisterActivityWithOptions(func(ctx context.Context, _ api.LoadPlanInput) (specs.Plan, error) {
		note(ctx, api.LoadPlanName)
		return *plan, nil
	}, activity.RegisterOptions{Name: api.LoadPlanName})
	registerRowSink(env, func(ctx context.Context, in api.RecordInput) (int, error) {
		note(ctx, api.StoreRowsName)
		return len(in.Rows), nil
	})
	env.ExecuteWorkflow(Issue, IssueInput{Run: "t", Instance: api.InstanceRef{ID: "i-1"}, RemoteOnly: remoteOnly})
	if !env.IsWorkflowCompleted() {
		t.Fatal("workflow did not complete")
	}
	var res IssueResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if res.Rows != len(plan.Arms) || res.FailedSteps != 0 {
		t.Fatalf("result %+v, want %d rows and no failed step", res, len(plan.Arms))
	}
	return where
}

// TestIssueRunsCheapNodesLocally: cheap nodes, offline model calls and the plan's loading run in the workflow
// worker; checkout, grading, a model with an endpoint and Record (whose input repair reads from the history) go to
// their queues; RemoteOnly sends everything to the queues.
func TestIssueRunsCheapNodesLocally(t *testing.T) {
	e := twoMethods()
	e.Models = append(e.Models, specs.Model{Name: "gpt", Provider: "openai", ID: "gpt-x"})
	plan, err := specs.BuildPlan(e)
	if err != nil {
		t.Fatal(err)
	}
	wantLocal := map[string]bool{api.LoadPlanName: true, "no_source": true, "oracle_files": true, "measure": true,
		"patch/offline": true, "checkout": false, "grade": false, "patch/openai": false, api.StoreRowsName: true}
	where := runWhere(t, plan, false)
	for name, local := range wantLocal {
		if len(where[name]) == 0 {
			t.Errorf("%s did not run", name)
		}
		for _, got := range where[name] {
			if got != local {
				t.Errorf("%s ran local=%v, want %v", name, got, local)
			}
		}
	}
	if len(where) != len(wantLocal) {
		t.Errorf("ran %v, want exactly the activities of %v", where, wantLocal)
	}
	for name, runs := range runWhere(t, plan, true) {
		for _, local := range runs {
			if local {
				t.Errorf("RemoteOnly: %s ran as a local activity", name)
			}
		}
	}
}
