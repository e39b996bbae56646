package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"ctxlab/specs"
)

// Queues are the task queue names a sweep uses: one for workflows and one per kind of activity, named in JSON by
// the kind (specs.Queues).
type Queues struct {
	Workflow string `json:"workflow"`
	LLM      string `json:"llm"`
	CPU      string `json:"cpu"`
	Grade    string `json:"grade"`
}

// DefaultQueues are the queue names workers and starters agree on unless told otherwise.
var DefaultQueues = Queues{Workflow: "ctxlab", LLM: "ctxlab-llm", CPU: "ctxlab-cpu", Grade: "ctxlab-grade"}

// For returns the queue of a queue kind; a kind no declaration has is an error, never another kind's queue.
func (q Queues) For(kind string) (string, error) {
	return specs.ForQueue[string](q, kind)
}

// withDefaults fills empty names from DefaultQueues.
func (q Queues) withDefaults() Queues {
	if q.Workflow == "" {
		q.Workflow = DefaultQueues.Workflow
	}
	if q.LLM == "" {
		q.LLM = DefaultQueues.LLM
	}
	if q.CPU == "" {
		q.CPU = DefaultQueues.CPU
	}
	if q.Grade == "" {
		q.Grade = DefaultQueues.Grade
	}
	return q
}

// heartbeatTimeout is how long a silent activity is trusted; node activities heartbeat every 2 s, so a worker that
// died is noticed and its work retried within this.
const heartbeatTimeout = 15 * time.Second

// activityOptions are the options of one kind of activity.
// A kind no declaration has panics: the workflow task fails, naming it, and is retried until a worker of a build
// that declares it takes it (the catalog refuses a kind on an undeclared queue, and the plan a node of an unknown
// kind: activities' LoadPlan), rather than the node going to another kind's queue.
func activityOptions(ctx workflow.Context, q Queues, kind string, attempts int, grading time.Duration) workflow.Context {
	declared, err := specs.QueueOf(kind)
	if err != nil {
		panic(err)
	}
	// A lookup by reflection in a struct's fields: the same answer on every replay.
	//workflowcheck:ignore
	queue, err := q.For(kind)
	if err != nil {
		panic(err)
	}
	// 30 minutes also bounds a model call: the openai provider's own retries (4 attempts of at most 5 minutes, and
	// waits of at most a minute between them) end before it, so a slow endpoint is not cut off mid-retry.
	timeout := 30 * time.Minute
	if declared.GradingTimeout {
		if grading <= 0 {
			grading = 30 * time.Minute
		}
		timeout = grading + 10*time.Minute
	}
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:           queue,
		StartToCloseTimeout: timeout,
		HeartbeatTimeout:    heartbeatTimeout,
		RetryPolicy:         retryPolicy(nodeAttempts(attempts)),
	})
}

// bookkeepingOptions are for the sweep's own short activities (loading the dataset and plan, recording rows).
// They heartbeat like node activities, so one whose worker was killed is retried within seconds of a restart
// instead of at the end of its 5 minutes.
func bookkeepingOptions(ctx workflow.Context, q Queues) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:           q.CPU,
		StartToCloseTimeout: 5 * time.Minute,
		HeartbeatTimeout:    heartbeatTimeout,
		RetryPolicy:         retryPolicy(bookkeepingAttempts),
	})
}

// localActivityOptions are the options of a node the workflow worker runs itself (specs.RunsLocally): the retries
// of a node activity, with no heartbeat (the workflow task's own timeout notices a dead worker).
func localActivityOptions(ctx workflow.Context, attempts int) workflow.Context {
	return workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: 30 * time.Minute,
		RetryPolicy:         retryPolicy(nodeAttempts(attempts)),
	})
}

// localBookkeepingOptions are bookkeepingOptions for the workflow worker's own short activities (loading the plan).
func localBookkeepingOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: 5 * time.Minute,
		RetryPolicy:         retryPolicy(bookkeepingAttempts),
	})
}

// bookkeepingAttempts bounds the tries of the sweep's own short activities.
const bookkeepingAttempts = 10

// nodeAttempts is a node's tries: the spec's retries, or 3 when it sets none.
func nodeAttempts(attempts int) int {
	if attempts < 1 {
		return 3
	}
	return attempts
}

// retryPolicy is every activity's backoff, from a second doubling to 30 seconds, over at most attempts tries.
func retryPolicy(attempts int) *temporal.RetryPolicy {
	return &temporal.RetryPolicy{
		InitialInterval:    time.Second,
		BackoffCoefficient: 2,
		MaximumInterval:    30 * time.Second,
		MaximumAttempts:    int32(attempts),
	}
}
