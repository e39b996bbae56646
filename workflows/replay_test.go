package workflows

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// Histories of finished Sweep and Issue workflows, exported from a demo sweep (2 instances; no_source,
// oracle_files and cq2care) made by an earlier version, replay against today's workflow code: a researcher who
// upgrades ctxlab can resume a paused sweep. A change to what the workflows do on replay must go behind
// workflow.GetVersion; when it does, add the new version's histories beside these (name-vN.json), keep the old.
// The v2 histories carry the markers of resumeChange and infraChange; issue-spendcap-v2 is an issue that waited at
// the spend cap and was resumed after the cap was raised.
// The v3 histories (testkit/orchbench's TestSaveHistories) run cheap nodes and offline model steps as local
// activities (localChange): their outputs are marker events. The agentactivity-v3 histories were made by that code
// with the agent method: its node is one agent activity.
// The v4 histories (the same methods and agent) run the agent node as the Agent child workflow (agentChange): the
// Issue's history holds only the child's start and result, and agent-v4 is that child's own history, its turns as
// activities. sweep-safeids-v5 is a Sweep whose second instance's id (unicode and a newline) is no plain workflow id:
// it holds safeIDChange's marker and that Issue's digested id. issue-failedusage-v6 holds failedUsageChange's marker
// (a failed node's model calls count in its rows); its Sweep and Agent histories are v5's. The rows-v7 histories
// hold rowsChange's marker (the Issue stores its rows and names them in its result) and starterSummaryChange's (the
// Sweep lists the stored rows and leaves summary.md to the starter). sweep-summary-v8 holds starterSummaryChange's
// version 2: the Sweep's result also carries the summary of its stored rows (SummarizeStored). budget-v1 is a Budget workflow's first run
// (testkit/orchbench's TestSaveBudgetHistories): limits signalled, syncs granted, settled and paced, a holder's lease
// lapsed on its timer, and its continue-as-new. budget-v2 holds limitsFirstChange's marker, and the cap raised while no
// worker ran the budget taken in one workflow task with a sync, which is granted under it.
func TestSavedHistoriesReplay(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "histories", "*.json"))
	if err != nil || len(files) < 2 {
		t.Fatalf("saved histories: %v %v", files, err)
	}
	replayer := worker.NewWorkflowReplayer()
	replayer.RegisterWorkflowWithOptions(Sweep, workflow.RegisterOptions{Name: SweepName})
	replayer.RegisterWorkflowWithOptions(Issue, workflow.RegisterOptions{Name: IssueName})
	replayer.RegisterWorkflowWithOptions(Agent, workflow.RegisterOptions{Name: AgentName})
	replayer.RegisterWorkflowWithOptions(Budget, workflow.RegisterOptions{Name: BudgetName})
	for _, f := range files {
		h, err := readHistory(f)
		if err != nil {
			t.Fatal(err)
		}
		// An Issue names its Agent children after its own ID, which the history does not hold: the replay takes it
		// from the first child's.
		opts := worker.ReplayWorkflowHistoryOptions{OriginalExecution: workflow.Execution{ID: agentParentID(h)}}
		if err := replayer.ReplayWorkflowHistoryWithOptions(nil, h, opts); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	for _, want := range []string{"issue-v1.json", "issue-v3.json", "issue-agentactivity-v3.json", "issue-v4.json",
		"agent-v4.json", "sweep-v4.json", "sweep-safeids-v5.json", "issue-failedusage-v6.json",
		"issue-rows-v7.json", "sweep-rows-v7.json", "sweep-summary-v8.json", "budget-v1.json",
		"budget-v2.json"} {
		if !slices.Contains(files, filepath.Join("testdata", "histories", want)) {
			t.Errorf("no saved history %s", want)
		}
	}
}

// readHistory reads a history exported as JSON (the Web UI's or tctl's download, or TestSaveHistories').
func readHistory(file string) (*historypb.History, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return client.HistoryFromJSON(f, client.HistoryJSONOptions{})
}

// agentParentID is the ID of the Issue workflow that started the first Agent child in h ("" when none did).
func agentParentID(h *historypb.History) string {
	for _, ev := range h.Events {
		if a := ev.GetStartChildWorkflowExecutionInitiatedEventAttributes(); a.GetWorkflowType().GetName() == AgentName {
			id := a.GetWorkflowId()
			return id[:max(strings.LastIndex(id, "/agent/"), 0)]
		}
	}
	return ""
}
