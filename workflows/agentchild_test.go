package workflows

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"ctxlab/activities/api"
	"ctxlab/results"
	"ctxlab/specs"
	"ctxlab/store/cas"
)

// agentMethod is an experiment with the agent method's steps (the library's agent_method) beside a method without
// an agent, whose row no agent failure touches.
func agentMethod() *specs.Experiment {
	co := map[string]string{"checkout": "checkout"}
	return &specs.Experiment{
		Name: "t", Tokenizer: "o200k_base",
		Models: []specs.Model{{Name: "offline", Provider: "offline"}},
		Methods: []specs.Method{{Name: "ag", Steps: []specs.Step{
			{ID: "checkout", Activity: "checkout"},
			{ID: "agent", Activity: "agent", Params: map[string]any{"max_turns": 3}, Inputs: co},
			{ID: "context", Activity: "agent_context", Inputs: map[string]string{"checkout": "checkout", "agent": "agent"}},
			{ID: "patch", Activity: "agent_patch",
				Inputs: map[string]string{"checkout": "checkout", "agent": "agent", "context": "context"}},
			{ID: "grade", Activity: "grade", Inputs: map[string]string{"checkout": "checkout", "patch": "patch"}},
		}}, {Name: "plain", Steps: []specs.Step{
			{ID: "checkout", Activity: "checkout"},
			{ID: "context", Activity: "no_source", Inputs: co},
			{ID: "patch", Activity: "patch", Params: map[string]any{"format": "diff"},
				Inputs: map[string]string{"checkout": "checkout", "context": "context"}},
			{ID: "grade", Activity: "grade", Inputs: map[string]string{"checkout": "checkout", "patch": "patch"}},
		}}},
	}
}

// fakeTurns stands in for the agent's turn activities: the model answers on its second turn (turn 1), after one
// tool call; modelErr, when set, makes the model turn fail on a call (numbered from 1 per turn).
type fakeTurns struct {
	mu       sync.Mutex
	model    map[int]int // turn -> calls
	tools    int
	finishes int
	modelErr func(turn, call int) error
}

func (f *fakeTurns) register(env *testsuite.TestWorkflowEnvironment) {
	f.model = map[int]int{}
	env.RegisterActivityWithOptions(func(_ context.Context, in api.AgentTurnInput) (api.AgentTurnOutput, error) {
		f.mu.Lock()
		f.model[in.Turn]++
		call := f.model[in.Turn]
		f.mu.Unlock()
		if f.modelErr != nil {
			if err := f.modelErr(in.Turn, call); err != nil {
				return api.AgentTurnOutput{}, err
			}
		}
		return api.AgentTurnOutput{State: cas.Ref(fmt.Sprintf("m%d", in.Turn)), Done: in.Turn == 1}, nil
	}, activity.RegisterOptions{Name: api.AgentModelTurnName})
	env.RegisterActivityWithOptions(func(_ context.Context, in api.AgentTurnInput) (api.AgentTurnOutput, error) {
		f.mu.Lock()
		f.tools++
		f.mu.Unlock()
		return api.AgentTurnOutput{State: cas.Ref(fmt.Sprintf("t%d", in.Turn))}, nil
	}, activity.RegisterOptions{Name: api.AgentToolTurnName})
	env.RegisterActivityWithOptions(func(_ context.Context, in api.AgentTurnInput) (api.NodeOutput, error) {
		f.mu.Lock()
		f.finishes++
		f.mu.Unlock()
		return api.NodeOutput{Ref: in.State, Row: map[string]any{"agent_turns": 2}}, nil
	}, activity.RegisterOptions{Name: api.AgentFinishName})
}

// agentIssue is the outcome of an Issue run with the agent method.
type agentIssue struct {
	res      IssueResult
	rows     map[string]results.Row // by method
	nodes    *fakeNodes
	children []*workflow.Info // Agent child workflows started
	agentKey string           // the agent node's key
	took     time.Duration
}

