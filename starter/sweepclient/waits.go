package sweepclient

import (
	"context"
	"time"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/client"

	"ctxlab/workflows"
)

// waitQueryTimeout bounds the waits query of one issue: a sweep whose workers are elsewhere and gone answers none.
const waitQueryTimeout = 5 * time.Second

// wakeWaitingIssues asks every running issue of the sweep what its nodes wait for (workflows.WaitsQuery), says so
// (what, and until when), and tells the issues that wait to try again now (workflows.ResumeSignal): a starter run
// again, or attached, after the endpoint came back does not sit out the rest of an hour's Retry-After. The sweep's
// own resume signal reaches only the issues paused at the spend cap. It returns how many nodes waited.
func wakeWaitingIssues(ctx context.Context, c client.Client, sweepID string, log zerolog.Logger) int {
	desc, err := c.DescribeWorkflowExecution(ctx, sweepID, "")
	if err != nil {
		return 0
	}
	n := 0
	for _, child := range desc.GetPendingChildren() {
		id := child.GetWorkflowId()
		qctx, cancel := context.WithTimeout(ctx, waitQueryTimeout)
		v, err := c.QueryWorkflow(qctx, id, "", workflows.WaitsQuery)
		cancel()
		if err != nil {
			if qctx.Err() != nil {
				log.Debug().Err(err).Str("issue", id).Msg("no worker answered the waits query; not asking the others")
				return n
			}
			continue // an issue of an older ctxlab, or one that just ended
		}
		var waits []workflows.NodeWait
		if v.Get(&waits) != nil || len(waits) == 0 {
			continue
		}
		for _, w := range waits {
			what := "the endpoint"
			if w.Kind == "spend_cap" {
				what = "the spend cap"
			}
			log.Info().Str("issue", id).Str("node", w.Node).Str("kind", w.Kind).Time("until", w.Until).
				Str("error", w.Error).Msgf("%s waits for %s (%s) until %s (%s from now); asking it to try again now",
				id, what, w.Kind, w.Until.Local().Format("15:04:05"), time.Until(w.Until).Round(time.Second))
		}
		n += len(waits)
		if err := c.SignalWorkflow(ctx, id, "", workflows.ResumeSignal, nil); err != nil {
			log.Warn().Err(err).Str("issue", id).Msg("could not ask the issue to try again now")
		}
	}
	return n
}
