package runlog

import (
	"os"
	"path/filepath"
	"testing"
)

// TestReadSkipsTornLines: a process killed mid-append leaves a partial last line; readers count it and go on.
func TestReadSkipsTornLines(t *testing.T) {
	p := filepath.Join(t.TempDir(), "calls.jsonl")
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

func TestTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "calls.jsonl")
	tail := Tail[Call]{Path: path}
	if got, err := tail.Next(); err != nil || got != nil {
		t.Fatalf("missing file: %v %v", got, err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	write := func(s string) {
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"instance":"a","cost_usd":1}` + "\n" + `{"instance":"b",`)
	got, _ := tail.Next()
	if len(got) != 1 || got[0].Instance != "a" {
		t.Fatalf("first read %+v", got)
	}
	write(`"cost_usd":2}` + "\nnot json\n")
	got, _ = tail.Next()
	if len(got) != 1 || got[0].Instance != "b" || got[0].CostUSD != 2 || tail.Bad != 1 {
		t.Fatalf("second read %+v bad %d", got, tail.Bad)
	}
	if got, _ = tail.Next(); len(got) != 0 {
		t.Fatalf("nothing new, got %+v", got)
	}
	// Replaced by a shorter file: read from the start.
	if err := os.WriteFile(path, []byte(`{"instance":"c"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, _ = tail.Next(); len(got) != 1 || got[0].Instance != "c" {
		t.Fatalf("after replace %+v", got)
	}
}