// runAgentIssue runs an Issue of agentMethod whose agent turns are f's, as the workflow with ID issue/t/i-1.
func runAgentIssue(t *testing.T, f *fakeTurns, setup func(*testsuite.TestWorkflowEnvironment)) agentIssue {
	t.Helper()
	plan, err := specs.BuildPlan(agentMethod())
	if err != nil {
		t.Fatal(err)
	}
	out := agentIssue{rows: map[string]results.Row{}, nodes: &fakeNodes{calls: map[string]int{}}}
	for _, n := range plan.Nodes {
		if n.Activity == specs.Agent.Name {
			out.agentKey = n.Key
		}
	}
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(Agent, workflow.RegisterOptions{Name: AgentName})
	out.nodes.register(env, plan)
	f.register(env)
	registerRowSink(env, func(_ context.Context, in api.RecordInput) (int, error) {
		for _, r := range in.Rows {
			out.rows[r.String(results.FieldMethod)] = r
		}
		return len(in.Rows), nil
	})
	env.SetOnChildWorkflowStartedListener(func(info *workflow.Info, _ workflow.Context, _ converter.EncodedValues) {
		out.children = append(out.children, info)
	})
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: "issue/t/i-1"})
	if setup != nil {
		setup(env)
	}
	start := env.Now()
	env.ExecuteWorkflow(Issue, IssueInput{Run: "t", Instance: api.InstanceRef{ID: "i-1"}, Retries: 2})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if err := env.GetWorkflowResult(&out.res); err != nil {
		t.Fatal(err)
	}
	out.took = env.Now().Sub(start)
	if len(out.rows) != 2 {
		t.Fatalf("rows %v, want one per method", out.rows)
	}
	if out.rows["plain"][results.FieldError] != nil {
		t.Errorf("the method without an agent failed: %v", out.rows["plain"][results.FieldError])
	}
	return out
}

// TestIssueRunsAgentAsChildWorkflow: the agent node runs as the Agent child workflow, with the ID the issue's ID,
// /agent/ and the node's key, on the workflow queue, its turns as activities; the agent activity does not run, and
// the child's output reaches the node's row and the nodes that read it.
func TestIssueRunsAgentAsChildWorkflow(t *testing.T) {
	f := &fakeTurns{}
	got := runAgentIssue(t, f, nil)
	if len(got.children) != 1 {
		t.Fatalf("%d Agent child workflows started, want 1", len(got.children))
	}
	c := got.children[0]
	if want := "issue/t/i-1/agent/" + got.agentKey; c.WorkflowExecution.ID != want || c.TaskQueueName != DefaultQueues.Workflow ||
		c.WorkflowType.Name != AgentName {
		t.Errorf("child %s %s on %s, want %s %s on %s", c.WorkflowType.Name, c.WorkflowExecution.ID, c.TaskQueueName,
			AgentName, want, DefaultQueues.Workflow)
	}
	if got.nodes.calls[specs.Agent.Name] != 0 {
		t.Errorf("the agent activity ran %d times", got.nodes.calls[specs.Agent.Name])
	}
	if f.model[0] != 1 || f.model[1] != 1 || f.tools != 1 || f.finishes != 1 {
		t.Errorf("model turns %v, tool turns %d, finishes %d; want 2 model turns, 1 tool turn, 1 finish", f.model,
			f.tools, f.finishes)
	}
	row := got.rows["ag"]
	if row[results.FieldError] != nil || row["agent_turns"] != float64(2) || row["agent_patch_ran"] != true ||
		row["grade_ran"] != true {
		t.Errorf("agent row %v", row)
	}
}

