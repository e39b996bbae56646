package activities

import (
	"fmt"

	"ctxlab/activities/api"
	"ctxlab/activities/steps"
	"ctxlab/specs"
)

// ErrUndeclaredField is the error type of a node whose row fragment sets a field its activity does not declare
// (specs.ActivityInfo.Fields) or sets one with a value of another kind: a bug in the activity, which retrying
// cannot fix.
const ErrUndeclaredField = "UndeclaredRowField"

// checkRowFields fails a node whose output row sets a field its activity does not own. Failing, rather than
// dropping the field, makes a forgotten declaration show on the first run of the step instead of a column that is
// silently missing from every row.
func checkRowFields(activity string, in api.NodeInput, out api.NodeOutput) error {
	if err := specs.CheckRow(activity, in.Step, out.Row); err != nil {
		return steps.Permanent(ErrUndeclaredField, fmt.Sprintf("instance %s: %v", in.Instance.ID, err))
	}
	return nil
}
