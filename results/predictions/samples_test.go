package predictions

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"ctxlab/results"
	"ctxlab/store/cas"
)

// TestExportSamplesApart: the rows of a method's patch samples export as one set of predictions per sample, each
// with one patch per instance (a harness grades one per instance), never k predictions of one instance in a file.
func TestExportSamplesApart(t *testing.T) {
	run := t.TempDir()
	store, err := cas.NewDir(filepath.Join(run, "cas"))
	if err != nil {
		t.Fatal(err)
	}
	var rows []results.Row
	for _, sample := range []float64{0, 1} {
		for _, id := range []string{"i-1", "i-2"} {
			ref, _ := store.Put(context.Background(), []byte(id+" sample "+string(rune('0'+int(sample)))+"\n"))
			rows = append(rows, results.Row{results.FieldInstance: id, results.FieldMethod: "s",
				results.FieldModel: "m", results.FieldSample: sample, "patch_ref": string(ref)})
		}
	}
	if n, err := (results.Store{Path: filepath.Join(run, "results.jsonl")}).Append(rows); err != nil || n != 4 {
		t.Fatalf("appended %d rows: %v", n, err)
	}
	res, err := Export(context.Background(), run)
	if err != nil || len(res.Files) != 2 {
		t.Fatalf("export: %+v, %v; want a file per sample", res, err)
	}
	for path, n := range res.Files {
		ps, err := ReadFile(path)
		if err != nil || n != 2 || len(ps) != 2 || ps[0].InstanceID == ps[1].InstanceID {
			t.Fatalf("%s: %d written, read %+v, %v", path, n, ps, err)
		}
		sample := ps[0].ModelNameOrPath[len(ps[0].ModelNameOrPath)-1:]
		if !strings.HasSuffix(ps[0].ModelNameOrPath, "_sample"+sample) ||
			ps[0].ModelPatch != ps[0].InstanceID+" sample "+sample+"\n" {
			t.Errorf("%s holds %+v", path, ps)
		}
	}
}
