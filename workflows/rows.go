package workflows

import (
	"ctxlab/activities/api"
	"ctxlab/results"
	"ctxlab/specs"
)

// ArmRow is the row an Issue workflow records for an arm of plan whose steps all succeeded, given their node
// outputs (by node key); ok is false when an output is missing. It lets a starter re-derive a row that was lost
// after it was recorded (a torn results.jsonl) from the memoized node outputs, exactly as the workflow builds it.
func ArmRow(instance string, plan specs.Plan, arm specs.Arm, outputs map[string]api.NodeOutput) (row results.Row,
	ok bool) {
	return results.NewRowMerger(plan).ArmRow(instance, arm, func(key string) (map[string]any, bool) {
		out, has := outputs[key]
		return out.Row, has
	}, nil)
}

// IssueWorkflowID is the ID of the Issue workflow of an instance, whose history holds the rows it recorded.
func IssueWorkflowID(run, instance string) string { return issueWorkflowID(run, instance) }

// newRowMerger is the Issue workflow's row builder: results' (the starter's repair and the grade command use it too).
func newRowMerger(plan specs.Plan) results.RowMerger { return results.NewRowMerger(plan) }
