// Package workers starts ctxlab's Temporal workers: one for workflows and one per kind of activity queue (llm,
// cpu, grade), so a cluster can run each kind where it fits. The starter runs all of them in-process; the
// standalone worker runs the ones it is told to.
package wiring

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"ctxlab/activities"
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
}

// Start starts the workers and returns a function that stops them all.
func Start(c client.Client, a *activities.Activities, o Options) (stop func(), err error) {
	// The SDK's workers need the client Dial made, not a wrapper of it (such as cluster.Patient).
	if w, ok := c.(interface{ Unwrap() client.Client }); ok {
		c = w.Unwrap()
	}
	buildid.Set()
	a.UseTemporal(c) // paid calls ask the run's budget workflow on this service
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
			w = worker.New(c, q.Workflow, worker.Options{LocalActivityWorkerOnly: true,
				MaxConcurrentLocalActivityExecutionSize: activityWorkerOptions(specs.QueueCPU,
					o.Limits.For(specs.QueueCPU)).MaxConcurrentActivityExecutionSize})
			workflows.Register(w)
			for name, fn := range a.Functions() {
				w.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name})
			}
		case slices.Contains(specs.QueueKinds, kind):
			w = worker.New(c, q.For(kind), activityWorkerOptions(kind, o.Limits.For(kind)))
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
	return stop, nil
}

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

// DefaultSlots is how many activities of a kind one worker runs at once unless a spec says otherwise.
func DefaultSlots(kind string) int {
	switch kind {
	case specs.QueueLLM:
		return 16
	case specs.QueueGrade:
		return max(1, runtime.NumCPU())
	default:
		return 2 * runtime.NumCPU()
	}
}
