package activities

import (
	"context"
	"fmt"
	"maps"

	"ctxlab/activities/steps"
	"ctxlab/specs"
	"ctxlab/store/cas"
)

// Names of the agent's turn activities: the Agent child workflow (workflows/agent.go), which the Issue workflow
// starts for each agent node, runs them one by one. The agent node activity (Agent) runs the same functions in a
// loop: only Issue workflows started before that change (workflows' agentChange) still run it, on replay.
const (
	AgentModelTurnName = "agent_model_turn" // llm queue: one model call
	AgentToolTurnName  = "agent_tool_turn"  // cpu queue: one tool call
	AgentFinishName    = "agent_finish"     // cpu queue: the trajectory's row fields
)

// The turn activities' input and output are the agent steps' (package steps).
type (
	AgentTurnInput  = steps.AgentTurnInput
	AgentTurnOutput = steps.AgentTurnOutput
)

// declaringActivity is the catalog activity whose params and row fields a node activity is checked against: an
// agent turn runs on the agent node's input, so it is held to the agent's declaration.
func declaringActivity(name string) string {
	switch name {
	case AgentModelTurnName, AgentToolTurnName, AgentFinishName:
		return specs.Agent.Name
	}
	return name
}

// AgentTurnFunctions are the turn activities of the Agent child workflow, for registration with a worker.
func (a *Activities) AgentTurnFunctions() map[string]any {
	return map[string]any{
		AgentModelTurnName: a.AgentModelTurn,
		AgentToolTurnName:  a.AgentToolTurn,
		AgentFinishName:    a.AgentFinish,
	}
}

// turnInput is the node input of one turn: its own memo key and label, the agent node's params and inputs, and the
// trajectory it continues as the input "trajectory" (so an audit lists the reference turn by turn).
func turnInput(in AgentTurnInput, part string) NodeInput {
	n := in.Node
	n.Node = fmt.Sprintf("%s.t%02d.%s", in.Node.Node, in.Turn, part)
	n.Step = fmt.Sprintf("%s turn %d (%s)", in.Node.Step, in.Turn, part)
	if in.State != "" {
		n.Inputs = maps.Clone(in.Node.Inputs)
		if n.Inputs == nil {
			n.Inputs = map[string]NodeOutput{}
		}
		n.Inputs["trajectory"] = NodeOutput{Ref: in.State}
	}
	return n
}

// turnOutput reads whether the trajectory a turn stored has ended.
func (a *Activities) turnOutput(ctx context.Context, in AgentTurnInput, out NodeOutput, err error) (AgentTurnOutput, error) {
	if err != nil {
		return AgentTurnOutput{}, err
	}
	store, err := a.Store(in.Node.Run)
	if err != nil {
		return AgentTurnOutput{}, err
	}
	var t steps.AgentTrajectory
	if err := cas.GetJSON(ctx, store, out.Ref, &t); err != nil {
		return AgentTurnOutput{}, fmt.Errorf("instance %s: %s turn %d: agent trajectory: %w", in.Node.Instance.ID,
			in.Node.Step, in.Turn, err)
	}
	return AgentTurnOutput{State: out.Ref, Done: t.Done}, nil
}

// AgentModelTurn is the activity of one model turn (steps.AgentModelTurn), run as a node of its own.
func (a *Activities) AgentModelTurn(ctx context.Context, in AgentTurnInput) (AgentTurnOutput, error) {
	out, err := a.turn(ctx, in, "model", AgentModelTurnName, steps.AgentModelTurn)
	return out, activityError(err)
}

// AgentToolTurn is the activity of one tool turn (steps.AgentToolTurn), run as a node of its own.
func (a *Activities) AgentToolTurn(ctx context.Context, in AgentTurnInput) (AgentTurnOutput, error) {
	out, err := a.turn(ctx, in, "tool", AgentToolTurnName, steps.AgentToolTurn)
	return out, activityError(err)
}

// AgentFinish is the activity that gives the agent node its output (steps.AgentFinish).
func (a *Activities) AgentFinish(ctx context.Context, in AgentTurnInput) (NodeOutput, error) {
	out, err := a.finish(ctx, in)
	return out, activityError(err)
}

// turn runs one turn of an agent as the node named part of it (its own memo and attempt log), its failure a
// steps.Error.
func (a *Activities) turn(ctx context.Context, in AgentTurnInput, part, name string,
	run func(context.Context, steps.Env, *steps.Attempt, AgentTurnInput) (NodeOutput, error)) (AgentTurnOutput, error) {
	out, err := a.attempt(ctx, turnInput(in, part), name,
		func(ctx context.Context, env steps.Env, att *steps.Attempt) (NodeOutput, error) {
			return run(ctx, env, att, in)
		})
	return a.turnOutput(ctx, in, out, err)
}

func (a *Activities) finish(ctx context.Context, in AgentTurnInput) (NodeOutput, error) {
	store, err := a.Store(in.Node.Run)
	if err != nil {
		return NodeOutput{}, err
	}
	return steps.AgentFinish(ctx, store, in)
}

// agentTurns runs an agent's turns for the agent node run as one activity (its step loops over them): each turn is
// a node of its own, as the turn activities run it, and its failure stays a steps.Error, which the agent node's
// adapter turns into Temporal's once.
type agentTurns struct{ a *Activities }

func (t agentTurns) AgentModelTurn(ctx context.Context, in AgentTurnInput) (AgentTurnOutput, error) {
	return t.a.turn(ctx, in, "model", AgentModelTurnName, steps.AgentModelTurn)
}

func (t agentTurns) AgentToolTurn(ctx context.Context, in AgentTurnInput) (AgentTurnOutput, error) {
	return t.a.turn(ctx, in, "tool", AgentToolTurnName, steps.AgentToolTurn)
}

func (t agentTurns) AgentFinish(ctx context.Context, in AgentTurnInput) (NodeOutput, error) {
	return t.a.finish(ctx, in)
}
