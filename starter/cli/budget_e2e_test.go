package cli

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"

	"ctxlab/activities/limiter"
	"ctxlab/runfolder"
)

// budgetOf queries the run's budget workflow on the server the run's starter published in its run folder dir.
func budgetOf(ctx context.Context, t *testing.T, dir, run string) limiter.Status {
	t.Helper()
	sf, ok := readServerFile(filepath.Join(dir, runfolder.ServerFile))
	if !ok || sf.Address == "" {
		t.Fatalf("no server published in %s", dir)
	}
	c, err := dial(ctx, sf.Address, "default", zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	st, err := readBudget(ctx, c, run)
	if err != nil {
		t.Fatalf("the budget of %s: %v", run, err)
	}
	return st
}
