package workflows

import (
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// SweepName and IssueName are the registered workflow type names.
const (
	SweepName = "Sweep"
	IssueName = "Issue"
)

// Register adds the workflows to a worker.
func Register(r worker.WorkflowRegistry) {
	r.RegisterWorkflowWithOptions(Sweep, workflow.RegisterOptions{Name: SweepName})
	r.RegisterWorkflowWithOptions(Issue, workflow.RegisterOptions{Name: IssueName})
	r.RegisterWorkflowWithOptions(Handshake, workflow.RegisterOptions{Name: HandshakeName})
	r.RegisterWorkflowWithOptions(Agent, workflow.RegisterOptions{Name: AgentName})
	r.RegisterWorkflowWithOptions(Budget, workflow.RegisterOptions{Name: BudgetName})
}
