package activities

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ctxlab/activities/api"
	"ctxlab/activities/contexts"
	"ctxlab/activities/llm/offline"
	"ctxlab/activities/steps"
	"ctxlab/jsonnet"
	"ctxlab/runfolder"
	"ctxlab/runlog"
	"ctxlab/specs"
)

const agentSpec = `local ctxlab = import 'ctxlab.libsonnet';
ctxlab.experiment({
  name: 'agent_test',
  dataset: ctxlab.datasets.demo,
  models: [ctxlab.models.offline],
  methods: [
    ctxlab.methods.oracle_files,
    ctxlab.methods.agent({ max_turns: 8 }),
    ctxlab.baselines.fitted(ctxlab.methods.agent(), ctxlab.methods.oracle_files, 0.5, name='agent_half'),
  ],
})
`

// compileAgentSpec compiles a spec using the library's agent helper and returns its plan.
func compileAgentSpec(t *testing.T, spec string) *specs.Plan {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agent.jsonnet")
	if err := os.WriteFile(path, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := jsonnet.Compile(path, jsonnet.Options{})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := specs.BuildPlan(e)
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// stepOut returns the output of a method's step.
func stepOut(t *testing.T, plan *specs.Plan, outs map[string]api.NodeOutput, method, step string) api.NodeOutput {
	t.Helper()
	for _, arm := range plan.Arms {
		if arm.Method != method {
			continue
		}
		for _, s := range arm.Steps {
			if s.ID == step {
				return outs[s.Key]
			}
		}
	}
	t.Fatalf("no step %s.%s", method, step)
	return api.NodeOutput{}
}

// TestAgentOfflineOnDemo runs the agent method with the offline stand-in on every demo instance: it searches
// before it opens, its context is exactly what its tools showed (verbatim lines), its patch is the oracle
// patcher's on that context, its tool output stays within the budget fitted to half the anchor's tokens, and a
// rerun of the node asks no finished turn again.
func TestAgentOfflineOnDemo(t *testing.T) {
	plan := compileAgentSpec(t, agentSpec)
	f := newFixture(t)
	nonEmpty := 0
	for id, instance := range f.Rows {
		outs := f.RunPlan(plan, id, specs.Grade.Name)
		ag := stepOut(t, plan, outs, "agent", "agent")
		row := ag.Row
		turns := int(row["agent_turns"].(float64))
		if turns < 1 || turns > 8 || row["agent_stop"] != "answered" {
			t.Errorf("%s: %d turns, stop %v", id, turns, row["agent_stop"])
		}
		if row["agent_tool_calls"].(float64) != float64(turns-1) || row["model_calls"].(float64) != float64(turns) {
			t.Errorf("%s: %v tool calls, %v model calls in %d turns", id, row["agent_tool_calls"], row["model_calls"], turns)
		}
		var traj steps.AgentTrajectory
		f.Load(ag.Ref, &traj)
		if len(offline.Identifiers(instance.ProblemStatement)) > 0 && (len(traj.Turns) < 2 || traj.Turns[0].Call == nil ||
			traj.Turns[0].Call.Tool != "search") {
			t.Errorf("%s: the stand-in did not search first: %+v", id, traj.Turns)
		}

		var c contexts.Context
		f.Load(stepOut(t, plan, outs, "agent", "context").Ref, &c)
		measure := stepOut(t, plan, outs, "agent", "measure").Row
		if eps, ok := measure["epsilon"].(float64); len(c.Blocks) > 0 && (!ok || eps != 1) {
			t.Errorf("%s: epsilon %v: the agent's context is not verbatim repository text", id, measure["epsilon"])
		}
		want, err := offline.OraclePatch(instance.Patch, c)
		if err != nil {
			t.Fatal(err)
		}
		patch, err := mustStore(t, f.a).Get(context.Background(), stepOut(t, plan, outs, "agent", "patch").Ref)
		if err != nil {
			t.Fatal(err)
		}
		if strings.TrimSpace(string(patch)) != strings.TrimSpace(want.Patch) {
			t.Errorf("%s: agent patch\n%s\nwant the oracle patcher's on the agent's context\n%s", id, patch, want.Patch)
		}
		if want.Patch != "" {
			nonEmpty++
			if measure["patch_applied"] != true {
				t.Errorf("%s: the agent's patch does not apply: %v", id, measure["patch_apply_error"])
			}
		}

		half := stepOut(t, plan, outs, "agent_half", "agent").Row
		oracleTokens := stepOut(t, plan, outs, "oracle_files", "measure").Row["context_tokens"].(float64)
		if b := half["agent_budget_tokens"].(float64); b != float64(max(1, int(oracleTokens*0.5))) {
			t.Errorf("%s: budget %v, want half the anchor's %v tokens", id, b, oracleTokens)
		}
		if half["agent_tool_output_tokens"].(float64) > half["agent_budget_tokens"].(float64) {
			t.Errorf("%s: %v tool output tokens over the budget %v", id, half["agent_tool_output_tokens"], half["agent_budget_tokens"])
		}
	}
	t.Logf("the agent saw every line of the gold hunks on %d of %d instances", nonEmpty, len(f.Rows))
	if nonEmpty == 0 {
		t.Error("the agent saw enough for no instance's patch: the test checks nothing")
	}

	// A rerun of the node (its own memo lost, as when the worker died before Temporal recorded it) replays its
	// turns from their memos: no turn starts again.
	var id string
	for id = range f.Rows {
		break
	}
	var agentNode specs.Node
	for _, n := range plan.Nodes {
		if n.Activity == "agent" && n.Steps[0] == "agent.agent" {
			agentNode = n
		}
	}
	outs := f.RunPlan(plan, id, specs.Grade.Name)
	first := outs[agentNode.Key]
	runDir := f.RunDir
	if err := os.Remove(NodeMemoPath(runDir, id, agentNode.Key)); err != nil {
		t.Fatal(err)
	}
	attempts := filepath.Join(runDir, runfolder.AttemptsFile)
	before, _, _ := runlog.Read[runlog.Attempt](attempts)
	inputs := map[string]api.NodeOutput{"checkout": outs[agentNode.Inputs["checkout"]]}
	again := f.Must(f.Exec("agent", api.NodeInput{Run: "t", Instance: f.Refs[id], Node: agentNode.Key,
		Step: agentNode.Steps[0], Params: agentNode.Params, Inputs: inputs, Dataset: f.Dataset}))
	after, _, _ := runlog.Read[runlog.Attempt](attempts)
	if again.Ref != first.Ref {
		t.Errorf("rerun trajectory %s, want %s", again.Ref, first.Ref)
	}
	withTrajectory := 0
	for _, a := range before {
		if a.Activity == api.AgentToolTurnName && a.Inputs["trajectory"] != "" {
			withTrajectory++
		}
	}
	if withTrajectory == 0 {
		t.Error("no tool turn's attempt names the trajectory it continued")
	}
	memos := 0
	for _, a := range after[len(before):] {
		if a.Event == runlog.EventStart && a.Activity != "agent" {
			t.Errorf("turn %s started again on rerun", a.Node)
		}
		if a.Event == runlog.EventMemo {
			memos++
		}
	}
	if memos < 2 {
		t.Errorf("rerun: %d turn memos read, want every turn's", memos)
	}
}
