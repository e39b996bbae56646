package results

import (
	"ctxlab/runfolder"
	"ctxlab/specs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func row(inst, method string, resolved bool, rho float64, tokens int) Row {
	return Row{FieldInstance: inst, FieldMethod: method, FieldModel: "m", specs.Resolved.Name: resolved,
		specs.PatchApplied.Name: resolved, specs.Rho.Name: rho, specs.Epsilon.Name: 1.0,
		specs.ContextTokens.Name: float64(tokens), FieldError: nil}
}

func TestAppendWritesEachKeyOnce(t *testing.T) {
	s := Store{Path: filepath.Join(t.TempDir(), "results.jsonl")}
	n, err := s.Append([]Row{row("i1", "a", true, 1, 10), row("i1", "b", false, 0, 0)})
	if err != nil || n != 2 {
		t.Fatalf("append = %d, %v", n, err)
	}
	// A retried record activity sends the same rows again.
	n, err = s.Append([]Row{row("i1", "a", true, 1, 10), row("i2", "a", true, 1, 12)})
	if err != nil || n != 1 {
		t.Fatalf("second append wrote %d rows, want only the new one", n)
	}
	rows, bad, err := ReadFile(s.Path)
	if err != nil || len(bad) != 0 || len(rows) != 3 {
		t.Fatalf("read %d rows, %d bad, %v", len(rows), len(bad), err)
	}
}

func TestAppendConcurrentAndTornLine(t *testing.T) {
	s := Store{Path: filepath.Join(t.TempDir(), "results.jsonl")}
	// A crash left half a line behind.
	if err := os.WriteFile(s.Path, []byte(`{"instance_id":"i0","method":"a","model":"m"}`+"\n"+`{"instance_id":"i9","met`), 0o644); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if _, err := s.Append([]Row{row("i1", "a", true, 1, 1), row(string(rune('A'+i)), "a", true, 1, 1)}); err != nil {
				t.Error(err)
			}
		}(i)
	}
	wg.Wait()
	rows, bad, err := ReadFile(s.Path)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 10 {
		t.Errorf("rows = %d, want 10 (i0, i1 once, 8 others)", len(rows))
	}
	// The torn line is cut out before the first append, not buried under the new rows; its bytes are kept aside.
	if len(bad) != 0 {
		t.Errorf("torn line still in the file: %+v", bad)
	}
	if kept, err := os.ReadFile(s.Path + runfolder.TornSuffix); err != nil || string(kept) != `{"instance_id":"i9","met`+"\n" {
		t.Errorf("torn bytes kept = %q, %v", kept, err)
	}
}

func TestSummarizeAndMarkdown(t *testing.T) {
	rows := []Row{
		row("i1", "b", true, 1, 100), row("i2", "b", false, 0.5, 300),
		row("i1", "a", false, 0, 0), row("i2", "a", false, 0, 0),
	}
	rows[3][specs.Epsilon.Name] = nil
	rows[2][specs.Epsilon.Name] = nil
	rows[3][FieldError] = "step patch: boom"
	rows[0][specs.LineRecall.Name], rows[1][specs.LineRecall.Name] = 0.5, 0.25
	sums := Summarize(rows, []Key{{Method: "a", Model: "m"}, {Method: "b", Model: "m"}})
	if len(sums) != 2 || sums[0].Method != "a" || sums[1].Method != "b" {
		t.Fatalf("order = %+v", sums)
	}
	b := sums[1]
	if b.N != 2 || b.Stat(specs.Resolved) != (Value{50, true}) || b.Stat(specs.PatchApplied) != (Value{50, true}) ||
		b.Stat(specs.Rho) != (Value{0.75, true}) || b.Stat(specs.ContextTokens) != (Value{200, true}) ||
		!b.Stat(specs.Epsilon).OK {
		t.Errorf("b = %+v", b)
	}
	a := sums[0]
	if a.Stat(specs.Resolved) != (Value{0, true}) || a.Stat(specs.Epsilon).OK || a.Errors != 1 {
		t.Errorf("a = %+v", a)
	}
	md := Markdown("demo", sums)
	if !strings.Contains(md, "| b | m | 2 | 50.0 | 50.0 | 0.750 | 1.000 | 0.375 | – | 200 | – | – | 0 |") {
		t.Errorf("markdown row for b wrong:\n%s", md)
	}
	if !strings.Contains(md, "| a | m | 2 | 0.0 | 0.0 | 0.000 | – | – | – | 0 | – | – | 1 |") {
		t.Errorf("markdown row for a wrong:\n%s", md)
	}
}
