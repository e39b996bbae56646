package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"ctxlab/activities/api"
)

// HandshakeName is the registered name of the Handshake workflow.
const HandshakeName = "Handshake"

// HelloQueue is the task queue only the worker process of a Temporal identity polls, for its handshake: the queues
// of a kind are shared by every worker of that kind, and a starter must ask each.
func HelloQueue(identity string) string { return "ctxlab-hello/" + identity }

// HandshakeInput names the workers to ask (by identity) and what they must read back.
type HandshakeInput struct {
	Workers []string           `json:"workers"`
	Ask     api.HandshakeInput `json:"ask"`
}

// HandshakeReply is one worker's answer, or why it gave none (gone since it last polled, or too old to know the
// handshake).
type HandshakeReply struct {
	Worker string    `json:"worker"`
	Hello  api.Hello `json:"hello"`
	Error  string    `json:"error,omitempty"`
}

// Handshake asks every worker its Hello at once, each on its own queue, once, waiting for its answer at most wait.
func Handshake(ctx workflow.Context, in HandshakeInput) ([]HandshakeReply, error) {
	futures := make([]workflow.Future, len(in.Workers))
	for i, w := range in.Workers {
		actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			TaskQueue:              HelloQueue(w),
			ScheduleToStartTimeout: 10 * time.Second,
			StartToCloseTimeout:    30 * time.Second,
			RetryPolicy:            &temporal.RetryPolicy{MaximumAttempts: 1},
		})
		futures[i] = workflow.ExecuteActivity(actx, api.HandshakeName, in.Ask)
	}
	out := make([]HandshakeReply, len(in.Workers))
	for i, f := range futures {
		out[i].Worker = in.Workers[i]
		if err := f.Get(ctx, &out[i].Hello); err != nil {
			out[i].Error = describe(err)
		}
	}
	return out, nil
}
