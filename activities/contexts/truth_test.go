package contexts

import (
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"ctxlab/patch/diff"
)

// The worked example of docs/methods.md ("Line-level context truth"): the numbers below are computed there by hand.
var exampleFiles = map[string]string{
	"calc.py": "import math\n" +
		"\n" +
		"def area(r):\n" +
		"    return math.pi * r * r\n" +
		"\n" +
		"def scale(xs, k):\n" +
		"    out = []\n" +
		"    for x in xs:\n" +
		"        out.append(x * k)\n" +
		"    return out\n",
	"fmt.py": "def show(x):\n" +
		"    print(x)\n" +
		"    print(\"debug\", x)\n" +
		"    return x\n",
	"other.py": "def unrelated():\n    pass\n",
}

// exampleGold replaces line 4 of calc.py, inserts a line between its lines 8 and 9 (a pure insertion) and deletes
// line 3 of fmt.py.
const exampleGold = `diff --git a/calc.py b/calc.py
--- a/calc.py
+++ b/calc.py
@@ -3,3 +3,3 @@
 def area(r):
-    return math.pi * r * r
+    return math.pi * r ** 2
 
@@ -8,2 +8,3 @@
     for x in xs:
+        if x is None: continue
         out.append(x * k)
diff --git a/fmt.py b/fmt.py
--- a/fmt.py
+++ b/fmt.py
@@ -2,3 +2,2 @@
     print(x)
-    print("debug", x)
     return x
`

// exampleContext shows calc.py whole but compressed (blank lines dropped, a token deleted from lines 7 and 8, lines
// 9 and 10 cut off), other.py (no gold file), and fmt.py partially (lines 1-2).
var exampleContext = Context{Blocks: []Block{
	{Path: "calc.py", Kind: KindFile, Start: 1, Text: "import math\n" +
		"def area(r):\n" +
		"    return math.pi * r * r\n" +
		"def scale(xs, k):\n" +
		"    out =\n" +
		"    for x xs:\n"},
	{Path: "other.py", Kind: KindSnippet, Start: 1, Text: "def unrelated():\n    pass\n"},
	{Path: "fmt.py", Kind: KindSnippet, Start: 1, Text: "def show(x):\n    print(x)\n"},
}}

func readExample(p string) (string, bool) { s, ok := exampleFiles[p]; return s, ok }

func near(t *testing.T, name string, got *float64, want float64) {
	t.Helper()
	if got == nil {
		t.Errorf("%s = nil, want %.4f", name, want)
		return
	}
	if math.Abs(*got-want) > 1e-9 {
		t.Errorf("%s = %.4f, want %.4f", name, *got, want)
	}
}

func TestGoldOfWorkedExample(t *testing.T) {
	if _, err := diff.ApplyFiles(func(p string) ([]byte, bool) {
		s, ok := exampleFiles[p]
		return []byte(s), ok
	}, exampleGold); err != nil {
		t.Fatalf("the example's gold patch does not apply: %v", err)
	}
	g, err := GoldOf(exampleGold, readExample)
	if err != nil {
		t.Fatal(err)
	}
	// Line 4 is replaced; the insertion counts the lines on either side of it (8 and 9); fmt.py's line 3 is deleted.
	if got := fmtLines(g.Lines); got != "calc.py:4,8,9 fmt.py:3" {
		t.Errorf("gold lines = %s", got)
	}
	// The enclosing blocks: def area (3-4) and def scale (6-10) of calc.py, def show (1-4) of fmt.py.
	if got := fmtLines(g.Blocks); got != "calc.py:3,4,6,7,8,9,10 fmt.py:1,2,3,4" {
		t.Errorf("gold block lines = %s", got)
	}
	if strings.Join(g.Files, " ") != "calc.py fmt.py" {
		t.Errorf("gold files = %v", g.Files)
	}
}

func TestTruthWorkedExample(t *testing.T) {
	g, err := GoldOf(exampleGold, readExample)
	if err != nil {
		t.Fatal(err)
	}
	tr := MeasureTruth(exampleContext, g, readExample)
	if tr.GoldLines != 4 || tr.GoldBlockLines != 11 || tr.ContextLines != 10 {
		t.Errorf("gold lines %d, block lines %d, context lines %d; want 4, 11, 10",
			tr.GoldLines, tr.GoldBlockLines, tr.ContextLines)
	}
	near(t, "file recall", tr.FileRecall, 1)           // 2 of 2 gold files shown
	near(t, "file precision", tr.FilePrecision, 2.0/3) // 2 of 3 files shown are gold
	near(t, "block recall", tr.BlockRecall, 5.0/11)    // calc 3,4,6 and fmt 1,2 of 11
	near(t, "block precision", tr.BlockPrecision, 5.0/10)
	near(t, "line recall", tr.LineRecall, 1.0/4) // calc 4 only: 8 lost a token, 9 was cut, fmt 3 not shown
	near(t, "line precision", tr.LinePrecision, 1.0/10)
	// The same context's epsilon, for the docs' table: 8 of 10 lines verbatim.
	near(t, "epsilon", Measure(exampleContext, g.Files, readExample).Epsilon, 8.0/10)
}

