package sweepclient

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"ctxlab/activities/api"
	"ctxlab/activities/limiter"
	"ctxlab/internal/buildid"
	"ctxlab/specs"
	"ctxlab/store/objects"
	"ctxlab/workflows"
)

// HandshakeResult is what the workers polling a sweep's queues answered: the reasons not to run the sweep on them,
// and the workers that did not answer.
type HandshakeResult struct {
	Workers  int
	Differ   int // workers with problems
	Problems []string
	Silent   []string
	// BudgetAsked says the llm workers were asked what the run's budget holds their paid calls to.
	BudgetAsked bool
}

// Handshake asks every worker process polling the queues (the Pollers Temporal lists, each asked on its own queue,
// workflows.HelloQueue) to read back an object this starter leaves in the run's objects, and for its version and
// the limits it applies. A worker whose store is not the starter's, whose build differs or whose queue limits are
// not the spec's would compute another sweep than the one asked for, or lose what it computed where the starter
// never looks: each is a problem, named by its identity and host. With budget (the limits this starter set on the
// run's budget workflow), each llm worker is asked too what its paid calls will be held to, which it learns from
// that workflow: one that cannot reach it, or learns other limits, would pay past the cap or wait for it forever.
// It is asked only while a workflow worker polls, to run the budget. The Handshake workflow runs on a queue of
// this process's own, so it needs no worker but the ones it asks.
func Handshake(ctx context.Context, c client.Client, objs objects.Store, run string, queues workflows.Queues,
	limits specs.QueueLimits, budget *limiter.Limits) (HandshakeResult, error) {
	var res HandshakeResult
	ids, budgetRuns, err := Pollers(ctx, c, queues)
	if err != nil || len(ids) == 0 {
		return res, err
	}
	if !budgetRuns {
		budget = nil
	}
	res.Workers, res.BudgetAsked = len(ids), budget != nil
	nonce := randomHex()
	key := path.Join(api.HandshakeKey, nonce)
	if err := objs.Put(ctx, key, []byte(nonce)); err != nil {
		return res, fmt.Errorf("the handshake: writing to the store %s: %w", objs, err)
	}
	defer objs.Delete(context.Background(), key)

	queue := "ctxlab-handshake/" + nonce
	wc := c // the SDK's workers need the client Dial made, not a wrapper of it (cluster.Patient)
	if u, ok := c.(interface{ Unwrap() client.Client }); ok {
		wc = u.Unwrap()
	}
	w := worker.New(wc, queue, worker.Options{})
	w.RegisterWorkflowWithOptions(workflows.Handshake, workflow.RegisterOptions{Name: workflows.HandshakeName})
	if err := w.Start(); err != nil {
		return res, err
	}
	defer w.Stop()
	hctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	run2, err := c.ExecuteWorkflow(hctx, client.StartWorkflowOptions{ID: "handshake/" + run + "/" + nonce,
		TaskQueue: queue}, workflows.HandshakeName, workflows.HandshakeInput{Workers: ids,
		Ask: api.HandshakeInput{Run: run, Key: key, Nonce: nonce, Budget: budget != nil}})
	if err != nil {
		return res, fmt.Errorf("the handshake: %w", err)
	}
	var replies []workflows.HandshakeReply
	if err := run2.Get(hctx, &replies); err != nil {
		return res, fmt.Errorf("the handshake: %w", err)
	}
	for _, r := range replies {
		if r.Error != "" {
			res.Silent = append(res.Silent, fmt.Sprintf("%s (%s)", r.Worker, r.Error))
			continue
		}
		if p := HelloProblems(r.Hello, run, objs.String(), limits, budget); len(p) > 0 {
			res.Differ++
			res.Problems = append(res.Problems, p...)
		}
	}
	return res, nil
}

// HelloProblems says what in a worker's answer differs from this starter's run (budget: the limits set on the run's
// budget, nil when the workers were not asked; run names it).
func HelloProblems(h api.Hello, run, store string, limits specs.QueueLimits, budget *limiter.Limits) []string {
	who := fmt.Sprintf("worker %s (host %s, queues %s)", h.Worker, h.Host, strings.Join(h.Kinds, ","))
	var out []string
	if !h.SeesRun {
		out = append(out, fmt.Sprintf("%s does not share this starter's store: this run's handshake object, "+
			"written to %s, is not in its store %s (%s); start it with the starter's --store (or $CTXLAB_STORE) and "+
			"the credentials to reach it", who, store, h.Store, h.StoreError))
	}
	if v := buildid.Version(); h.Version != v {
		out = append(out, fmt.Sprintf("%s runs ctxlab %s, this starter %s: start workers built from the same "+
			"source", who, h.Version, v))
	}
	for _, kind := range specs.QueueKinds {
		if slices.Contains(h.Kinds, kind) && h.Limits.For(kind) != limits.For(kind) {
			spec := "no spec"
			if h.Spec != "" {
				spec = "the spec of experiment " + h.Spec
			}
			out = append(out, fmt.Sprintf("%s applies limits.queues.%s %+v (from %s) where this spec says %+v: "+
				"start it with --spec naming this spec", who, kind, h.Limits.For(kind), spec, limits.For(kind)))
		}
	}
	if budget != nil && slices.Contains(h.Kinds, specs.QueueLLM) {
		out = append(out, budgetProblems(who, run, h, *budget)...)
	}
	return out
}

// budgetProblems says how an llm worker's paid calls would not be held to the run's budget.
func budgetProblems(who, run string, h api.Hello, want limiter.Limits) []string {
	switch {
	case h.BudgetError != "":
		return []string{fmt.Sprintf("%s cannot learn the run's limits from its budget workflow %s (%s): its paid "+
			"calls would wait for it and fail", who, api.BudgetWorkflowID(run), h.BudgetError)}
	case h.Budget == nil:
		return []string{fmt.Sprintf("%s does not say which budget holds its paid calls (a ctxlab that kept the "+
			"spend cap in its own run folder would not hold it across machines): start workers built from the "+
			"same source", who)}
	case h.Budget.SpendUSD != want.SpendUSD || !maps.Equal(h.Budget.Providers, want.Providers):
		return []string{fmt.Sprintf("%s learned limits %+v from the run's budget where this starter set %+v "+
			"(another starter of the run changed them since?)", who, *h.Budget, want)}
	}
	return nil
}

// Pollers lists the identities of the worker processes Temporal saw polling the sweep's queues lately, sorted;
// workflowPolled says one of them polls the workflow queue (so the run's budget workflow runs).
func Pollers(ctx context.Context, c client.Client, q workflows.Queues) (ids []string, workflowPolled bool, err error) {
	for _, tq := range []struct {
		name string
		typ  enumspb.TaskQueueType
	}{{q.Workflow, enumspb.TASK_QUEUE_TYPE_WORKFLOW}, {q.LLM, enumspb.TASK_QUEUE_TYPE_ACTIVITY},
		{q.CPU, enumspb.TASK_QUEUE_TYPE_ACTIVITY}, {q.Grade, enumspb.TASK_QUEUE_TYPE_ACTIVITY}} {
		resp, err := c.DescribeTaskQueue(ctx, tq.name, tq.typ)
		if err != nil {
			return nil, false, fmt.Errorf("listing the workers of queue %s: %w", tq.name, err)
		}
		for _, p := range resp.GetPollers() {
			if id := p.GetIdentity(); id != "" && !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
		workflowPolled = workflowPolled || tq.typ == enumspb.TASK_QUEUE_TYPE_WORKFLOW && len(resp.GetPollers()) > 0
	}
	slices.Sort(ids)
	return ids, workflowPolled, nil
}

func randomHex() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
