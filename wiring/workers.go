// Package wiring starts ctxlab's Temporal workers: one for workflows and one per kind of activity queue (llm,
// cpu, grade), so a cluster can run each kind where it fits. The starter runs all of them in-process; the
// standalone worker runs the ones it is told to.
package wiring

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"ctxlab/activities"
	"ctxlab/activities/api"
	"ctxlab/internal/buildid"
	"ctxlab/specs"
	"ctxlab/workflows"
)

// KindWorkflow is the worker kind that runs workflows; the other kinds a worker process can serve are the activity
// queue kinds (specs.QueueKinds).
const KindWorkflow = "workflow"

// AllKinds is what an embedded starter serves.
var AllKinds = append([]string{KindWorkflow}, specs.QueueKinds...)

// Options configure Start.
type Options struct {
	Queues workflows.Queues
	Kinds  []string
	// Limits bound each activity kind (a spec's limits.queues): Concurrency caps the activities this process runs
	// at once (zero picks a default for the kind); Rate caps activities started per second on the task queue,
	// across every worker that polls it (zero: unlimited).
	Limits specs.QueueLimits
	// Spec is the name of the experiment whose spec gave Limits ("" when none did), for the handshake.
	Spec string
}

// Identity is a worker process's Temporal identity: its host, pid and a random tag, so that a starter names the
// machine of a worker that differs, and reaches each process on its own queue (workflows.HelloQueue).
func Identity() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s:%d:%04x", host, os.Getpid(), rand.Uint32N(1<<16))
}

// Start starts the workers and returns a function that stops them all.
func Start(c client.Client, a *activities.Activities, o Options) (stop func(), err error) {
	// The SDK's workers need the client Dial made, not a wrapper of it (such as cluster.Patient).
	if w, ok := c.(interface{ Unwrap() client.Client }); ok {
		c = w.Unwrap()
	}
	buildid.Set()
	identity := Identity()
	a.UseTemporal(c, identity) // paid calls ask the run's budget workflow on this service
	q := o.Queues
	if q == (workflows.Queues{}) {
		q = workflows.DefaultQueues
	}
	var started []worker.Worker
	stop = func() {
		for _, w := range started {
			w.Stop()
		}
		// What the last calls cost reaches the runs' budgets before the process goes.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = a.FlushBudgets(ctx)
	}
	for _, kind := range o.Kinds {
		var w worker.Worker
		switch {
		case kind == KindWorkflow:
			// The Issue workflow runs cheap nodes here as local activities (specs.RunsLocally), as many at once
			// as the cpu queue's workers would.
			w = worker.New(c, q.Workflow, worker.Options{Identity: identity, LocalActivityWorkerOnly: true,
				MaxConcurrentLocalActivityExecutionSize: activityWorkerOptions(specs.QueueCPU,
					o.Limits.For(specs.QueueCPU)).MaxConcurrentActivityExecutionSize})
			workflows.Register(w)
			for name, fn := range a.Functions() {
				w.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name})
			}
		case slices.Contains(specs.QueueKinds, kind):
			queue, err := q.For(kind)
			if err != nil {
				stop()
				return nil, err
			}
			opts := activityWorkerOptions(kind, o.Limits.For(kind))
			opts.Identity = identity
			w = worker.New(c, queue, opts)
			for name, fn := range a.Functions() {
				w.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name})
			}
			for name, fn := range a.AgentTurnFunctions() { // the Agent child workflow's turns
				w.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name})
			}
		default:
			stop()
			return nil, fmt.Errorf("unknown worker kind %q (want %v)", kind, AllKinds)
		}
		if err := w.Start(); err != nil {
			stop()
			return nil, fmt.Errorf("starting %s worker: %w", kind, err)
		}
		started = append(started, w)
	}
	hello := worker.New(c, workflows.HelloQueue(identity), worker.Options{Identity: identity})
	hello.RegisterActivityWithOptions(func(ctx context.Context, in api.HandshakeInput) (api.Hello, error) {
		return helloOf(ctx, a, o, identity, in), nil
	}, activity.RegisterOptions{Name: api.HandshakeName})
	if err := hello.Start(); err != nil {
		stop()
		return nil, fmt.Errorf("starting the handshake worker: %w", err)
	}
	started = append(started, hello)
	return stop, nil
}

// helloOf is this process's answer to a starter's handshake.
func helloOf(ctx context.Context, a *activities.Activities, o Options, identity string,
	in api.HandshakeInput) api.Hello {
	host, _ := os.Hostname()
	h := api.Hello{Worker: identity, Host: host, Version: buildid.Version(), Kinds: o.Kinds, Limits: o.Limits,
		Spec: o.Spec}
	var err error
	if h.Store, err = a.SeesRun(ctx, in); err != nil {
		h.StoreError = err.Error()
	} else {
		h.SeesRun = true
	}
	if in.Budget && slices.Contains(o.Kinds, specs.QueueLLM) { // the paid calls are the llm queue's steps
		bctx, cancel := context.WithTimeout(ctx, budgetWait)
		defer cancel()
		if lim, err := a.BudgetLimits(bctx, in.Run); err != nil {
			h.BudgetError = err.Error()
		} else {
			h.Budget = &lim
		}
	}
	return h
}

// budgetWait bounds how long a worker's handshake waits for the run's budget to answer (within the handshake
// activity's 30 s).
const budgetWait = 15 * time.Second

// activityWorkerOptions turns a queue's limits into worker options.
func activityWorkerOptions(kind string, l specs.QueueLimit) worker.Options {
	slots := l.Concurrency
	if slots <= 0 {
		slots = DefaultSlots(kind)
	}
	// TaskQueueActivitiesPerSecond is enforced by the server for the whole queue; every worker of the queue must
	// send the same value, or the last poller's wins.
	return worker.Options{MaxConcurrentActivityExecutionSize: slots, TaskQueueActivitiesPerSecond: l.Rate}
}

// DefaultSlots is how many activities of a queue kind one worker runs at once unless a spec says otherwise
// (specs.QueueKind.Slots); 0 for a kind nothing declares, which Start refuses to serve.
func DefaultSlots(kind string) int {
	q, err := specs.QueueOf(kind)
	if err != nil {
		return 0
	}
	return q.Slots(runtime.NumCPU())
}