// A line shown elsewhere in the same file is not the gold line: a set of shown texts would count the gold
// "    return x" at line 9 as present because line 4 holds the same text.
func TestTruthDuplicateLineElsewhereIsNotShown(t *testing.T) {
	files := map[string]string{"d.py": "def a(x):\n    x += 1\n    x *= 2\n    return x\n\n" +
		"def b(x):\n    x -= 1\n    x /= 2\n    return x\n"}
	read := func(p string) (string, bool) { s, ok := files[p]; return s, ok }
	gold := "--- a/d.py\n+++ b/d.py\n@@ -8,2 +8,2 @@\n     x /= 2\n-    return x\n+    return -x\n"
	g, err := GoldOf(gold, read)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmtLines(g.Lines); got != "d.py:9" {
		t.Fatalf("gold lines = %s", got)
	}
	c := Context{Blocks: []Block{{Path: "d.py", Kind: KindSnippet, Start: 1,
		Text: "def a(x):\n    x += 1\n    x *= 2\n    return x\n"}}}
	tr := MeasureTruth(c, g, read)
	near(t, "line recall", tr.LineRecall, 0)
	near(t, "line precision", tr.LinePrecision, 0)
	// A snippet of b shows it: its own line 9.
	c.Blocks = append(c.Blocks, Block{Path: "d.py", Kind: KindSnippet, Start: 6,
		Text: "def b(x):\n    x -= 1\n    x /= 2\n    return x\n"})
	tr = MeasureTruth(c, g, read)
	near(t, "line recall with b", tr.LineRecall, 1)
	near(t, "line precision with b", tr.LinePrecision, 1.0/8)
	near(t, "block recall with b", tr.BlockRecall, 1)
	near(t, "block precision with b", tr.BlockPrecision, 4.0/8)
}

// Insertions at a file's start, at its end and after a blank line count the nearest non-blank lines around the
// insertion point that exist; a created file has no old lines, so it adds a gold file but no gold lines.
func TestGoldOfInsertionsAndCreatedFiles(t *testing.T) {
	files := map[string]string{"e.go": "package e\n\nfunc E() {}\n\nvar X = 1\n"}
	read := func(p string) (string, bool) { s, ok := files[p]; return s, ok }
	gold := "--- a/e.go\n+++ b/e.go\n@@ -0,0 +1 @@\n+// Package e.\n" +
		"@@ -3,0 +5,2 @@\n+\n+func F() {}\n" + // after line 3 (the blank line 4 is skipped: 3 and 5)
		"@@ -5,0 +9 @@\n+var Y = 2\n" + // after the last line
		"--- /dev/null\n+++ b/new.go\n@@ -0,0 +1 @@\n+package e\n"
	g, err := GoldOf(gold, read)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmtLines(g.Lines); got != "e.go:1,3,5" {
		t.Errorf("gold lines = %s, want e.go:1,3,5", got)
	}
	if strings.Join(g.Files, " ") != "e.go new.go" {
		t.Errorf("gold files = %v", g.Files)
	}
	tr := MeasureTruth(Context{}, g, read)
	if tr.LineRecall == nil || *tr.LineRecall != 0 || tr.LinePrecision != nil || tr.FilePrecision != nil {
		t.Errorf("empty context: %+v", tr)
	}
	g, err = GoldOf("--- /dev/null\n+++ b/new.go\n@@ -0,0 +1 @@\n+package e\n", read)
	if err != nil {
		t.Fatal(err)
	}
	if tr := MeasureTruth(Context{}, g, read); tr.LineRecall != nil || tr.BlockRecall != nil || tr.GoldLines != 0 {
		t.Errorf("a patch creating files only has no line truth: %+v", tr)
	}
}

func fmtLines(m map[string][]int) string {
	var parts []string
	for _, p := range slices.Sorted(maps.Keys(m)) {
		var ns []string
		for _, n := range m[p] {
			ns = append(ns, strconv.Itoa(n))
		}
		parts = append(parts, p+":"+strings.Join(ns, ","))
	}
	return strings.Join(parts, " ")
}
