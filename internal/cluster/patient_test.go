package cluster

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// scriptedRun answers result waits from a script of errors, then with its value.
type scriptedRun struct {
	client.WorkflowRun
	errs  []error
	waits *int
}

func (r *scriptedRun) GetID() string { return "sweep/x" }

func (r *scriptedRun) GetWithOptions(_ context.Context, valuePtr any, _ client.WorkflowRunGetOptions) error {
	*r.waits++
	if len(r.errs) > 0 {
		err := r.errs[0]
		r.errs = r.errs[1:]
		return err
	}
	*valuePtr.(*string) = "done"
	return nil
}

type scriptedClient struct {
	client.Client
	run *scriptedRun
}

func (c scriptedClient) GetWorkflow(context.Context, string, string) client.WorkflowRun { return c.run }

func (c scriptedClient) ExecuteWorkflow(context.Context, client.StartWorkflowOptions, any, ...any) (client.WorkflowRun,
	error) {
	return c.run, nil
}

// TestPatientOutlastsTheServer: a result wait that fails because the server is gone (what the SDK returns after a
// minute of a dead server: deadline exceeded, or unavailable) is waited again, through GetWorkflow and
// ExecuteWorkflow alike; an answer that is an error (a failed workflow) comes back at once, and so does the end of
// the caller's context.
func TestPatientOutlastsTheServer(t *testing.T) {
	patientFirstPause, patientMaxPause = time.Millisecond, 2*time.Millisecond
	defer func() { patientFirstPause, patientMaxPause = time.Second, 10*time.Second }()
	lost := []error{
		serviceerror.NewUnavailable("connection refused"),
		serviceerror.NewDeadlineExceeded("context deadline exceeded"),
		fmt.Errorf("history: %w", context.DeadlineExceeded),
		status.Error(codes.Unavailable, "transport is closing"),
	}
	for _, via := range []string{"GetWorkflow", "ExecuteWorkflow"} {
		waits := 0
		c := Patient(scriptedClient{run: &scriptedRun{errs: append([]error(nil), lost...), waits: &waits}},
			"127.0.0.1:7233", zerolog.Nop())
		run := c.GetWorkflow(context.Background(), "sweep/x", "")
		if via == "ExecuteWorkflow" {
			var err error
			if run, err = c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{}, "Sweep"); err != nil {
				t.Fatal(err)
			}
		}
		var got string
		if err := run.Get(context.Background(), &got); err != nil || got != "done" {
			t.Errorf("%s: result %q, %v after the server came back", via, got, err)
		}
		if waits != len(lost)+1 {
			t.Errorf("%s: %d result waits, want %d", via, waits, len(lost)+1)
		}
	}

	failed := errors.New("workflow execution error: activity failed")
	waits := 0
	c := Patient(scriptedClient{run: &scriptedRun{errs: []error{failed}, waits: &waits}}, "a", zerolog.Nop())
	var got string
	if err := c.GetWorkflow(context.Background(), "sweep/x", "").Get(context.Background(), &got); !errors.Is(err, failed) ||
		waits != 1 {
		t.Errorf("a failed workflow: %v after %d waits, want its error after one", err, waits)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	down := make([]error, 100)
	for i := range down {
		down[i] = serviceerror.NewUnavailable("connection refused")
	}
	waits = 0
	c = Patient(scriptedClient{run: &scriptedRun{errs: down, waits: &waits}}, "a", zerolog.Nop())
	if err := c.GetWorkflow(ctx, "sweep/x", "").Get(ctx, &got); err == nil || waits != 1 {
		t.Errorf("a canceled wait: %v after %d waits, want an error after one", err, waits)
	}
}

func TestServerLost(t *testing.T) {
	for _, err := range []error{serviceerror.NewNotFound("x"), serviceerror.NewNamespaceNotFound("ns"),
		serviceerror.NewPermissionDenied("no", ""), errors.New("boom"), status.Error(codes.InvalidArgument, "bad")} {
		if ServerLost(err) {
			t.Errorf("ServerLost(%v) = true, but the server answered", err)
		}
	}
}

// TestPatientUnwraps: the SDK's workers panic on any client but the one Dial made, so a starter with --address and
// its own workers hands them the wrapped client (wiring unwraps).
func TestPatientUnwraps(t *testing.T) {
	inner := scriptedClient{run: &scriptedRun{waits: new(int)}}
	u, ok := Patient(inner, "a", zerolog.Nop()).(interface{ Unwrap() client.Client })
	if !ok || u.Unwrap() != client.Client(inner) {
		t.Errorf("Patient's client does not unwrap to the client it wraps")
	}
}
