package results

import (
	"path/filepath"
	"strings"
	"testing"

	"ctxlab/specs"
)

// TestArmRowsOfSamples: an arm of a method of samples writes its sample index on its row, an arm of one sample
// writes none (its rows are what they were), and the store keeps one row per (instance, method, model, sample):
// every sample's row is written, and a second append of them writes nothing.
func TestArmRowsOfSamples(t *testing.T) {
	plan := specs.Plan{Format: specs.PlanFormatBorrowed, Nodes: []specs.Node{{Key: "n", Activity: "no_source"}}}
	frag := func(string) (map[string]any, bool) { return map[string]any{}, true }
	m := NewRowMerger(plan)
	single, _ := m.ArmRow("i", specs.Arm{Method: "a", Model: "m", Steps: []specs.ArmStep{{ID: "c", Key: "n"}}}, frag, nil)
	if _, has := single[FieldSample]; has {
		t.Errorf("a row of one sample carries %s: %v", FieldSample, single)
	}
	var rows []Row
	for s := range 3 {
		r, _ := m.ArmRow("i", specs.Arm{Method: "b", Model: "m", Samples: 3, Sample: s,
			Steps: []specs.ArmStep{{ID: "c", Key: "n"}}}, frag, nil)
		if r[FieldSample] != s || r.Key() != (Key{"i", "b", "m", s}) {
			t.Errorf("sample %d's row %v, key %+v", s, r, r.Key())
		}
		rows = append(rows, r)
	}
	st := Store{Path: filepath.Join(t.TempDir(), "results.jsonl")}
	if n, err := st.Append(append(rows, single)); err != nil || n != 4 {
		t.Fatalf("appended %d rows (%v), want 4", n, err)
	}
	if n, err := st.Append(rows); err != nil || n != 0 {
		t.Errorf("appended the samples again: %d (%v)", n, err)
	}
	back, _, err := ReadFile(st.Path)
	if err != nil || len(back) != 4 || back[2].Key() != (Key{"i", "b", "m", 2}) || back[3].Key() != (Key{"i", "a", "m", 0}) {
		t.Errorf("read back %v (%v)", back, err)
	}
}

// TestSummaryNotesSamples: summary.md says which methods draw samples and what their resolve rate is; a summary of
// methods of one sample has no such note.
func TestSummaryNotesSamples(t *testing.T) {
	rows := []Row{{FieldInstance: "i", FieldMethod: "a", FieldModel: "m"}}
	if md := Markdown("t", Summarize(rows, nil)); strings.Contains(md, "samples") {
		t.Errorf("a summary without samples mentions them:\n%s", md)
	}
	for s := range 2 {
		rows = append(rows, Row{FieldInstance: "i", FieldMethod: "b", FieldModel: "m", FieldSample: float64(s)})
	}
	sums := Summarize(rows, nil)
	md := Markdown("t", sums)
	if len(sums) != 2 || sums[1].N != 2 || sums[1].Samples != 2 || sums[0].Samples != 0 ||
		!strings.Contains(md, "Methods of k patch samples per issue (k): b (2).") {
		t.Errorf("summaries %+v:\n%s", sums, md)
	}
}
