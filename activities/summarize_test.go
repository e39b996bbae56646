package activities

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"ctxlab/activities/api"
	"ctxlab/results"
	"ctxlab/runfolder"
	"ctxlab/specs"
	"ctxlab/store/cas"
)

// The summary a finished sweep's result carries is made from the rows its issues stored, and reads as the
// summary.md the starter writes from the same rows in results.jsonl, though this worker's run folder has none.
func TestSummarizeStoredReadsAsSummaryFile(t *testing.T) {
	ctx := context.Background()
	row := func(instance, method string, resolved bool) results.Row {
		return results.Row{results.FieldInstance: instance, results.FieldMethod: method, results.FieldModel: "m",
			specs.Resolved.Name: resolved, specs.Rho.Name: 1.0, specs.ContextTokens.Name: 100.0}
	}
	perIssue := map[string][]results.Row{
		"i1": {row("i1", "a", true), row("i1", "b", false)},
		"i2": {row("i2", "a", false), row("i2", "b", false)},
		"i3": {row("i3", "a", true), row("i3", "b", true)},
	}
	worker := New(t.TempDir(), zerolog.Nop())
	in := api.SummarizeStoredInput{Run: "r", Title: "ctxlab: r",
		Order: []results.Key{{Method: "b", Model: "m"}, {Method: "a", Model: "m"}}}
	var all []results.Row
	for _, id := range []string{"i1", "i2", "i3"} {
		ref, err := worker.StoreRows(ctx, api.RecordInput{Run: "r", Rows: perIssue[id]})
		if err != nil {
			t.Fatal(err)
		}
		in.Rows = append(in.Rows, api.IssueRows{Instance: id, Rows: ref})
		all = append(all, perIssue[id]...)
	}
	if _, err := os.Stat(runfolder.Rows(worker.RunDir("r"))); !os.IsNotExist(err) {
		t.Fatalf("the worker's run folder has results.jsonl (%v): the summary must come from the store", err)
	}
	got, err := worker.SummarizeStored(ctx, in)
	if err != nil {
		t.Fatal(err)
	}

	// The starter's way: the same rows written to results.jsonl, summary.md written from it.
	starter := t.TempDir()
	if _, err := (results.Store{Path: runfolder.Rows(starter)}).Append(all); err != nil {
		t.Fatal(err)
	}
	want, err := WriteSummary(starter, in.Title, in.Order)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("the stored rows' summary:\n%s\nsummary.md of the same rows:\n%s", got, want)
	}

	// A reference the store does not hold names its instance.
	in.Rows = append(in.Rows, api.IssueRows{Instance: "i4", Rows: cas.RefOf([]byte("never stored"))})
	if _, err := worker.SummarizeStored(ctx, in); err == nil || !strings.Contains(err.Error(), "instance i4") {
		t.Errorf("a missing reference: %v, want an error naming instance i4", err)
	}
}
