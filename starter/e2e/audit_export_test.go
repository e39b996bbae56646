package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ctxlab/results"
	"ctxlab/specs"
)

// TestAuditExportOfSweep exports a small sweep's rows and checks each folder against the row: the row itself, its
// test log (whose header names the row's grade status), its patch, and the context of a method that shows files.
func TestAuditExportOfSweep(t *testing.T) {
	runs := t.TempDir()
	spec := demoVariant(t, "{ name: 'exp', dataset+: { limit: 1 }, anchor:: null, methods: super.methods[0:2] }")
	if _, stderr, code := runStarter(t, 10*time.Minute, "run", spec, "--runs", runs, "--quiet"); code != exitOK {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	rows, _, err := results.ReadFile(filepath.Join(runs, "exp", "results.jsonl"))
	if err != nil || len(rows) != 2 {
		t.Fatalf("%d rows, %v", len(rows), err)
	}
	out := filepath.Join(t.TempDir(), "export")
	mainOut(t, "audit", "exp", "--runs", runs, "--export", out)
	for _, r := range rows {
		k := r.Key()
		folder := filepath.Join(out, k.Model, k.Method, k.Instance)
		read := func(name string) string {
			b, err := os.ReadFile(filepath.Join(folder, name))
			if err != nil {
				t.Errorf("%s/%s/%s: %v", k.Model, k.Method, k.Instance, err)
			}
			return string(b)
		}
		var exported results.Row
		if err := json.Unmarshal([]byte(read("row.json")), &exported); err != nil || exported.Key() != k ||
			exported.String("grade_status") != r.String("grade_status") {
			t.Errorf("%s row.json: %v (%v), want %v", folder, exported, err, r)
		}
		status := r.String("grade_status")
		wantLog := "of instance " + k.Instance + ": " + status // the grade log's header
		if status == "empty_patch" {
			wantLog = "no test ran for this row: grade_status empty_patch"
		}
		if log := read("test_output.txt"); status == "" || !strings.Contains(log, wantLog) {
			t.Errorf("%s: test_output.txt does not hold the grade log of status %q:\n%.400s", folder, status, log)
		}
		patch := read("patch.diff")
		context := read("context.txt")
		if resolved, _ := r.Bool(specs.Resolved.Name); resolved && !strings.Contains(patch, "+++ b/") {
			t.Errorf("%s: a resolved row's patch.diff holds no diff: %q", folder, patch)
		}
		// oracle_files shows the gold files whole: the files its patch edits are in its context.
		if k.Method == "oracle_files" {
			for _, line := range strings.Split(patch, "\n") {
				if path, ok := strings.CutPrefix(line, "+++ b/"); ok && !strings.Contains(context, path) {
					t.Errorf("%s: context.txt does not show %s, which its patch edits", folder, path)
				}
			}
			if context == "" {
				t.Errorf("%s: empty context.txt", folder)
			}
		}
	}
}
