package workflows

import (
	"go.temporal.io/sdk/workflow"

	"ctxlab/activities/api"
	"ctxlab/specs"
	"ctxlab/store/cas"
)

// AgentName is the registered type name of the Agent child workflow.
const AgentName = "Agent"

// AgentWorkflowID is the ID of the Agent child workflow that runs the agent node of the Issue workflow issueID.
func AgentWorkflowID(issueID, node string) string { return issueID + "/agent/" + node }

// AgentInput is one agent node of an issue: the node's own input, as the Issue workflow would pass its activity.
type AgentInput struct {
	Node    api.NodeInput `json:"node"`
	Queues  Queues        `json:"queues"`
	Retries int           `json:"retries"`
}

// Agent runs one agent node's trajectory turn by turn: a model call on the llm queue, then the tool call it asked
// for on the cpu queue, until the model answers with its edit or max_turns model calls were made; then the node's
// output (the trajectory's reference and its row fields). The Issue workflow starts it for each agent node (see
// agentChange). Each turn is its own activity, memoized by the worker, and the conversation lives in the content
// store: the history carries references only, and a resumed run asks no finished turn again. Its result is the
// node's output, as the agent activity would return it.
//
// A failed turn's error is returned as it is, not wrapped: the failure converter would make a wrapping error an
// application error of its own (type "*fmt.wrapError", its message repeating the turn's), the first one the Issue
// workflow's errors.As finds, hiding the turn's type (spend cap, lost worker) and doubling the rows' message. A
// retryable turn error's message already names the turn ("<step> turn 2 (model): ..."); a permanent one is the
// message the agent activity would have recorded.
func Agent(ctx workflow.Context, in AgentInput) (api.NodeOutput, error) {
	q := in.Queues.withDefaults()
	llmCtx := activityOptions(ctx, q, specs.QueueLLM, in.Retries, 0)
	cpuCtx := activityOptions(ctx, q, specs.QueueCPU, in.Retries, 0)
	maxTurns := agentMaxTurns(in.Node.Params)
	var state cas.Ref
	for turn := 0; turn < maxTurns; turn++ {
		var out api.AgentTurnOutput
		if err := workflow.ExecuteActivity(llmCtx, api.AgentModelTurnName,
			api.AgentTurnInput{Node: in.Node, Turn: turn, State: state}).Get(ctx, &out); err != nil {
			return api.NodeOutput{}, err
		}
		state = out.State
		if out.Done {
			break
		}
		if err := workflow.ExecuteActivity(cpuCtx, api.AgentToolTurnName,
			api.AgentTurnInput{Node: in.Node, Turn: turn, State: state}).Get(ctx, &out); err != nil {
			return api.NodeOutput{}, err
		}
		state = out.State
	}
	var out api.NodeOutput
	if err := workflow.ExecuteActivity(cpuCtx, api.AgentFinishName, api.AgentTurnInput{Node: in.Node, State: state}).
		Get(ctx, &out); err != nil {
		return out, err
	}
	return out, nil
}

// agentMaxTurns reads the node's max_turns (a JSON number once it has crossed Temporal), or the catalog's default.
func agentMaxTurns(params map[string]any) int {
	switch v := params["max_turns"].(type) {
	case float64:
		return int(v)
	case int:
		return v
	}
	return specs.AgentDefaults.MaxTurns
}