// TestIssueRunsOldAgentAsActivity: a history from before agentChange runs the agent node as the agent activity.
func TestIssueRunsOldAgentAsActivity(t *testing.T) {
	f := &fakeTurns{}
	got := runAgentIssue(t, f, func(env *testsuite.TestWorkflowEnvironment) {
		env.OnGetVersion(agentChange, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	})
	if len(got.children) != 0 || got.nodes.calls[specs.Agent.Name] != 1 || len(f.model) != 0 {
		t.Errorf("%d children, agent activity ran %d times, model turns %v; want the activity alone",
			len(got.children), got.nodes.calls[specs.Agent.Name], f.model)
	}
	if row := got.rows["ag"]; row[results.FieldError] != nil || row["agent_ran"] != true {
		t.Errorf("agent row %v", row)
	}
}

// TestAgentTurnAtSpendCapWaits: a turn stopped by the spend cap makes the agent node wait for the cap, as the
// agent activity did, instead of failing its rows; once under the cap the child runs again (its finished turns
// are memo reads in the real activities) and the row has no error.
func TestAgentTurnAtSpendCapWaits(t *testing.T) {
	f := &fakeTurns{modelErr: func(turn, call int) error {
		if turn == 1 && call <= 3 {
			return temporal.NewNonRetryableApplicationError("ag.agent turn 1 (model): spend cap reached",
				api.ErrSpendLimit, nil)
		}
		return nil
	}}
	got := runAgentIssue(t, f, nil)
	if row := got.rows["ag"]; row[results.FieldError] != nil || got.res.FailedSteps != 0 {
		t.Errorf("agent row failed at the spend cap: %v (%d failed steps)", row[results.FieldError], got.res.FailedSteps)
	}
	if f.model[1] != 4 || len(got.children) != 4 {
		t.Errorf("turn 1 asked %d times in %d children, want 4 (3 at the cap, then once more)", f.model[1],
			len(got.children))
	}
	// spendWait: 10 s, 20 s, 40 s.
	if got.took < 70*time.Second {
		t.Errorf("the issue took %v: it did not wait for the cap", got.took)
	}
}

// TestAgentTurnFailureFailsRows: a turn failing permanently fails the agent node; its rows carry the turn's
// message once (not wrapped in the child's and the activity's error texts) and its kind, and the nodes after the
// agent do not run.
func TestAgentTurnFailureFailsRows(t *testing.T) {
	const msg = "model call failed (context_length): prompt too long"
	f := &fakeTurns{modelErr: func(turn, _ int) error {
		if turn == 1 {
			return temporal.NewNonRetryableApplicationError(msg, "context_length", nil)
		}
		return nil
	}}
	got := runAgentIssue(t, f, nil)
	row := got.rows["ag"]
	if want := "step agent: " + msg; row[results.FieldError] != want {
		t.Errorf("agent row's error %q, want %q", row[results.FieldError], want)
	}
	if row[results.FieldErrorKind] != "context_length" || got.res.FailedSteps != 1 {
		t.Errorf("error kind %v, %d failed steps", row[results.FieldErrorKind], got.res.FailedSteps)
	}
	if f.model[1] != 1 || len(got.children) != 1 || f.finishes != 0 || got.nodes.calls["agent_patch"] != 0 {
		t.Errorf("turn 1 asked %d times in %d children, %d finishes, agent_patch ran %d times", f.model[1],
			len(got.children), f.finishes, got.nodes.calls["agent_patch"])
	}
}

// TestAgentTurnRateLimitWaits: a turn answered with a long Retry-After waits as long as the endpoint asked, then the
// node runs again and its row has no error.
func TestAgentTurnRateLimitWaits(t *testing.T) {
	f := &fakeTurns{modelErr: func(turn, call int) error {
		if turn == 0 && call == 1 {
			return temporal.NewNonRetryableApplicationError("ag.agent turn 0 (model): model call failed (rate_limit, HTTP 429)",
				api.ErrProviderWait, nil, api.ProviderWait{Kind: "rate_limit", Wait: time.Hour})
		}
		return nil
	}}
	got := runAgentIssue(t, f, nil)
	if row := got.rows["ag"]; row[results.FieldError] != nil {
		t.Errorf("agent row failed on a rate limit: %v", row[results.FieldError])
	}
	if f.model[0] != 2 || len(got.children) != 2 {
		t.Errorf("turn 0 asked %d times in %d children, want twice", f.model[0], len(got.children))
	}
	if got.took < time.Hour {
		t.Errorf("the issue took %v: it did not wait the hour the endpoint asked for", got.took)
	}
}

// TestAgentTurnLostWorkerRunsAgain: a turn whose every attempt lost its worker gets the node a fresh round, as
// the agent activity's would, instead of failing the rows.
func TestAgentTurnLostWorkerRunsAgain(t *testing.T) {
	f := &fakeTurns{modelErr: func(turn, call int) error {
		if turn == 1 && call <= 2 { // both attempts (Retries 2) of the first round
			return temporal.NewApplicationError("ag.agent turn 1 (model): worker stopped while the step ran",
				api.ErrWorkerStopped)
		}
		return nil
	}}
	got := runAgentIssue(t, f, nil)
	if row := got.rows["ag"]; row[results.FieldError] != nil {
		t.Errorf("agent row failed on lost workers: %v", row[results.FieldError])
	}
	if f.model[1] != 3 || len(got.children) != 2 {
		t.Errorf("turn 1 asked %d times in %d children, want 3 in 2", f.model[1], len(got.children))
	}
	if got.took > time.Minute {
		t.Errorf("the issue took %v: a lost worker was waited on as the endpoint's failure", got.took)
	}
}

// TestAgentErrorsSaidOnce: the rows' message of a retryable turn error is the turn activity's, not repeated.
func TestAgentErrorsSaidOnce(t *testing.T) {
	const msg = "ag.agent turn 0 (model): reading the trajectory: no such object"
	f := &fakeTurns{modelErr: func(turn, _ int) error {
		if turn == 0 {
			return temporal.NewApplicationError(msg, "Test")
		}
		return nil
	}}
	got := runAgentIssue(t, f, nil)
	e, _ := got.rows["ag"][results.FieldError].(string)
	if e != "step agent: "+msg || strings.Count(e, "no such object") != 1 {
		t.Errorf("agent row's error %q, want the turn's message once", e)
	}
}
