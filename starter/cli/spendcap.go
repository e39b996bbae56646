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
			if p.Paused > 0 && p.Paused >= p.Running {
				paused.Store(&p)
				stop()
				return
			}
		}
	}()
	return &paused
}
