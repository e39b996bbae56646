package diff

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// goSource has blank lines after every function, so hunks near them end in blank context lines.
const goSource = "package p\n\nfunc A() int {\n\treturn 1\n}\n\nfunc B() int {\n\treturn 2\n}\n\nfunc C() int {\n\treturn 3\n}\n"

// dropLines removes the lines of patch for which drop returns true, counting them.
func dropLines(patch string, drop func(i int, line string) bool) string {
	var b strings.Builder
	for i, l := range strings.SplitAfter(patch, "\n") {
		if !drop(i, l) {
			b.WriteString(l)
		}
	}
	return b.String()
}

// lastBlankContext returns the index of the last " \n" line of patch before line limit (or of the whole patch).
func lastBlankContext(patch string, limit int) int {
	lines := strings.SplitAfter(patch, "\n")
	if limit < 0 || limit > len(lines) {
		limit = len(lines)
	}
	for i := limit - 1; i >= 0; i-- {
		if lines[i] == " \n" {
			return i
		}
	}
	return -1
}

// applyInDir writes files into a temporary folder, applies patch with ApplyDir and returns the folder's file.
func applyInDir(t *testing.T, files map[string]string, patch, read string) string {
	t.Helper()
	dir := t.TempDir()
	for p, s := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ApplyDir(dir, patch); err != nil {
		t.Fatalf("apply: %v\n%s", err, patch)
	}
	data, err := os.ReadFile(filepath.Join(dir, read))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestRecountBlankTailsRepairsALostBlankContextLine(t *testing.T) {
	edited := strings.Replace(goSource, "func B() int {", "func B() int64 {", 1)
	gold := Unified("p.go", []byte(goSource), []byte(edited))
	if !strings.HasSuffix(gold, "\n \n") {
		t.Fatalf("the gold hunk should end in a blank context line:\n%s", gold)
	}
	lost := strings.TrimSuffix(gold, " \n")
	if _, err := Parse(lost); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "miscounts") {
		t.Fatalf("a hunk that lost its blank tail should be malformed before the repair; got %v", err)
	}
	fixed, n := RecountBlankTails(lost)
	if n != 1 {
		t.Fatalf("repaired %d hunks, want 1:\n%s", n, fixed)
	}
	if !strings.Contains(fixed, "@@ -4,6 +4,6 @@\n") {
		t.Errorf("header not recounted:\n%s", fixed)
	}
	if got := applyInDir(t, map[string]string{"p.go": goSource}, fixed, "p.go"); got != edited {
		t.Errorf("repaired patch gives\n%s\nwant\n%s", got, edited)
	}
	// A correct patch goes through untouched.
	if same, n := RecountBlankTails(gold); n != 0 || same != gold {
		t.Errorf("a correct patch was changed (%d hunks):\n%s", n, same)
	}
}

