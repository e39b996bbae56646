package jsonnet

import (
	"path/filepath"
	"strings"
	"testing"

	"ctxlab/specs"
)

// TestFittedSharesTheAnchor compiles fitted baselines and checks that the anchor's steps resolve to the anchor's
// own nodes, that the fitted step reads the anchor's context as its budget, and that a method without a knob is
// refused with a message naming it.
func TestFittedSharesTheAnchor(t *testing.T) {
	dir := writeFiles(t, map[string]string{"spec.jsonnet": `
local ctxlab = import 'ctxlab.libsonnet';
local b = ctxlab.baselines;
local anchor = ctxlab.methods.oracle_files;
ctxlab.experiment({
  name: 'x', dataset: ctxlab.datasets.demo, models: [ctxlab.models.offline],
  methods: [anchor, b.fitted(ctxlab.methods.bm25_window, anchor), b.fitted(ctxlab.methods.fake_compressor, anchor, 0.5)],
})`, "bad.jsonnet": `
local ctxlab = import 'ctxlab.libsonnet';
ctxlab.experiment({
  name: 'x', dataset: ctxlab.datasets.demo, models: [ctxlab.models.offline],
  methods: [ctxlab.baselines.fitted(ctxlab.methods.no_source, ctxlab.methods.oracle_files)],
})`})
	e, err := Compile(filepath.Join(dir, "spec.jsonnet"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if e.Methods[2].Name != "fake_compressor_x0_5" {
		t.Errorf("names: %s %s", e.Methods[1].Name, e.Methods[2].Name)
	}
	plan, err := specs.BuildPlan(e)
	if err != nil {
		t.Fatal(err)
	}
	byKey := map[string]specs.Node{}
	for _, n := range plan.Nodes {
		byKey[n.Key] = n
	}
	var oracle []specs.Node
	for _, n := range plan.Nodes {
		if n.Activity == "oracle_files" {
			oracle = append(oracle, n)
		}
	}
	if len(oracle) != 1 || len(oracle[0].Steps) != 3 {
		t.Fatalf("oracle_files nodes %+v, want one shared by the anchor and both fitted methods", oracle)
	}
	budgets := 0
	for _, n := range plan.Nodes {
		if k, ok := n.Inputs["budget"]; ok {
			budgets++
			if k != oracle[0].Key {
				t.Errorf("%v reads its budget from %s", n.Steps, k)
			}
			if n.Activity == "retrieve" && strings.HasPrefix(n.Steps[0], "fake_compressor") && n.Params["multiplier"] != 2.0 {
				t.Errorf("the compressor's source is fitted to %v x the anchor, want 4 x 0.5", n.Params["multiplier"])
			}
		}
	}
	if budgets != 3 { // bm25_window's context, the compressor and its source
		t.Errorf("%d nodes read a budget, want 3", budgets)
	}
	_, err = Compile(filepath.Join(dir, "bad.jsonnet"), Options{})
	if err == nil || !strings.Contains(err.Error(), "no_source") || !strings.Contains(err.Error(), "has no knob to fit") {
		t.Errorf("fitting a method without a knob: %v", err)
	}
}

// TestAgentAnchorOptionIsFitted: methods.agent({anchor, multiplier}) is baselines.fitted of the plain agent: the
// same agent node, reading the anchor's context as its budget input.
func TestAgentAnchorOptionIsFitted(t *testing.T) {
	dir := writeFiles(t, map[string]string{"agent.jsonnet": `local ctxlab = import 'ctxlab.libsonnet';
ctxlab.experiment({ name: 'a', dataset: ctxlab.datasets.demo, models: [ctxlab.models.offline],
  methods: [ctxlab.methods.cq2care,
            ctxlab.methods.agent({ name: 'by_option', anchor: ctxlab.methods.cq2care, multiplier: 2 }),
            ctxlab.baselines.fitted(ctxlab.methods.agent(), ctxlab.methods.cq2care, 2, name='by_fitted')] })`})
	e, err := Compile(filepath.Join(dir, "agent.jsonnet"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := specs.BuildPlan(e)
	if err != nil {
		t.Fatal(err)
	}
	agentKey := map[string]string{}
	for _, arm := range plan.Arms {
		for _, s := range arm.Steps {
			if s.ID == "agent" {
				agentKey[arm.Method] = s.Key
			}
		}
	}
	if agentKey["by_option"] == "" || agentKey["by_option"] != agentKey["by_fitted"] {
		t.Fatalf("agent nodes %v, want one node for both spellings", agentKey)
	}
	var cq2careContext string
	for _, arm := range plan.Arms {
		if arm.Method == "cq2care" {
			for _, s := range arm.Steps {
				if s.ID == "context" {
					cq2careContext = s.Key
				}
			}
		}
	}
	for _, n := range plan.Nodes {
		if n.Key == agentKey["by_option"] && (n.Inputs["budget"] != cq2careContext || n.Params["multiplier"] != 2.0) {
			t.Errorf("agent node inputs %v params multiplier %v; want cq2care's context %s and 2",
				n.Inputs, n.Params["multiplier"], cq2careContext)
		}
	}
}
