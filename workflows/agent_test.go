package workflows

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"ctxlab/activities"
	"ctxlab/activities/api"
	"ctxlab/demobench"
	"ctxlab/jsonnet"
	"ctxlab/specs"
)

// agentNodeInput builds, in a fresh run folder, the input of the library's agent node on the first demo instance:
// the dataset loaded, the checkout done.
func agentNodeInput(t *testing.T, a *activities.Activities, run string, datasetFile string) api.NodeInput {
	t.Helper()
	spec := filepath.Join(t.TempDir(), "agent.jsonnet")
	if err := os.WriteFile(spec, []byte(`local ctxlab = import 'ctxlab.libsonnet';
ctxlab.experiment({ name: 'a', dataset: ctxlab.datasets.demo, models: [ctxlab.models.offline],
  methods: [ctxlab.methods.agent({ max_turns: 6 })] })`), 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := jsonnet.Compile(spec, jsonnet.Options{})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := specs.BuildPlan(e)
	if err != nil {
		t.Fatal(err)
	}
	ds := specs.Dataset{File: datasetFile, Repos: "{dataset_dir}/repos/{repo}"}
	refs, err := a.LoadDataset(context.Background(), api.LoadDatasetInput{Run: run, Dataset: ds})
	if err != nil {
		t.Fatal(err)
	}
	var in api.NodeInput
	outs := map[string]api.NodeOutput{}
	for _, n := range plan.Nodes {
		inputs := map[string]api.NodeOutput{}
		for name, k := range n.Inputs {
			inputs[name] = outs[k]
		}
		nin := api.NodeInput{Run: run, Instance: refs[0], Node: n.Key, Step: n.Steps[0], Params: n.Params,
			Inputs: inputs, Dataset: ds}
		switch n.Activity {
		case "checkout":
			out, err := a.Checkout(context.Background(), nin)
			if err != nil {
				t.Fatal(err)
			}
			outs[n.Key] = out
		case "agent":
			// Params as they arrive in an activity: through JSON.
			b, _ := json.Marshal(nin)
			if err := json.Unmarshal(b, &in); err != nil {
				t.Fatal(err)
			}
		}
	}
	if in.Node == "" {
		t.Fatal("the plan has no agent node")
	}
	return in
}

// TestAgentWorkflowTurnsAreActivities: the Agent child workflow runs the real turn activities, the model turns on
// the llm queue and the tool turns on cpu, alternating, and ends with the same output as the agent node run as one
// activity in another run folder.
func TestAgentWorkflowTurnsAreActivities(t *testing.T) {
	root := t.TempDir()
	res, err := demobench.Generate(filepath.Join(root, "dataset"))
	if err != nil {
		t.Fatal(err)
	}
	a := activities.New(filepath.Join(root, "runs"), zerolog.Nop())
	in := agentNodeInput(t, a, "wf", res.File)

	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	// The test environment runs these real activities on the workflow's goroutine; on a loaded machine one may
	// take longer than the default 1 s deadlock detection allows.
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: time.Minute})
	for name, fn := range a.AgentTurnFunctions() {
		env.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name})
	}
	type started struct{ name, queue string }
	var seq []started
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		seq = append(seq, started{info.ActivityType.Name, info.TaskQueue})
	})
	env.ExecuteWorkflow(Agent, AgentInput{Node: in})
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("agent workflow: completed %v, error %v", env.IsWorkflowCompleted(), env.GetWorkflowError())
	}
	var got api.NodeOutput
	if err := env.GetWorkflowResult(&got); err != nil {
		t.Fatal(err)
	}
	turns := int(got.Row["agent_turns"].(float64))
	if len(seq) != 2*turns || turns < 2 {
		t.Fatalf("%d turns but activities %v", turns, seq)
	}
	for i, st := range seq[:len(seq)-1] {
		want := started{api.AgentModelTurnName, DefaultQueues.LLM}
		if i%2 == 1 {
			want = started{api.AgentToolTurnName, DefaultQueues.CPU}
		}
		if st != want {
			t.Errorf("activity %d: %v, want %v", i, st, want)
		}
	}
	if last := seq[len(seq)-1]; last != (started{api.AgentFinishName, DefaultQueues.CPU}) {
		t.Errorf("last activity %v, want the finish on cpu", last)
	}

	inline := agentNodeInput(t, a, "act", res.File)
	want, err := a.Agent(context.Background(), inline)
	if err != nil {
		t.Fatal(err)
	}
	wantJSON, _ := json.Marshal(want)
	var wantRoundTrip api.NodeOutput
	_ = json.Unmarshal(wantJSON, &wantRoundTrip)
	if got.Ref != want.Ref || !reflect.DeepEqual(got.Row, wantRoundTrip.Row) {
		t.Errorf("workflow output %+v\nactivity output %+v", got, wantRoundTrip)
	}
}

// TestActivitiesRegisterTheAgentTurns: every turn activity the Agent workflow starts is registered by the
// activities under that name.
func TestActivitiesRegisterTheAgentTurns(t *testing.T) {
	names := map[string]bool{}
	for n := range activities.New(t.TempDir(), zerolog.Nop()).AgentTurnFunctions() {
		names[n] = true
	}
	for _, n := range []string{api.AgentModelTurnName, api.AgentToolTurnName, api.AgentFinishName} {
		if !names[n] {
			t.Errorf("activities register no %s", n)
		}
	}
}
