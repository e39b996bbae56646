package sweepclient

import (
	"path/filepath"
	"slices"
	"testing"

	"ctxlab/results"
	"ctxlab/runfolder"
	"ctxlab/specs"
)

// TestMissingRowsNamesEveryRowNotWritten: a finished sweep is done only when results.jsonl holds a row for every
// instance and arm; an absent file is every row missing (a sweep whose rows went to another machine's disk used to
// exit 0 with none), and rows of other instances or arms do not count.
func TestMissingRowsNamesEveryRowNotWritten(t *testing.T) {
	dir := t.TempDir()
	plan := &specs.Plan{Arms: []specs.Arm{{Method: "a", Model: "m"}, {Method: "b", Model: "m"}}}
	ids := []string{"i-1", "i-2"}
	missing, err := missingRows(dir, plan, ids)
	if err != nil || len(missing) != 4 {
		t.Fatalf("no results.jsonl: missing %v, %v; want all 4 rows", missing, err)
	}
	row := func(id, method string) results.Row {
		return results.Row{results.FieldInstance: id, results.FieldMethod: method, results.FieldModel: "m"}
	}
	if _, err := (results.Store{Path: runfolder.Rows(dir)}).Append([]results.Row{row("i-1", "a"), row("i-1", "b"),
		row("i-2", "b"), row("i-3", "a"), row("i-2", "c")}); err != nil {
		t.Fatal(err)
	}
	missing, err = missingRows(dir, plan, ids)
	want := []results.Key{{Instance: "i-2", Method: "a", Model: "m"}}
	if err != nil || !slices.Equal(missing, want) {
		t.Errorf("missing %v, %v; want %v", missing, err, want)
	}
	if missing, err := missingRows(filepath.Join(dir, "absent"), &specs.Plan{}, ids); err != nil || len(missing) != 0 {
		t.Errorf("a plan of no arms: missing %v, %v", missing, err)
	}
}
