package workflows

import (
	"maps"
	"slices"
	"strings"

	"ctxlab/activities/api"
	"ctxlab/results"
	"ctxlab/specs"
)

// ArmRow is the row an Issue workflow records for an arm of plan whose steps all succeeded, given their node
// outputs (by node key); ok is false when an output is missing. It lets a starter re-derive a row that was lost
// after it was recorded (a torn results.jsonl) from the memoized node outputs, exactly as the workflow builds it.
func ArmRow(instance string, plan specs.Plan, arm specs.Arm, outputs map[string]api.NodeOutput) (row results.Row,
	ok bool) {
	return newRowMerger(plan).armRow(instance, arm, func(key string) (map[string]any, bool) {
		out, has := outputs[key]
		return out.Row, has
	}, nil)
}

// IssueWorkflowID is the ID of the Issue workflow of an instance, whose history holds the rows it recorded.
func IssueWorkflowID(run, instance string) string { return issueWorkflowID(run, instance) }

// rowMerger builds rows from node fragments as a plan and the catalog's declarations say.
type rowMerger struct {
	format     int               // the plan's format: how borrowed steps are told
	activities map[string]string // node key -> activity
	resets     []string          // fields a step that replaces the context resets (specs.ContextResetFields)
}

func newRowMerger(plan specs.Plan) rowMerger {
	m := rowMerger{format: plan.Format, activities: map[string]string{}, resets: specs.ContextResetFields()}
	for _, n := range plan.Nodes {
		m.activities[n.Key] = n.Activity
	}
	return m
}

// armRow builds the row of an arm: its key and every required field (null until a step sets it), then the
// fragment of each of its own steps' nodes, each node once, in the arm's order. fragment returns a node's row
// fragment, false when the node has no output (armRow then returns false); after each step, onStep (when set) may
// add to the row (the Issue workflow records the first failed step's error there).
func (m rowMerger) armRow(instance string, arm specs.Arm, fragment func(key string) (map[string]any, bool),
	onStep func(row results.Row, st specs.ArmStep)) (results.Row, bool) {
	row := results.Row{results.FieldInstance: instance, results.FieldMethod: arm.Method, results.FieldModel: arm.Model}
	for _, f := range results.Required {
		if _, set := row[f]; !set {
			row[f] = nil
		}
	}
	merged := map[string]bool{}
	for _, st := range arm.Steps {
		frag, has := fragment(st.Key)
		if !has {
			return nil, false
		}
		// A borrowed step (e.g. "anchor.context" in a baseline fitted to an anchor's budget) is another method's
		// node: it must run first, and its failure fails this row, but its fields (model calls, cost,
		// localization) describe that method's row, not this one.
		if !merged[st.Key] && !m.borrowed(st) {
			merged[st.Key] = true
			m.merge(row, m.activities[st.Key], frag)
		}
		if onStep != nil {
			onStep(row, st)
		}
	}
	return row, true
}

// borrowed reports whether an arm step is another method's: marked by the plan compiler, or, in plans that
// predate the mark, told by a namespace prefix "name." in its id.
func (m rowMerger) borrowed(st specs.ArmStep) bool {
	if m.format >= specs.PlanFormatBorrowed {
		return st.Borrowed
	}
	return strings.Contains(st.ID, ".")
}

// merge adds a node's row fragment to a row. A step whose activity replaces the context first resets every context
// field (earlier steps of the method described the contexts it replaced). Fields in results.Summed (model calls,
// tokens, cost) add up over the arm's nodes; every other field takes the value of the last node that sets it.
// Whether a fragment sets only fields its activity owns is checked where it is made, by the activity (specs.CheckRow):
// fragments that older code recorded also carry nulls for context fields of other activities, which the reset
// sets alike, so they build the same rows.
func (m rowMerger) merge(row results.Row, activity string, fragment map[string]any) {
	if specs.Catalog[activity].ReplacesContext {
		for _, f := range m.resets {
			row[f] = nil
		}
	}
	// Sorted keys: a deterministic order.
	//workflowcheck:ignore
	for _, k := range slices.Sorted(maps.Keys(fragment)) {
		v := fragment[k]
		if slices.Contains(results.Summed, k) {
			if sum, ok := addNumbers(row[k], v); ok {
				row[k] = sum
				continue
			}
		}
		row[k] = v
	}
}

// addNumbers returns a+b when both are numbers (or a is unset); JSON numbers arrive as float64.
func addNumbers(a, b any) (float64, bool) {
	num := func(v any) (float64, bool) {
		switch x := v.(type) {
		case float64:
			return x, true
		case int:
			return float64(x), true
		case int64:
			return float64(x), true
		}
		return 0, false
	}
	y, ok := num(b)
	if !ok {
		return 0, false
	}
	if a == nil {
		return y, true
	}
	x, ok := num(a)
	if !ok {
		return 0, false
	}
	return x + y, true
}
