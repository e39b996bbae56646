package offline

import (
	"strings"
	"testing"

	"ctxlab/activities/contexts"
)

const file = `package calc

// Add adds.
func Add(a, b int) int {
	return a - b
}

func unrelated() {}

// Mul multiplies.
func Mul(a, b int) int {
	return a + b
}
`

const gold = `diff --git a/calc.go b/calc.go
--- a/calc.go
+++ b/calc.go
@@ -3,5 +3,5 @@
 // Add adds.
 func Add(a, b int) int {
-	return a - b
+	return a + b
 }
 
@@ -10,4 +10,4 @@
 // Mul multiplies.
 func Mul(a, b int) int {
-	return a + b
+	return a * b
 }
`

func TestOraclePatchWholeFileEmitsEverything(t *testing.T) {
	c := contexts.Context{Blocks: []contexts.Block{{Path: "calc.go", Kind: contexts.KindFile, Text: file}}}
	res, err := OraclePatch(gold, c)
	if err != nil {
		t.Fatal(err)
	}
	if res.Emitted != 2 || res.Total != 2 {
		t.Fatalf("emitted %d of %d hunks, want 2 of 2", res.Emitted, res.Total)
	}
	if !strings.Contains(res.Patch, "+\treturn a + b") || !strings.Contains(res.Patch, "+\treturn a * b") {
		t.Errorf("patch lacks gold lines:\n%s", res.Patch)
	}
}

func TestOraclePatchNeedsEveryLineVerbatim(t *testing.T) {
	// Only the Add function shown, and with its body corrupted: nothing can be emitted for it.
	snippet := "// Add adds.\nfunc Add(a, b int) int {\n\treturn a b\n}\n// Mul multiplies.\nfunc Mul(a, b int) int {\n\treturn a + b\n}\n"
	c := contexts.Context{Blocks: []contexts.Block{{Path: "calc.go", Kind: contexts.KindSnippet, Start: 3, Text: snippet}}}
	res, err := OraclePatch(gold, c)
	if err != nil {
		t.Fatal(err)
	}
	if res.Emitted != 1 || res.Total != 2 {
		t.Fatalf("emitted %d of %d, want only the Mul hunk", res.Emitted, res.Total)
	}
	if strings.Contains(res.Patch, "a - b") || !strings.Contains(res.Patch, "a * b") {
		t.Errorf("wrong hunk kept:\n%s", res.Patch)
	}
}

func TestOraclePatchNoSourceIsEmpty(t *testing.T) {
	res, err := OraclePatch(gold, contexts.Context{Issue: "Add subtracts"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Patch != "" || res.Emitted != 0 {
		t.Errorf("no-source context produced a patch: %+v", res)
	}
	// Lines of the right text under another file's name do not count.
	other := contexts.Context{Blocks: []contexts.Block{{Path: "other.go", Kind: contexts.KindFile, Text: file}}}
	if res, _ := OraclePatch(gold, other); res.Emitted != 0 {
		t.Errorf("hunks emitted from another file's text: %+v", res)
	}
}

func TestOraclePatchBadGold(t *testing.T) {
	if _, err := OraclePatch("diff --git a/x b/x\n@@ -1,2 +1,2 @@\n garbage", contexts.Context{}); err == nil {
		t.Error("malformed gold patch accepted")
	}
}
