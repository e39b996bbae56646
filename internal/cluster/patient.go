package cluster

import (
	"context"
	"errors"
	"time"

	"github.com/rs/zerolog"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"ctxlab/internal/flock"
)

// Patient wraps a client so that waiting for a workflow's result outlasts the server being down: the SDK gives up
// on a result after about a minute without an answer from the server, while a server killed and restarted by a
// supervisor (or a database failing over) can take longer, and the workflow itself goes on meanwhile. A result
// wait that fails because the server cannot be reached is retried until it succeeds, fails for another reason, or
// its context ends; the wait is logged once per outage.
func Patient(c client.Client, address string, log zerolog.Logger) client.Client {
	return patientClient{Client: c, address: address, log: log}
}

type patientClient struct {
	client.Client
	address string
	log     zerolog.Logger
}

// Unwrap is the client Patient wraps: the SDK's workers accept only the client Dial made.
func (c patientClient) Unwrap() client.Client { return c.Client }

func (c patientClient) GetWorkflow(ctx context.Context, workflowID, runID string) client.WorkflowRun {
	return patientRun{WorkflowRun: c.Client.GetWorkflow(ctx, workflowID, runID), c: c}
}

func (c patientClient) ExecuteWorkflow(ctx context.Context, o client.StartWorkflowOptions, workflow any,
	args ...any) (client.WorkflowRun, error) {
	run, err := c.Client.ExecuteWorkflow(ctx, o, workflow, args...)
	if err != nil {
		return nil, err
	}
	return patientRun{WorkflowRun: run, c: c}, nil
}

type patientRun struct {
	client.WorkflowRun
	c patientClient
}

func (r patientRun) Get(ctx context.Context, valuePtr any) error {
	return r.GetWithOptions(ctx, valuePtr, client.WorkflowRunGetOptions{})
}

// Pauses between result waits while the server is unreachable.
var (
	patientFirstPause = time.Second
	patientMaxPause   = 10 * time.Second
)

func (r patientRun) GetWithOptions(ctx context.Context, valuePtr any, o client.WorkflowRunGetOptions) error {
	pause, since := patientFirstPause, time.Time{}
	for {
		err := r.WorkflowRun.GetWithOptions(ctx, valuePtr, o)
		if err == nil || ctx.Err() != nil || !ServerLost(err) {
			if err == nil && !since.IsZero() {
				r.c.log.Info().Str("address", r.c.address).Dur("after", time.Since(since).Round(time.Second)).
					Msg("the Temporal server answers again")
			}
			return err
		}
		if since.IsZero() {
			since = time.Now()
			r.c.log.Warn().Err(err).Str("address", r.c.address).Str("workflow", r.GetID()).
				Msg("lost the Temporal server; waiting for it to come back (the workflow goes on once it does)")
		}
		if err := flock.Sleep(ctx, pause); err != nil {
			return err
		}
		pause = min(2*pause, patientMaxPause)
	}
}

// ServerLost reports whether err says the server could not be reached or did not answer in time, as opposed to an
// answer (a failed workflow, a missing namespace, a refused request).
func ServerLost(err error) bool {
	var unavailable *serviceerror.Unavailable
	var deadline *serviceerror.DeadlineExceeded
	if errors.As(err, &unavailable) || errors.As(err, &deadline) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded:
		return true
	}
	return false
}
