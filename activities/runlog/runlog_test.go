package runlog

import (
	"os"
	"path/filepath"
	"testing"
)

// TestReadSkipsTornLines: a process killed mid-append leaves a partial last line; readers count it and go on.
func TestReadSkipsTornLines(t *testing.T) {
	p := filepath.Join(t.TempDir(), CallsFile)
	for _, c := range []Call{{Key: "a", CostUSD: 1}, {Key: "b", Cached: true}} {
		if err := Append(p, c); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"key":"c","cost_u`)
	f.Close()
	calls, bad, err := Read[Call](p)
	if err != nil || bad != 1 || len(calls) != 2 || calls[0].Key != "a" || !calls[1].Cached || calls[1].Paid() {
		t.Fatalf("calls %+v bad %d err %v", calls, bad, err)
	}
	if none, bad, err := Read[Call](filepath.Join(t.TempDir(), "missing")); err != nil || bad != 0 || len(none) != 0 {
		t.Fatalf("a missing file must read as empty: %v %d %v", none, bad, err)
	}
}
