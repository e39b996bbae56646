package sweepclient

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/client"

	"ctxlab/activities"
	"ctxlab/activities/api"
	"ctxlab/activities/limiter"
	"ctxlab/internal/buildid"
	"ctxlab/specs"
	"ctxlab/starter/embedded"
	"ctxlab/store/objects"
	"ctxlab/wiring"
	"ctxlab/workflows"
)

// TestHandshakeAsksTheBudget: the handshake asks each llm worker what its paid calls will be held to, which the
// worker learns from the run's budget workflow then and there. With the limits this starter set, nothing differs;
// when another starter of the run set other limits since, the worker says so and is named. An llm worker polling
// while no workflow worker runs the budget is not asked (its calls wait for one, as the sweep's workflows do), so it
// is no reason to refuse.
func TestHandshakeAsksTheBudget(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	c := embeddedClient(ctx, t, dir)
	runs, run := filepath.Join(dir, "runs"), "paid"
	runDir := filepath.Join(runs, run)
	objs := objects.Dir{Root: runDir}
	q := workflows.DefaultQueues
	set := limiter.Limits{SpendUSD: 0.5, Providers: map[string]specs.ProviderLimit{"openai": {InFlight: 4}}}
	if err := SetBudget(ctx, c, run, runDir, q.Workflow, set); err != nil {
		t.Fatal(err)
	}
	shake := func(want limiter.Limits) HandshakeResult {
		t.Helper()
		res, err := Handshake(ctx, c, objs, run, q, specs.QueueLimits{}, &want)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	stopLLM, err := wiring.Start(c, activities.New(runs, zerolog.Nop()), wiring.Options{Kinds: []string{specs.QueueLLM}})
	if err != nil {
		t.Fatal(err)
	}
	defer stopLLM()
	waitForPollers(ctx, t, c, q, 1)
	started := time.Now()
	if res := shake(set); len(res.Problems) > 0 || len(res.Silent) > 0 {
		t.Errorf("an llm worker with no workflow worker to run the budget: %+v", res)
	}
	if d := time.Since(started); d > 10*time.Second {
		t.Errorf("the handshake waited %v for a budget no workflow worker runs", d)
	}

	stopWF, err := wiring.Start(c, activities.New(runs, zerolog.Nop()),
		wiring.Options{Kinds: []string{wiring.KindWorkflow}})
	if err != nil {
		t.Fatal(err)
	}
	defer stopWF()
	waitForPollers(ctx, t, c, q, 2)
	if res := shake(set); len(res.Problems) > 0 || len(res.Silent) > 0 || res.Workers != 2 {
		t.Errorf("the workers learn the limits this starter set: %+v", res)
	}
	// Another starter of the run raised the cap since: the worker learns the budget's limits, not this starter's.
	if err := SetBudget(ctx, c, run, runDir, q.Workflow, limiter.Limits{SpendUSD: 2}); err != nil {
		t.Fatal(err)
	}
	res := shake(set)
	if len(res.Problems) != 1 || !strings.Contains(res.Problems[0], "learned limits {SpendUSD:2") ||
		!strings.Contains(res.Problems[0], "queues llm") {
		t.Errorf("the budget's limits changed since this starter set them: %+v", res)
	}
}

// waitForPollers waits until Temporal lists n worker processes polling the queues.
func waitForPollers(ctx context.Context, t *testing.T, c client.Client, q workflows.Queues, n int) {
	t.Helper()
	for {
		ids, _, err := Pollers(ctx, c, q)
		if err != nil {
			t.Fatal(err)
		}
		if len(ids) >= n {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d workers polling, want %d", len(ids), n)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// TestHelloBudgetProblems: an llm worker asked about the budget that cannot reach it, or that answers as a build
// keeping the cap in its own run folder would (nothing), is a problem naming it; a worker of another queue is not
// asked.
func TestHelloBudgetProblems(t *testing.T) {
	want := limiter.Limits{SpendUSD: 1}
	base := api.Hello{Worker: "m1:7:abcd", Host: "m1", Kinds: []string{specs.QueueLLM}, SeesRun: true}
	base.Version = buildid.Version()
	for _, tc := range []struct {
		name string
		h    func(h api.Hello) api.Hello
		want string
	}{
		{"same", func(h api.Hello) api.Hello { h.Budget = &want; return h }, ""},
		{"unreachable", func(h api.Hello) api.Hello { h.BudgetError = "context deadline exceeded"; return h },
			"cannot learn the run's limits from its budget workflow budget/r"},
		{"silent", func(h api.Hello) api.Hello { return h }, "does not say which budget holds its paid calls"},
		{"grade worker", func(h api.Hello) api.Hello { h.Kinds = []string{specs.QueueGrade}; return h }, ""},
	} {
		p := HelloProblems(tc.h(base), "r", "", specs.QueueLimits{}, &want)
		switch {
		case tc.want == "" && len(p) > 0:
			t.Errorf("%s: %v", tc.name, p)
		case tc.want != "" && (len(p) != 1 || !strings.Contains(p[0], tc.want) || !strings.Contains(p[0], "m1:7:abcd")):
			t.Errorf("%s: %v, want one naming the worker and %q", tc.name, p, tc.want)
		}
	}
	if p := HelloProblems(base, "r", "", specs.QueueLimits{}, nil); len(p) > 0 {
		t.Errorf("a worker not asked about the budget: %v", p)
	}
}

// embeddedClient starts an embedded Temporal server over dir (namespace ctxlab-test) and dials it; both stop when
// the test ends.
func embeddedClient(ctx context.Context, t *testing.T, dir string) client.Client {
	t.Helper()
	srv, err := embedded.Start(ctx, embedded.Options{DBFile: filepath.Join(dir, "temporal.db"),
		LogFile: filepath.Join(dir, "temporal.log"), Namespace: "ctxlab-test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	c, err := Dial(ctx, srv.HostPort(), "ctxlab-test", zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}
