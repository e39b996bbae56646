package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ctxlab/results"
	"ctxlab/specs"
	"ctxlab/starter/sweepclient"
	"ctxlab/store/cas"
)

// Names from results.jsonl become folder names: a model, method or instance with '/' or '..' in it must not write
// outside the export folder, and two names must not land in one folder.
func TestAuditExportKeepsHostileNamesInside(t *testing.T) {
	root := t.TempDir()
	runs := filepath.Join(root, "runs")
	dir := filepath.Join(runs, "hostile")
	store, err := cas.NewDir(filepath.Join(dir, "cas"))
	if err != nil {
		t.Fatal(err)
	}
	patch := "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"
	ref, err := store.Put(context.Background(), []byte(patch))
	if err != nil {
		t.Fatal(err)
	}
	rows := []results.Row{
		{results.FieldInstance: "..", results.FieldMethod: "../../../escape", results.FieldModel: "..", "patch_ref": string(ref)},
		{results.FieldInstance: "ok__repo-1", results.FieldMethod: "a/b", results.FieldModel: "/abs/olute"},
		{results.FieldInstance: "ok__repo-1", results.FieldMethod: "a_b", results.FieldModel: "/abs/olute"},
		{results.FieldInstance: "ok__repo-1", results.FieldMethod: "plain", results.FieldModel: "offline"},
		// Longer than a file name may be, and with a NUL and a newline.
		{results.FieldInstance: strings.Repeat("long-", 2048) + "\x00\n", results.FieldMethod: "plain",
			results.FieldModel: "offline"},
	}
	var lines []byte
	for _, r := range rows {
		b, _ := json.Marshal(r)
		lines = append(append(lines, b...), '\n')
	}
	if err := os.WriteFile(filepath.Join(dir, "results.jsonl"), lines, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(root, "deep", "export")
	stdout, _ := mainOut(t, "audit", "hostile", "--runs", runs, "--export", out)
	if !strings.Contains(stdout, fmt.Sprintf("exported %d rows", len(rows))) {
		t.Errorf("audit --export: %s", stdout)
	}

	// Every file written is under the export folder, and there is one row.json per row.
	var rowFiles []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if !strings.HasPrefix(path, runs+string(filepath.Separator)) && !strings.HasPrefix(path, out+string(filepath.Separator)) {
			t.Errorf("a file outside the run and the export folder: %s", path)
		}
		if strings.HasPrefix(path, out) && d.Name() == sweepclient.ExportRow {
			rowFiles = append(rowFiles, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rowFiles) != len(rows) {
		t.Errorf("%d row.json files, want %d (names collided): %q", len(rowFiles), len(rows), rowFiles)
	}
	for _, p := range rowFiles {
		rel, _ := filepath.Rel(out, p)
		if parts := strings.Split(rel, string(filepath.Separator)); len(parts) != 4 {
			t.Errorf("%s is not MODEL/METHOD/INSTANCE/row.json", rel)
		}
	}
	// A plain name is kept as it is, and the hostile row's folder holds its patch and its row.
	if _, err := os.Stat(filepath.Join(out, "offline", "plain", "ok__repo-1", sweepclient.ExportRow)); err != nil {
		t.Errorf("a plain name was changed: %v", err)
	}
	for _, p := range rowFiles {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var r results.Row
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if r.String(results.FieldMethod) != "../../../escape" {
			continue
		}
		got, err := os.ReadFile(filepath.Join(filepath.Dir(p), sweepclient.ExportPatch))
		if err != nil || string(got) != patch {
			t.Errorf("the hostile row's patch.diff: %q, %v", got, err)
		}
	}
}

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
		if err := json.Unmarshal([]byte(read(sweepclient.ExportRow)), &exported); err != nil || exported.Key() != k ||
			exported.String("grade_status") != r.String("grade_status") {
			t.Errorf("%s row.json: %v (%v), want %v", folder, exported, err, r)
		}
		status := r.String("grade_status")
		wantLog := "of instance " + k.Instance + ": " + status // the grade log's header
		if status == "empty_patch" {
			wantLog = "no test ran for this row: grade_status empty_patch"
		}
		if log := read(sweepclient.ExportTestOutput); status == "" || !strings.Contains(log, wantLog) {
			t.Errorf("%s: test_output.txt does not hold the grade log of status %q:\n%.400s", folder, status, log)
		}
		patch := read(sweepclient.ExportPatch)
		context := read(sweepclient.ExportContext)
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
