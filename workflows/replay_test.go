package workflows

import (
	"path/filepath"
	"testing"

	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// Histories of finished Sweep and Issue workflows, exported from a demo sweep (2 instances; no_source,
// oracle_files and cq2care) made by an earlier version, replay against today's workflow code: a researcher who
// upgrades ctxlab can resume a paused sweep. A change to what the workflows do on replay must go behind
// workflow.GetVersion; when it does, add the new version's histories beside these (name-vN.json), keep the old.
// The v2 histories carry the markers of resumeChange and infraChange; issue-spendcap-v2 is an issue that waited at
// the spend cap and was resumed after the cap was raised.
// The v3 histories (internal/orchbench's TestSaveHistories) run cheap nodes and offline model steps as local
// activities (localChange): their outputs are marker events.
func TestSavedHistoriesReplay(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "histories", "*.json"))
	if err != nil || len(files) < 2 {
		t.Fatalf("saved histories: %v %v", files, err)
	}
	replayer := worker.NewWorkflowReplayer()
	replayer.RegisterWorkflowWithOptions(Sweep, workflow.RegisterOptions{Name: SweepName})
	replayer.RegisterWorkflowWithOptions(Issue, workflow.RegisterOptions{Name: IssueName})
	for _, f := range files {
		if err := replayer.ReplayWorkflowHistoryFromJSONFile(nil, f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}
