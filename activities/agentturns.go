package activities

import (
	"context"
	"fmt"
	"maps"

	"ctxlab/activities/api"
	"ctxlab/activities/steps"
	"ctxlab/specs"
	"ctxlab/store/cas"
)

// declaringActivity is the catalog activity whose params and row fields a node activity is checked against: an
// agent turn runs on the agent node's input, so it is held to the agent's declaration.
func declaringActivity(name string) string {
	switch name {
	case api.AgentModelTurnName, api.AgentToolTurnName, api.AgentFinishName:
		return specs.Agent.Name
	}
	return name
}

// AgentTurnFunctions are the turn activities of the Agent child workflow, for registration with a worker.
func (a *Activities) AgentTurnFunctions() map[string]any {
	return map[string]any{
		api.AgentModelTurnName: a.AgentModelTurn,
		api.AgentToolTurnName:  a.AgentToolTurn,
		api.AgentFinishName:    a.AgentFinish,
	}
}

// turnInput is the node input of one turn: its own memo key and label, the agent node's params and inputs, and the
// trajectory it continues as the input "trajectory" (so an audit lists the reference turn by turn).
func turnInput(in api.AgentTurnInput, part string) api.NodeInput {
	n := in.Node
	n.Node = fmt.Sprintf("%s.t%02d.%s", in.Node.Node, in.Turn, part)
	n.Step = fmt.Sprintf("%s turn %d (%s)", in.Node.Step, in.Turn, part)
	if in.State != "" {
		n.Inputs = maps.Clone(in.Node.Inputs)
		if n.Inputs == nil {
			n.Inputs = map[string]api.NodeOutput{}
		}
		n.Inputs["trajectory"] = api.NodeOutput{Ref: in.State}
	}
	return n
}

// turnOutput reads whether the trajectory a turn stored has ended.
func (a *Activities) turnOutput(ctx context.Context, in api.AgentTurnInput, out api.NodeOutput, err error) (api.AgentTurnOutput, error) {
	if err != nil {
		return api.AgentTurnOutput{}, err
	}
	store, err := a.Store(in.Node.Run)
	if err != nil {
		return api.AgentTurnOutput{}, err
	}
	var t steps.AgentTrajectory
	if err := cas.GetJSON(ctx, store, out.Ref, &t); err != nil {
		return api.AgentTurnOutput{}, fmt.Errorf("instance %s: %s turn %d: agent trajectory: %w", in.Node.Instance.ID,
			in.Node.Step, in.Turn, err)
	}
	return api.AgentTurnOutput{State: out.Ref, Done: t.Done}, nil
}

// AgentModelTurn is the activity of one model turn (steps.AgentModelTurn), run as a node of its own.
func (a *Activities) AgentModelTurn(ctx context.Context, in api.AgentTurnInput) (api.AgentTurnOutput, error) {
	out, err := a.turn(ctx, in, "model", api.AgentModelTurnName, steps.AgentModelTurn)
	return out, activityError(err)
}

// AgentToolTurn is the activity of one tool turn (steps.AgentToolTurn), run as a node of its own.
func (a *Activities) AgentToolTurn(ctx context.Context, in api.AgentTurnInput) (api.AgentTurnOutput, error) {
	out, err := a.turn(ctx, in, "tool", api.AgentToolTurnName, steps.AgentToolTurn)
	return out, activityError(err)
}

// AgentFinish is the activity that gives the agent node its output (steps.AgentFinish).
func (a *Activities) AgentFinish(ctx context.Context, in api.AgentTurnInput) (api.NodeOutput, error) {
	out, err := a.finish(ctx, in)
	return out, activityError(err)
}

// turn runs one turn of an agent as the node named part of it (its own memo and attempt log), its failure a
// steps.Error.
func (a *Activities) turn(ctx context.Context, in api.AgentTurnInput, part, name string,
	run func(context.Context, steps.Env, *steps.Attempt, api.AgentTurnInput) (api.NodeOutput, error)) (api.AgentTurnOutput, error) {
	out, err := a.attempt(ctx, turnInput(in, part), name,
		func(ctx context.Context, env steps.Env, att *steps.Attempt) (api.NodeOutput, error) {
			return run(ctx, env, att, in)
		})
	return a.turnOutput(ctx, in, out, err)
}

func (a *Activities) finish(ctx context.Context, in api.AgentTurnInput) (api.NodeOutput, error) {
	store, err := a.Store(in.Node.Run)
	if err != nil {
		return api.NodeOutput{}, err
	}
	return steps.AgentFinish(ctx, store, in)
}

// agentTurns runs an agent's turns for the agent node run as one activity (its step loops over them): each turn is
// a node of its own, as the turn activities run it, and its failure stays a steps.Error, which the agent node's
// adapter turns into Temporal's once.
type agentTurns struct{ a *Activities }

func (t agentTurns) AgentModelTurn(ctx context.Context, in api.AgentTurnInput) (api.AgentTurnOutput, error) {
	return t.a.turn(ctx, in, "model", api.AgentModelTurnName, steps.AgentModelTurn)
}

func (t agentTurns) AgentToolTurn(ctx context.Context, in api.AgentTurnInput) (api.AgentTurnOutput, error) {
	return t.a.turn(ctx, in, "tool", api.AgentToolTurnName, steps.AgentToolTurn)
}

func (t agentTurns) AgentFinish(ctx context.Context, in api.AgentTurnInput) (api.NodeOutput, error) {
	return t.a.finish(ctx, in)
}
