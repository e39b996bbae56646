package buildid

import (
	"strings"
	"testing"

	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
)

// TestSetNamesTheBinary: after Set, the SDK reports this package's ID as the binary checksum instead of hashing the
// executable (which it does the first time it needs one when none was set).
func TestSetNamesTheBinary(t *testing.T) {
	id := ID()
	if !strings.HasPrefix(id, "ctxlab") || id != ID() {
		t.Fatalf("ID() = %q, then %q; want a stable ctxlab identifier", id, ID())
	}
	Set()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.ExecuteWorkflow(func(ctx workflow.Context) (string, error) {
		return workflow.GetInfo(ctx).GetBinaryChecksum(), nil
	})
	var got string
	if err := env.GetWorkflowResult(&got); err != nil {
		t.Fatal(err)
	}
	if got != id {
		t.Errorf("the SDK's binary checksum is %q, want %q", got, id)
	}
}
