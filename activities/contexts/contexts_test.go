package contexts

import (
	"math"
	"strings"
	"testing"
)

var repoFiles = map[string]string{
	"a.go": "package a\n\nfunc A() int {\n\treturn 1\n}\n",
	"b.go": "package b\n\nfunc B() {}\n",
	"c.go": "package c\n",
}

func read(p string) (string, bool) { s, ok := repoFiles[p]; return s, ok }

func TestMeasureWholeGoldFile(t *testing.T) {
	c := Context{Blocks: []Block{{Path: "a.go", Kind: KindFile, Start: 1, Text: repoFiles["a.go"]}}}
	m := Measure(c, []string{"a.go", "b.go"}, read)
	if m.Rho != 0.5 {
		t.Errorf("rho = %v, want 0.5 (one of two gold files shown)", m.Rho)
	}
	if m.Epsilon == nil || *m.Epsilon != 1 {
		t.Errorf("epsilon = %v, want 1 for a verbatim file", m.Epsilon)
	}
	if m.Lines != 4 {
		t.Errorf("lines = %d, want 4 non-blank lines", m.Lines)
	}
	if m.GoldLineShare == nil || *m.GoldLineShare != 1 || m.GoldFilesMissed {
		t.Errorf("gold share %v missed %v", m.GoldLineShare, m.GoldFilesMissed)
	}
}

func TestMeasureCorruptedAndNonGold(t *testing.T) {
	c := Context{Blocks: []Block{
		// Two of four lines altered; trailing spaces do not count as changes.
		{Path: "a.go", Kind: KindSnippet, Start: 1, Text: "package a   \nfunc A() int {\n\treturn\n}}\n"},
		{Path: "c.go", Kind: KindFile, Start: 1, Text: "package c\n"},
	}}
	m := Measure(c, []string{"a.go"}, read)
	if math.Abs(*m.Epsilon-3.0/5) > 1e-9 {
		t.Errorf("epsilon = %v, want 3/5", *m.Epsilon)
	}
	if math.Abs(*m.GoldLineShare-4.0/5) > 1e-9 {
		t.Errorf("gold line share = %v, want 4/5", *m.GoldLineShare)
	}
	if m.Rho != 1 {
		t.Errorf("rho = %v", m.Rho)
	}
}

func TestMeasureNoSource(t *testing.T) {
	m := Measure(Context{Issue: "x"}, []string{"a.go"}, read)
	if m.Rho != 0 || m.Epsilon != nil || !m.GoldFilesMissed || m.Lines != 0 {
		t.Errorf("no-source metrics = %+v", m)
	}
}

func TestRenderAndFiles(t *testing.T) {
	c := Context{Blocks: []Block{
		{Path: "b.go", Kind: KindFile, Start: 1, Text: "x\n"},
		{Path: "a.go", Kind: KindSnippet, Start: 3, Text: "l3\nl4"},
		{Path: "b.go", Kind: KindSnippet, Start: 1, Text: "x\n"},
	}}
	r := c.Render()
	if !strings.Contains(r, "[b.go]\nx\n") || !strings.Contains(r, "[a.go lines 3-4]\nl3\nl4\n") {
		t.Errorf("render:\n%s", r)
	}
	if f := c.Files(); len(f) != 2 || f[0] != "a.go" || f[1] != "b.go" {
		t.Errorf("files = %v", f)
	}
}
