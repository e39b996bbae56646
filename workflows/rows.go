package workflows

import (
	"ctxlab/activities/api"
	"ctxlab/results"
	"ctxlab/specs"
)

// ArmRow is the row an Issue workflow records for an arm whose steps all succeeded, given their node outputs (by
// node key); ok is false when an output is missing. It lets a starter re-derive a row that was lost after it was
// recorded (a torn results.jsonl) from the memoized node outputs, exactly as the workflow built it.
func ArmRow(instance string, arm specs.Arm, outputs map[string]api.NodeOutput) (row results.Row, ok bool) {
	row = results.Row{results.FieldInstance: instance, results.FieldMethod: arm.Method, results.FieldModel: arm.Model}
	for _, f := range results.Required {
		if _, set := row[f]; !set {
			row[f] = nil
		}
	}
	merged := map[string]bool{}
	for _, s := range arm.Steps {
		out, has := outputs[s.Key]
		if !has {
			return nil, false
		}
		if !merged[s.Key] && !borrowed(s.ID) {
			merged[s.Key] = true
			mergeRow(row, out.Row)
		}
	}
	return row, true
}

// IssueWorkflowID is the ID of the Issue workflow of an instance, whose history holds the rows it recorded.
func IssueWorkflowID(run, instance string) string { return issueWorkflowID(run, instance) }
