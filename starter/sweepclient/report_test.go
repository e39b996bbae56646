package sweepclient

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ctxlab/results"
	"ctxlab/runfolder"
	"ctxlab/specs"
	"ctxlab/starter/exitcode"
)

// Report over a bare results.jsonl (no spec recorded): the anchor is the first method unless --anchor names one,
// the files go to --out, and a missing run is a usage error naming the file looked for.
func TestReportOfResultsFile(t *testing.T) {
	runs := t.TempDir()
	var rows []results.Row
	for i := range 12 {
		for j, m := range []string{"a", "b"} {
			rows = append(rows, results.Row{results.FieldInstance: "i" + string(rune('a'+i)), results.FieldMethod: m,
				results.FieldModel: "offline", results.FieldError: nil, specs.PatchApplied.Name: true,
				specs.Resolved.Name: (i+j)%3 == 0})
		}
	}
	dir := writeRun(t, runs, "exp", nil, rows)
	out := filepath.Join(t.TempDir(), "rep")
	var stdout, stderr bytes.Buffer
	o := ReportOptions{Name: runfolder.Rows(dir), Runs: runs, Out: out, Anchor: "b", Resamples: 100, Seed: 1,
		NoFigures: true, Alternative: "observed"}
	if code := Report(o, &stdout, &stderr); code != exitcode.OK {
		t.Fatalf("report: exit %d\n%s", code, stderr.String())
	}
	md, err := os.ReadFile(runfolder.Report(out))
	if err != nil || !strings.Contains(string(md), "Anchor: b (--anchor)") {
		t.Errorf("report.md (%v):\n%s", err, md)
	}
	if !strings.Contains(stdout.String(), "report: "+runfolder.Report(out)) {
		t.Errorf("stdout does not name the report:\n%s", stdout.String())
	}
	if _, err := os.Stat(filepath.Join(out, "figures")); err == nil {
		t.Error("--no-figures wrote figures")
	}
	stderr.Reset()
	o.Name = "nothere"
	if code := Report(o, &stdout, &stderr); code != exitcode.Usage ||
		!strings.Contains(stderr.String(), "starter report: no results at "+filepath.Join(runs, "nothere")) {
		t.Errorf("report of no run: exit %d, %q", code, stderr.String())
	}
}
