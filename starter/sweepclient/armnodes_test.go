package sweepclient

import (
	"path/filepath"
	"testing"

	"ctxlab/jsonnet"
	"ctxlab/results"
	"ctxlab/specs"
)

// TestArmNodesOfDemo: each of the demo's arms finds its grade step, the patch that step grades and the context its
// measure step reads, including the agent's, whose patch and context come from agent_patch and agent_context, not
// from steps named patch.
func TestArmNodesOfDemo(t *testing.T) {
	e, err := jsonnet.Compile(filepath.Join("..", "..", "specs", "demo.jsonnet"), jsonnet.Options{})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := specs.BuildPlan(e)
	if err != nil {
		t.Fatal(err)
	}
	nodes := map[string]specs.Node{}
	for _, n := range plan.Nodes {
		nodes[n.Key] = n
	}
	arms := armNodesOf(plan)
	if len(arms) != len(plan.Arms) {
		t.Fatalf("%d arms found, the plan has %d", len(arms), len(plan.Arms))
	}
	for k, an := range arms {
		if nodes[an.grade].Activity != "grade" {
			t.Errorf("%v: grade node %q is a %q", k, an.grade, nodes[an.grade].Activity)
		}
		if nodes[an.grade].Inputs["patch"] != an.patch {
			t.Errorf("%v: patch %q is not the one the grade reads (%q)", k, an.patch, nodes[an.grade].Inputs["patch"])
		}
		if an.context == "" {
			t.Errorf("%v: no context node", k)
		}
	}
	agent := arms[results.Key{Method: "agent", Model: e.Models[0].Name}]
	if nodes[agent.patch].Activity != "agent_patch" || nodes[agent.context].Activity != "agent_context" {
		t.Errorf("agent: patch from %q, context from %q; want agent_patch and agent_context",
			nodes[agent.patch].Activity, nodes[agent.context].Activity)
	}
}
