package cli

import (
	"context"
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/client"

	"ctxlab/workflows"
)

// watchPause polls the sweep's progress and calls stop once every running issue waits for the spend cap: nothing
// can move until the cap is raised, so the starter should say so and exit instead of waiting forever. It returns
// the progress that made it stop (nil until then).
func watchPause(ctx context.Context, c client.Client, id string, stop func()) *atomic.Pointer[workflows.Progress] {
	var paused atomic.Pointer[workflows.Progress]
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		seen := 0
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			v, err := c.QueryWorkflow(qctx, id, "", workflows.ProgressQuery)
			cancel()
			if err != nil {
				continue
			}
			var p workflows.Progress
			if v.Get(&p) != nil {
				continue
			}
			// Twice in a row: a starter that just asked paused issues to resume sees them paused until they
			// have checked the cap again.
			if p.Paused > 0 && p.Paused >= p.Running {
				if seen++; seen >= 2 {
					paused.Store(&p)
					stop()
					return
				}
			} else {
				seen = 0
			}
		}
	}()
	return &paused
}
