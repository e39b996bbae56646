package temporalserver

import (
	"context"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

func echo(_ workflow.Context, s string) (string, error) { return "echo: " + s, nil }

// TestServerRunsAWorkflow starts the upstream server and runs a workflow on it through the SDK.
func TestServerRunsAWorkflow(t *testing.T) {
	s := Start(t, "ctxlab-test")
	c, err := client.Dial(client.Options{HostPort: s.Address, Namespace: s.Namespace})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	w := worker.New(c, "q", worker.Options{})
	w.RegisterWorkflow(echo)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: "q"}, echo, "hi")
	if err != nil {
		t.Fatal(err)
	}
	var got string
	if err := run.Get(ctx, &got); err != nil || got != "echo: hi" {
		t.Fatalf("workflow result %q, %v", got, err)
	}
}
