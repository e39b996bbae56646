package results

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRemoveFreesKeys: removed rows come back, the rest stay in order, and Append then records a new row under a
// removed key (it skips keys already present).
func TestRemoveFreesKeys(t *testing.T) {
	s := Store{Path: filepath.Join(t.TempDir(), "results.jsonl")}
	failed := Row{FieldInstance: "i-2", FieldMethod: "a", FieldModel: "m", FieldError: "rate limited"}
	if _, err := s.Append([]Row{{FieldInstance: "i-1", FieldMethod: "a", FieldModel: "m"}, failed,
		{FieldInstance: "i-3", FieldMethod: "a", FieldModel: "m"}}); err != nil {
		t.Fatal(err)
	}
	removed, err := s.Remove(func(r Row) bool { return r[FieldError] != nil })
	if err != nil || len(removed) != 1 || removed[0].Key() != failed.Key() {
		t.Fatalf("removed %v, %v", removed, err)
	}
	if n, err := s.Append([]Row{{FieldInstance: "i-2", FieldMethod: "a", FieldModel: "m"}}); n != 1 || err != nil {
		t.Fatalf("appending the retried row: %d, %v", n, err)
	}
	rows, bad, err := ReadFile(s.Path)
	if err != nil || len(bad) != 0 || len(rows) != 3 {
		t.Fatalf("%d rows, %v bad, %v", len(rows), bad, err)
	}
	for i, want := range []string{"i-1", "i-3", "i-2"} {
		if got := rows[i].String(FieldInstance); got != want || rows[i][FieldError] != nil {
			t.Errorf("row %d: %v", i, rows[i])
		}
	}
	if _, err := (Store{Path: filepath.Join(t.TempDir(), "none")}).Remove(func(Row) bool { return true }); err != nil {
		t.Errorf("a missing file: %v", err)
	}
	_ = os.Remove(s.Path)
}
