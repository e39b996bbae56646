package sweepclient

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ctxlab/results"
	"ctxlab/runfolder"
	"ctxlab/runlog"
)

// writeRun writes a run folder under runs holding attempts and rows as JSON lines, as a finished sweep leaves them.
func writeRun(t *testing.T, runs, name string, attempts []runlog.Attempt, rows []results.Row) string {
	t.Helper()
	dir := filepath.Join(runs, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	lines := func(vs ...any) []byte {
		var b bytes.Buffer
		for _, v := range vs {
			line, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			b.Write(append(line, '\n'))
		}
		return b.Bytes()
	}
	var as, rs []any
	for _, a := range attempts {
		as = append(as, a)
	}
	for _, r := range rows {
		rs = append(rs, r)
	}
	if err := os.WriteFile(runfolder.Attempts(dir), lines(as...), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(runfolder.Rows(dir), lines(rs...), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// twoIssueRun is a finished run of method m on two issues: i1's row has an endpoint's error, i2's none.
func twoIssueRun(t *testing.T) (runs, dir string) {
	runs = t.TempDir()
	first := time.Now().Add(-10 * time.Minute).UTC()
	var attempts []runlog.Attempt
	for i, inst := range []string{"i1", "i2"} {
		at := first.Add(time.Duration(i) * time.Minute)
		attempts = append(attempts,
			runlog.Attempt{Time: at, Event: runlog.EventStart, Instance: inst, Node: "patch-" + inst,
				Activity: "patch", Step: "m.patch", Attempt: 1},
			runlog.Attempt{Time: at.Add(30 * time.Second), Event: runlog.EventDone, Instance: inst,
				Node: "patch-" + inst, Activity: "patch", Step: "m.patch", Attempt: 1})
	}
	row := func(inst string, err any) results.Row {
		return results.Row{results.FieldInstance: inst, results.FieldMethod: "m", results.FieldModel: "offline",
			results.FieldError: err}
	}
	dir = writeRun(t, runs, "two", attempts, []results.Row{row("i1", "step patch: timed out (StartToClose)"),
		row("i2", nil)})
	return runs, dir
}

func TestLocateResults(t *testing.T) {
	runs, dir := twoIssueRun(t)
	for _, tc := range []struct{ name, file, dir string }{
		{"two", runfolder.Rows(dir), dir},               // a run under runs
		{dir, runfolder.Rows(dir), dir},                 // a folder holding results.jsonl
		{runfolder.Rows(dir), runfolder.Rows(dir), dir}, // the file itself
	} {
		file, got, err := LocateResults(tc.name, runs)
		if err != nil || file != tc.file || got != tc.dir {
			t.Errorf("LocateResults(%q) = %q, %q, %v; want %q, %q", tc.name, file, got, err, tc.file, tc.dir)
		}
	}
	if _, _, err := LocateResults("gone", runs); err == nil ||
		!strings.Contains(err.Error(), filepath.Join(runs, "gone", "results.jsonl")) {
		t.Errorf("a run with no results: %v, want an error naming the file looked for", err)
	}
	if _, err := runFolder(runs, "gone"); err == nil || !strings.Contains(err.Error(), "no run folder") {
		t.Errorf("runFolder of a missing run: %v", err)
	}
}

// A run folder without a recorded spec still has a shape: what the records name, and a note saying so.
func TestReadShapeWithoutSpec(t *testing.T) {
	_, dir := twoIssueRun(t)
	sh := ReadShape(dir)
	if sh.Plan != nil || sh.Instances != nil || !strings.Contains(sh.Note, "no spec recorded") {
		t.Errorf("shape without a spec: %+v", sh)
	}
}
