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

	"ctxlab/results"
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