func TestRecountBlankTailsInTheMiddleOfAPatch(t *testing.T) {
	old := map[string]string{"a.go": goSource, "b.txt": "a\nb\nc\ny\n\n\n"}
	newA := strings.Replace(goSource, "func B() int {", "func B() int64 {", 1)
	newB := "a\nb\nc\nY\n\n\n"
	gold := Unified("a.go", []byte(old["a.go"]), []byte(newA)) + Unified("b.txt", []byte(old["b.txt"]), []byte(newB))
	// a.go's hunk ends in a blank line followed by b.txt's header; b.txt's hunk ends in two blank lines.
	cut := strings.Index(gold, "diff --git a/b.txt")
	firstBlank := lastBlankContext(gold[:cut], -1)
	lost := dropLines(gold, func(i int, l string) bool { return i == firstBlank })
	lost = strings.TrimSuffix(lost, " \n \n") + "\n"
	if !strings.HasSuffix(gold, " \n \n") || strings.HasSuffix(lost, " \n") {
		t.Fatalf("test setup: %q", lost)
	}
	fixed, n := RecountBlankTails(lost)
	if n != 2 {
		t.Fatalf("repaired %d hunks, want 2:\n%s", n, fixed)
	}
	dir := t.TempDir()
	for p, s := range old {
		if err := os.WriteFile(filepath.Join(dir, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ApplyDir(dir, fixed); err != nil {
		t.Fatalf("apply: %v\n%s", err, fixed)
	}
	for p, want := range map[string]string{"a.go": newA, "b.txt": newB} {
		if got, _ := os.ReadFile(filepath.Join(dir, p)); string(got) != want {
			t.Errorf("%s: got %q, want %q", p, got, want)
		}
	}
}

func TestRecountBlankTailsDropsBlankLinesAddedBetweenHunks(t *testing.T) {
	var oldText strings.Builder
	for i := 0; i < 30; i++ {
		fmt.Fprintf(&oldText, "line %d\n", i)
	}
	lines := strings.SplitAfter(oldText.String(), "\n")
	lines[2], lines[25] = "changed 2\n", "changed 25\n"
	newText := strings.Join(lines, "")
	gold := Unified("f.txt", []byte(oldText.String()), []byte(newText))
	if strings.Count(gold, "@@ -") != 2 {
		t.Fatalf("want two hunks:\n%s", gold)
	}
	second := strings.LastIndex(gold, "@@ -")
	added := gold[:second] + "\n \n" + gold[second:]
	files, err := Parse(added)
	if err == nil && len(files[0].TextFragments) == 2 {
		t.Fatalf("the parser should not read both hunks of a patch with blank lines between them")
	}
	fixed, n := RecountBlankTails(added)
	if n != 1 || fixed != gold {
		t.Fatalf("repaired %d hunks, want 1 and the gold patch back:\n%s", n, fixed)
	}
	if got := applyInDir(t, map[string]string{"f.txt": oldText.String()}, fixed, "f.txt"); got != newText {
		t.Errorf("repaired patch gives\n%s", got)
	}
}

func TestRecountBlankTailsLeavesOtherMiscounts(t *testing.T) {
	edited := strings.Replace(goSource, "func B() int {", "func B() int64 {", 1)
	gold := Unified("p.go", []byte(goSource), []byte(edited))
	lines := strings.SplitAfter(gold, "\n")
	addIdx := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "+func B() int64") {
			addIdx = i
		}
	}
	cases := map[string]string{
		// An added line lost: the new side is short, the old side is not.
		"lost an added line": dropLines(gold, func(i int, _ string) bool { return i == addIdx }),
		// More lines missing than a hunk's trailing context can hold.
		"header overcounts by four": strings.Replace(gold, "@@ -4,7 +4,7 @@", "@@ -4,11 +4,11 @@", 1),
		// The hunk already ends in three context lines, all git's trailing context holds: the missing line is not
		// a lost blank tail.
		"header overcounts by one": strings.Replace(gold, "@@ -4,7 +4,7 @@", "@@ -4,8 +4,8 @@", 1),
		// The hunk ends in a line that cannot be in a hunk, not at a header or the end.
		"ends in text": strings.TrimSuffix(gold, " \n") + "garbage\n",
		// One old line missing, no new line: a deleted line was lost.
		"old side short": strings.Replace(gold, "@@ -4,7 +4,7 @@", "@@ -4,8 +4,7 @@", 1),
	}
	if !strings.Contains(gold, "@@ -4,7 +4,7 @@") || !strings.HasSuffix(gold, "\n \n") {
		t.Fatalf("test setup: unexpected header\n%s", gold)
	}
	for name, patch := range cases {
		fixed, n := RecountBlankTails(patch)
		if n != 0 || fixed != patch {
			t.Errorf("%s: repaired %d hunks:\n%s", name, n, fixed)
		}
		if _, err := Parse(fixed); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: want ErrMalformed, got %v", name, err)
		}
	}
}

func TestHunkCounts(t *testing.T) {
	for line, want := range map[string][2]int{
		"@@ -1,7 +1,8 @@\n":            {7, 8},
		"@@ -1 +1 @@ func A()\n":       {1, 1},
		"@@ -0,0 +1,3 @@\r\n":          {0, 3},
		"@@ -12,0 +13,2 @@ x @@ y\n":   {0, 2},
		"@@ -1,2 +1,2 @@@\n":           {2, 2},
		"@@ -3,4 +3,4 @@ section @@\n": {4, 4},
	} {
		o, n, ok := HunkCounts(line)
		if !ok || o != want[0] || n != want[1] {
			t.Errorf("%q: got %d, %d, %v; want %v", line, o, n, ok, want)
		}
	}
	for _, bad := range []string{"@@ -a,1 +1 @@\n", "@@ -1,1\n", "@@ @@\n", "@@ -1,-2 +1 @@\n", " @@ -1 +1 @@\n"} {
		if _, _, ok := HunkCounts(bad); ok {
			t.Errorf("%q: accepted", bad)
		}
	}
}
