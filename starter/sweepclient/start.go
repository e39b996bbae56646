package sweepclient

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/rs/zerolog"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"ctxlab/activities/api"
	"ctxlab/results"
	"ctxlab/runfolder"
	"ctxlab/specs"
	"ctxlab/store/cas"
	"ctxlab/workflows"
)

func sweepInput(e *specs.Experiment, plan *specs.Plan, planRef cas.Ref, maxHistory int) workflows.SweepInput {
	in := workflows.SweepInput{
		Run: e.Name, Title: "ctxlab: " + e.Name, Plan: planRef, Dataset: e.Dataset, Grading: e.Grading,
		Concurrency: e.Limits.Concurrency, Retries: e.Limits.Retries, Debug: e.Debug, Queues: workflows.DefaultQueues,
		MaxHistory: maxHistory,
	}
	for _, arm := range plan.Arms {
		in.Order = append(in.Order, results.ArmKey(arm))
	}
	return in
}

const specHashMemo = "spec_hash"

// attachedHow is what startOrAttach says of a sweep it found running.
const attachedHow = "attached to the running sweep"

// startOrAttach attaches to a running sweep, or to a finished one of the same spec; otherwise it starts a new run.
// Before a new run replaces a finished sweep of another spec, replaced is called with that spec's hash, so its rows
// can be put aside instead of being mistaken for the new spec's. A finished sweep of the same spec is run again
// for the rows retry takes out of its results (failed by no fault of the model, or of a kind --retry names), and
// only for them.
func startOrAttach(ctx context.Context, c client.Client, id string, in workflows.SweepInput, hash string,
	replaced func(oldHash string) error, retry func() (map[string][]results.Key, RowErrorTally, error)) (
	client.WorkflowRun, string, error) {
	how := "started the sweep"
	desc, err := c.DescribeWorkflowExecution(ctx, id, "")
	var notFound *serviceerror.NotFound
	switch {
	case err == nil:
		info := desc.GetWorkflowExecutionInfo()
		old := memoSpecHash(info)
		switch info.GetStatus() {
		case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
			if old != "" && old != hash {
				return nil, "", &specConflictError{id: id, running: old, this: hash}
			}
			return c.GetWorkflow(ctx, id, ""), attachedHow, nil
		case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
			if old == hash {
				again, tally, err := retry()
				if err != nil {
					return nil, "", fmt.Errorf("taking out the rows to retry: %w", err)
				}
				if len(again) == 0 {
					return c.GetWorkflow(ctx, id, ""), "the sweep had already finished; showing its results", nil
				}
				in.Retry = again
				// Only the issues with rows to retry run again (the sweep filters what it loads itself).
				in.Instances = slices.DeleteFunc(slices.Clone(in.Instances), func(i api.InstanceRef) bool {
					return len(again[i.ID]) == 0
				})
				how = fmt.Sprintf("the sweep had finished with %d row(s) to retry: %s (kept in %s); running them "+
					"again", tally.Errors, tally.classes(), runfolder.RetriedFile)
			}
		}
		if old != "" && old != hash {
			if err := replaced(old); err != nil {
				return nil, "", err
			}
		}
	case errors.As(err, &notFound):
	default:
		return nil, "", fmt.Errorf("looking up workflow %s: %w", id, err)
	}
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       id,
		TaskQueue:                in.Queues.Workflow,
		Memo:                     map[string]any{specHashMemo: hash},
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
	}, workflows.SweepName, in)
	if err != nil {
		return nil, "", fmt.Errorf("starting workflow %s: %w", id, err)
	}
	// The conflict policy returns a sweep another starter started in between: it must be of this spec.
	if err := refuseOtherSpec(ctx, c, id, hash); err != nil {
		return nil, "", err
	}
	return run, how, nil
}

// archiveResults puts aside the rows and summary of a sweep of another spec (runfolder.PutAside), so the new
// sweep's results.jsonl holds only its own rows. Node outputs stay: they are keyed by content, so the new sweep
// reuses every node the two specs share.
func archiveResults(runDir, oldHash string, log zerolog.Logger) error {
	dest, err := runfolder.PutAside(runDir, oldHash)
	if dest != "" {
		log.Info().Str("moved_to", dest).Msg("the spec changed since the last sweep; its results were put aside")
	}
	return err
}
