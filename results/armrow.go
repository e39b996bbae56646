package results

import (
	"maps"
	"slices"
	"strings"

	"ctxlab/specs"
)

// RowMerger builds rows from node fragments as a plan and the catalog's declarations say: the Issue workflow's rows,
// the rows a starter re-derives from memoized node outputs and a grade run's rows are built by it alike. It is pure
// (workflow code calls it): what it does to a row is part of what replaying a saved history checks.
type RowMerger struct {
	format     int               // the plan's format: how borrowed steps are told
	activities map[string]string // node key -> activity
	resets     []string          // fields a step that replaces the context resets (specs.ContextResetFields)
}

// NewRowMerger returns the row merger of plan.
func NewRowMerger(plan specs.Plan) RowMerger {
	m := RowMerger{format: plan.Format, activities: map[string]string{}, resets: specs.ContextResetFields()}
	for _, n := range plan.Nodes {
		m.activities[n.Key] = n.Activity
	}
	return m
}

// ArmRow builds the row of an arm: its key and every required field (null until a step sets it), then the
// fragment of each of its own steps' nodes, each node once, in the arm's order. fragment returns a node's row
// fragment, false when the node has no output (ArmRow then returns false); after each step, onStep (when set) may
// add to the row (the Issue workflow records the first failed step's error there).
func (m RowMerger) ArmRow(instance string, arm specs.Arm, fragment func(key string) (map[string]any, bool),
	onStep func(row Row, st specs.ArmStep)) (Row, bool) {
	row := Row{FieldInstance: instance, FieldMethod: arm.Method, FieldModel: arm.Model}
	if arm.Samples > 1 {
		row[FieldSample] = arm.Sample
	}
	for _, f := range Required {
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
func (m RowMerger) borrowed(st specs.ArmStep) bool {
	if m.format >= specs.PlanFormatBorrowed {
		return st.Borrowed
	}
	return strings.Contains(st.ID, ".")
}

// merge adds a node's row fragment to a row. A step whose activity replaces the context first resets every context
// field (earlier steps of the method described the contexts it replaced). Fields in Summed (model calls,
// tokens, cost) add up over the arm's nodes; every other field takes the value of the last node that sets it.
// Whether a fragment sets only fields its activity owns is checked where it is made, by the activity (specs.CheckRow):
// fragments that older code recorded also carry nulls for context fields of other activities, which the reset
// sets alike, so they build the same rows.
func (m RowMerger) merge(row Row, activity string, fragment map[string]any) {
	if specs.Catalog[activity].ReplacesContext {
		for _, f := range m.resets {
			row[f] = nil
		}
	}
	// Sorted keys: a deterministic order.
	//workflowcheck:ignore
	for _, k := range slices.Sorted(maps.Keys(fragment)) {
		v := fragment[k]
		if slices.Contains(Summed, k) {
			if sum, ok := AddNumbers(row[k], v); ok {
				row[k] = sum
				continue
			}
		}
		row[k] = v
	}
}

// AddNumbers returns a+b when both are numbers (or a is unset); JSON numbers arrive as float64.
func AddNumbers(a, b any) (float64, bool) {
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
