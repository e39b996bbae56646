package sweepclient

import (
	"ctxlab/results"
	"ctxlab/specs"
)

// armNodes are the nodes behind a row's stored objects: the context its method measured, the patch its grade step
// graded, and that grade step (node keys; "" when the arm has none).
type armNodes struct{ context, patch, grade string }

// armNodesOf finds each arm's armNodes through its plan: the grade step, the patch that grade reads, and the
// context the measure step reads (or else the one the patch step read). The report's drill-down and the audit's
// export read rows' objects through it, so both show the same context, patch and test log for a row.
func armNodesOf(plan *specs.Plan) map[results.Key]armNodes {
	nodes := map[string]specs.Node{}
	for _, n := range plan.Nodes {
		nodes[n.Key] = n
	}
	arms := map[results.Key]armNodes{}
	for _, a := range plan.Arms {
		var an armNodes
		var lastPatch string
		for _, s := range a.Steps {
			switch n := nodes[s.Key]; n.Activity {
			case "measure":
				an.context, an.patch = n.Inputs["context"], n.Inputs["patch"]
			case "grade":
				an.grade = s.Key
			case "patch":
				lastPatch = s.Key
			}
		}
		if p := nodes[an.grade].Inputs["patch"]; p != "" {
			an.patch = p
		}
		if an.patch == "" {
			an.patch = lastPatch
		}
		if an.context == "" {
			an.context = nodes[an.patch].Inputs["context"]
		}
		arms[results.ArmKey(a)] = an
	}
	return arms
}
