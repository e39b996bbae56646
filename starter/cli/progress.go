package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"go.temporal.io/sdk/client"

	"ctxlab/internal/logs"
	"ctxlab/results"
	"ctxlab/workflows"
)

// watch prints the sweep's progress until done closes: on a terminal one line redrawn in place, otherwise a line
// whenever something changes.
func watch(ctx context.Context, c client.Client, id, resultsPath string, arms int, w io.Writer, done <-chan struct{}) {
	tty := logs.IsTerminal(w)
	start := time.Now()
	last := ""
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-done:
			if tty && last != "" {
				fmt.Fprintln(w)
			}
			return
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		v, err := c.QueryWorkflow(qctx, id, "", workflows.ProgressQuery)
		cancel()
		if err != nil {
			continue
		}
		var p workflows.Progress
		if v.Get(&p) != nil || p.Total == 0 {
			continue
		}
		rows := 0
		if rs, _, err := results.ReadFile(resultsPath); err == nil {
			rows = len(rs)
		}
		line := fmt.Sprintf("issues %d/%d done, %d running, %d failed; rows %d/%d", p.Done, p.Total, p.Running,
			len(p.Failed), rows, p.Total*arms)
		if line == last {
			continue
		}
		last = line
		elapsed := time.Since(start).Truncate(time.Second)
		if tty {
			fmt.Fprintf(w, "\r\033[K[%s] %s", elapsed, line)
		} else {
			fmt.Fprintf(w, "[%s] %s\n", elapsed, line)
		}
	}
}
