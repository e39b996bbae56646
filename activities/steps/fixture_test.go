package steps

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/rs/zerolog"

	"ctxlab/activities/api"
	"ctxlab/activities/limiter"
	"ctxlab/testkit/demorun"
)

func TestMain(m *testing.M) {
	if job := os.Getenv(rankerChildEnv); job != "" {
		os.Exit(rankerChild(job))
	}
	os.Exit(demorun.Main(m))
}

// newFixture is the demo's run folder (demorun) whose nodes run their kind's step directly, as package activities'
// adapter does without Temporal (and without its memo, attempt log and checks), with a local budget and the Env
// changes opts make (a provider of the test's).
func newFixture(t *testing.T, opts ...func(*Env)) *demorun.Fixture {
	t.Helper()
	f, _ := demorun.New(t)
	f.Exec = func(kind string, in api.NodeInput) (api.NodeOutput, error) {
		env := Env{Node: in, Store: f.Store, RunDir: f.RunDir, Log: zerolog.Nop(),
			Models: Models{Budget: localBudget(limiter.Limits{})}}
		for _, opt := range opts {
			opt(&env)
		}
		out, err := Run(context.Background(), kind, env, &Attempt{})
		if err != nil {
			return out, err
		}
		return delivered(out)
	}
	return f
}

// delivered is a node's output as the workflow receives it, through JSON: a row's numbers are float64s, its lists
// []any.
func delivered(out api.NodeOutput) (api.NodeOutput, error) {
	var back api.NodeOutput
	b, err := json.Marshal(out)
	if err == nil {
		err = json.Unmarshal(b, &back)
	}
	return back, err
}

// localBudget is a run's budget in this process, as a worker's purse over the budget workflow is: a ledger
// (limiter.Local) behind a purse, with limits set as the starter sets them.
func localBudget(lim limiter.Limits) Budget {
	var l limiter.Local
	l.SetLimits(lim)
	return purseBudget{limiter.NewPurse(&l, "test")}
}

type purseBudget struct{ p *limiter.Purse }

func (b purseBudget) Admit(ctx context.Context, provider string, worst func() float64) (func(float64, bool), error) {
	return b.p.Admit(ctx, limiter.Attempt{Activity: "test"}, provider, worst)
}
