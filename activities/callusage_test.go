package activities

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"ctxlab/activities/api"
	"ctxlab/specs"
	"ctxlab/testkit/fakeopenai"
)

func usageRowOf(calls, prompt int, cost float64) map[string]any {
	row := map[string]any{}
	specs.ModelCalls.Set(row, calls)
	specs.PromptTokens.Set(row, prompt)
	specs.CostUSD.Set(row, cost)
	return row
}

// usageCause is the CallUsage an error carries as its ErrCallUsage cause.
func usageCause(t *testing.T, err error) api.CallUsage {
	t.Helper()
	for e := err; e != nil; e = errors.Unwrap(e) {
		if app, ok := e.(*temporal.ApplicationError); ok && app.Type() == ErrCallUsage {
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

// TestCallUsageParts: an answer counts in the failed attempt's Answered (a later attempt gets it from the response
// cache and counts it itself), a billed call without an answer in Spent with the earlier attempts', and with the
// cache off an answer is spent too (a later attempt pays for it again). A successful attempt's row gains only what
// bought no answer, its int fields staying ints.
func TestCallUsageParts(t *testing.T) {
	var c callUsage
	c.carried = map[string]float64{specs.CostUSD.Name: 0.5, specs.ModelCalls.Name: 1}
	c.answer(usageRowOf(1, 100, 0.25), true, false)
	c.bill(usageRowOf(1, 40, 0.125))
	u := c.failed()
	if u.Spent[specs.CostUSD.Name] != 0.625 || u.Spent[specs.ModelCalls.Name] != 2 ||
		u.Answered[specs.CostUSD.Name] != 0.25 || u.Answered[specs.PromptTokens.Name] != 100 {
		t.Errorf("failed attempt's usage %+v", u)
	}
	if s := c.spent(); s[specs.CostUSD.Name] != 0.625 {
		t.Errorf("carried to the next attempt: %v, want the answer left out", s)
	}
	row := c.addSpentTo(usageRowOf(1, 100, 0.25))
	if calls, ok := row[specs.ModelCalls.Name].(int); !ok || calls != 3 || row[specs.CostUSD.Name] != 0.875 {
		t.Errorf("successful attempt's row %v", row)
	}

	var nc callUsage
	nc.answer(usageRowOf(1, 100, 0.25), true, true)
	if s := nc.spent(); s[specs.CostUSD.Name] != 0.25 {
		t.Errorf("with the cache off, an answer carried %v, want it spent", s)
	}
	if u := nc.failed(); u.Spent != nil || u.Answered[specs.CostUSD.Name] != 0.25 {
		t.Errorf("with the cache off, the failed attempt's usage %+v counts its answer twice", u)
	}
}

// TestWithCallUsageKeepsTheError: the error that carries the usage has the failure's message, type, retryability
// and a provider wait's details, so the workflows read it as before; an attempt whose calls used nothing keeps its
// error as it was.
func TestWithCallUsageKeepsTheError(t *testing.T) {
	ctx := context.Background()
	var c callUsage
	plain := temporal.NewApplicationError("patch: broken answer", "bad_response")
	if got := c.withCallUsage(ctx, plain); got != plain {
		t.Errorf("no usage, yet the error changed: %v", got)
	}
	c.bill(usageRowOf(1, 40, 0.125))
	got := c.withCallUsage(ctx, plain)
	var app *temporal.ApplicationError
	if !errors.As(got, &app) || app.Message() != "patch: broken answer" || app.Type() != "bad_response" || app.NonRetryable() {
		t.Errorf("with usage: %v", got)
	}
	if u := usageCause(t, got); u.Spent[specs.CostUSD.Name] != 0.125 {
		t.Errorf("carried %+v", u)
	}
	wait := temporal.NewNonRetryableApplicationError("patch: wait", ErrProviderWait, nil,
		ProviderWait{Kind: "rate_limit", Wait: time.Hour})
	got = c.withCallUsage(ctx, wait)
	var w ProviderWait
	if !errors.As(got, &app) || app.Type() != ErrProviderWait || !app.NonRetryable() || app.Details(&w) != nil ||
		w.Wait != time.Hour {
		t.Errorf("a provider wait lost its details: %v (%+v)", got, w)
	}
	usageCause(t, got)
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
	outs := map[string]NodeOutput{}
	var agentErr error
	for _, n := range plan.Nodes {
		inputs := map[string]NodeOutput{}
		for name, k := range n.Inputs {
			inputs[name] = outs[k]
		}
		in := NodeInput{Run: "t", Instance: p.refs[inst], Node: n.Key, Step: n.Steps[0], Params: n.Params,
			Inputs: inputs, Dataset: p.dataset}
		if n.Activity == "agent" {
			_, agentErr = p.node2(n.Activity, in)
			break
		}
		outs[n.Key] = p.must(p.node2(n.Activity, in))
	}
	if agentErr == nil || turns != 3 {
		t.Fatalf("the agent: %v after %d turns; want the third turn's failure", agentErr, turns)
	}
	u := usageCause(t, agentErr)
	got := sumUsage(u.Spent, u.Answered)
	var cost float64
	var calls int
	for _, c := range p.calls(t) {
		if c.Paid() {
			cost, calls = cost+c.CostUSD, calls+1
		}
	}
	if calls != 3 || cost <= 0 || math.Abs(got[specs.CostUSD.Name]-cost) > 1e-12 ||
		got[specs.ModelCalls.Name] != float64(calls) {
		t.Errorf("the failed agent carries %v; the ledger: %d paid calls, $%v", got, calls, cost)
	}
}
