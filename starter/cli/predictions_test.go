package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ctxlab/results"
	"ctxlab/results/predictions"
	"ctxlab/runfolder"
	"ctxlab/specs"
	"ctxlab/starter/exitcode"
	"ctxlab/store/cas"
)

// TestExportPredictions: starter predictions writes one SWE-bench file per model and method, each row's patch read
// from the run's store by its patch_ref; a row without one is written with an empty patch and counted on stderr,
// and a missing run folder exits 1.
func TestExportPredictions(t *testing.T) {
	runs := t.TempDir()
	dir := filepath.Join(runs, "exp")
	store, err := cas.NewDir(runfolder.CAS(dir))
	if err != nil {
		t.Fatal(err)
	}
	patch := "diff --git a/x.py b/x.py\n"
	ref, err := store.Put(context.Background(), []byte(patch))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, row := range []results.Row{
		{results.FieldInstance: "acme__x-1", results.FieldModel: "m", results.FieldMethod: "bm25",
			specs.PatchRef.Name: string(ref)},
		{results.FieldInstance: "acme__x-2", results.FieldModel: "m", results.FieldMethod: "bm25"},
	} {
		b, err := json.Marshal(row)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, string(b))
	}
	if err := os.WriteFile(runfolder.Rows(dir), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	code, stdout, stderr := runMain("predictions", "exp", "--runs", runs)
	if code != exitcode.OK || !strings.Contains(stdout, "m__bm25.jsonl\t2 predictions") ||
		!strings.Contains(stderr, "1 row(s) have no patch_ref") {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	preds, err := predictions.ReadFile(filepath.Join(dir, "predictions", "m__bm25.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, p := range preds {
		got[p.InstanceID] = p.ModelPatch
	}
	if len(got) != 2 || got["acme__x-1"] != patch || got["acme__x-2"] != "" {
		t.Errorf("predictions %+v, want acme__x-1's patch from the store and acme__x-2's empty", preds)
	}

	if code, _, stderr := runMain("predictions", "gone", "--runs", runs); code != exitcode.Fail ||
		!strings.Contains(stderr, "gone") {
		t.Errorf("a missing run: exit %d\n%s", code, stderr)
	}
}
