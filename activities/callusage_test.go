package activities

import (
	"errors"
	"math"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"ctxlab/activities/api"
	"ctxlab/activities/steps"
	"ctxlab/specs"
	"ctxlab/testkit/demorun"
	"ctxlab/testkit/fakeopenai"
)

// usageCause is the CallUsage an error carries as its ErrCallUsage cause.
func usageCause(t *testing.T, err error) api.CallUsage {
	t.Helper()
	for e := err; e != nil; e = errors.Unwrap(e) {
		if app, ok := e.(*temporal.ApplicationError); ok && app.Type() == api.ErrCallUsage {
			var u api.CallUsage
			if err := app.Details(&u); err != nil {
				t.Fatal(err)
			}
			return u
		}
	}
	t.Fatalf("%v carries no call usage", err)
	return api.CallUsage{}
}

// TestActivityErrorCarriesCallUsage: the Temporal error of a failed step whose calls used something has the
// failure's message, type, retryability and a provider wait's details, so the workflows read it as before, and the
// usage as its ErrCallUsage cause; a failure whose calls used nothing has no cause.
func TestActivityErrorCarriesCallUsage(t *testing.T) {
	plain := &steps.Error{Type: "bad_response", Message: "patch: broken answer", Retryable: true}
	var app *temporal.ApplicationError
	if got := activityError(plain); !errors.As(got, &app) || app.Unwrap() != nil {
		t.Errorf("no usage, yet a cause: %v", got)
	}
	var c steps.CallUsage
	c.Carry(map[string]float64{specs.CostUSD.Name: 0.125, specs.ModelCalls.Name: 1})
	got := activityError(steps.WithUsage(plain, c.Failed()))
	if !errors.As(got, &app) || app.Message() != "patch: broken answer" || app.Type() != "bad_response" ||
		app.NonRetryable() {
		t.Errorf("with usage: %v", got)
	}
	if u := usageCause(t, got); u.Spent[specs.CostUSD.Name] != 0.125 {
		t.Errorf("carried %+v", u)
	}
	wait := &steps.Error{Type: api.ErrProviderWait, Message: "patch: wait",
		Wait: &api.ProviderWait{Kind: "rate_limit", Wait: time.Hour}}
	got = activityError(steps.WithUsage(wait, c.Failed()))
	var w api.ProviderWait
	if !errors.As(got, &app) || app.Type() != api.ErrProviderWait || !app.NonRetryable() || app.Details(&w) != nil ||
		w.Wait != time.Hour {
		t.Errorf("a provider wait lost its details: %v (%+v)", got, w)
	}
	usageCause(t, got)
	// The scrubbed text of an error keeps its wait and usage.
	scrubbed := scrubError(steps.WithUsage(wait, c.Failed()))
	if se, ok := scrubbed.(*steps.Error); !ok || se.Wait == nil || se.Usage == nil {
		t.Errorf("scrubbing dropped the wait or the usage: %#v", scrubbed)
	}
}

const paidAgentSpec = `local ctxlab = import 'ctxlab.libsonnet';
ctxlab.experiment({
  name: 'agent_paid',
  dataset: ctxlab.datasets.demo,
  models: [ctxlab.models.openai('gpt-4o-mini', price={ input: 2, output: 10 })],
  methods: [ctxlab.methods.agent({ max_turns: 8 })],
})
`

// TestFailedAgentTurnCountsTheTrajectory: an agent whose third model turn is billed and fails for good fails its
// node; the node's error carries what every turn used (the two answered turns and the billed one), which is what
// the ledger says the node's calls cost, so its rows count the whole trajectory, not nothing.
func TestFailedAgentTurnCountsTheTrajectory(t *testing.T) {
	p := newPaidFixture(t)
	turns := 0
	p.srv.SetFailWhen(func(r fakeopenai.ChatRequest) fakeopenai.Failure {
		if r.Task() != specs.Agent.Task {
			return 0
		}
		if turns++; turns == 3 {
			return fakeopenai.BilledContextLength
		}
		return 0
	})
	plan := compileAgentSpec(t, paidAgentSpec)
	outs := map[string]api.NodeOutput{}
	var agentErr error
	for _, n := range plan.Nodes {
		inputs := map[string]api.NodeOutput{}
		for name, k := range n.Inputs {
			inputs[name] = outs[k]
		}
		in := api.NodeInput{Run: "t", Instance: p.Refs[demorun.Instance], Node: n.Key, Step: n.Steps[0], Params: n.Params,
			Inputs: inputs, Dataset: p.Dataset}
		if n.Activity == "agent" {
			_, agentErr = p.Exec(n.Activity, in)
			break
		}
		outs[n.Key] = p.Must(p.Exec(n.Activity, in))
	}
	if agentErr == nil || turns != 3 {
		t.Fatalf("the agent: %v after %d turns; want the third turn's failure", agentErr, turns)
	}
	u := usageCause(t, agentErr)
	got := map[string]float64{}
	for _, part := range []map[string]float64{u.Spent, u.Answered} {
		for k, v := range part {
			got[k] += v
		}
	}
	var cost float64
	var calls int
	for _, c := range p.Calls() {
		if c.Paid() {
			cost, calls = cost+c.CostUSD, calls+1
		}
	}
	if calls != 3 || cost <= 0 || math.Abs(got[specs.CostUSD.Name]-cost) > 1e-12 ||
		got[specs.ModelCalls.Name] != float64(calls) {
		t.Errorf("the failed agent carries %v; the ledger: %d paid calls, $%v", got, calls, cost)
	}
}
