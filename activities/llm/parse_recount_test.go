package llm

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ctxlab/patch/diff"
)

// blankTailSource has a blank line after each function, so an edit to a function's first line makes a hunk whose
// last line is a blank context line.
const blankTailSource = "package p\n\nfunc A() int {\n\treturn 1\n}\n\nfunc B() int {\n\treturn 2\n}\n\nfunc C() int {\n\treturn 3\n}\n"

func blankTailGold(t *testing.T) (gold, edited string) {
	t.Helper()
	edited = strings.Replace(blankTailSource, "func B() int {", "func B() int64 {", 1)
	gold = diff.Unified("p.go", []byte(blankTailSource), []byte(edited))
	if !strings.HasSuffix(gold, "\n \n") {
		t.Fatalf("the gold hunk should end in a blank context line:\n%s", gold)
	}
	return gold, edited
}

// applyToSource applies patch to a folder holding p.go and returns the new p.go.
func applyToSource(t *testing.T, patch string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(blankTailSource), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := diff.ApplyDir(dir, patch); err != nil {
		t.Fatalf("apply: %v\n%s", err, patch)
	}
	data, err := os.ReadFile(filepath.Join(dir, "p.go"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestExtractDiffKeepsABlankContextTail is the bug of issue 13: the fenced gold patch lost its last line.
func TestExtractDiffKeepsABlankContextTail(t *testing.T) {
	gold, edited := blankTailGold(t)
	for _, answer := range []string{"Here is the fix:\n\n```diff\n" + gold + "```\n", gold, "Fix:\n" + gold + "\nDone.\n"} {
		got, err := ExtractDiffDetail(answer)
		if err != nil {
			t.Fatal(err)
		}
		if got.Patch != gold || got.Recounted != 0 {
			t.Fatalf("recounted %d, %s", got.Recounted, firstDifference(got.Patch, gold))
		}
		if out := applyToSource(t, got.Patch); out != edited {
			t.Errorf("applied patch gives\n%s", out)
		}
	}
}

// TestExtractDiffRecountsALostBlankTail: a model (or a chat window that trims trailing whitespace) dropped the
// hunk's last blank context line; the header is recounted, the repair is counted, and the patch applies.
func TestExtractDiffRecountsALostBlankTail(t *testing.T) {
	gold, edited := blankTailGold(t)
	lost := strings.TrimSuffix(gold, " \n")
	if _, err := diff.Parse(lost); !errors.Is(err, diff.ErrMalformed) {
		t.Fatalf("the patch without its blank tail should be malformed as written; got %v", err)
	}
	for name, answer := range map[string]string{
		"fenced":             "```diff\n" + lost + "```\n",
		"bare, trimmed":      strings.TrimSpace(lost),
		"fenced, blank line": "```diff\n" + lost + "\n```\n", // the blank tail lost its space only
	} {
		got, err := ExtractDiffDetail(answer)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		wantRecounted := 1
		if name == "fenced, blank line" {
			wantRecounted = 0 // an empty line inside a hunk is a blank context line, as git reads it
		}
		if got.Recounted != wantRecounted {
			t.Errorf("%s: recounted %d hunks, want %d:\n%s", name, got.Recounted, wantRecounted, got.Patch)
		}
		if out := applyToSource(t, got.Patch); out != edited {
			t.Errorf("%s: applied patch gives\n%s", name, out)
		}
	}
}

// TestExtractDiffKeepsOtherMiscounts: a hunk longer than its header is kept whole (the extractor cuts nothing the
// model wrote), and a hunk short of an added line is not repaired, so the patch parser rejects it as malformed.
func TestExtractDiffKeepsOtherMiscounts(t *testing.T) {
	gold, _ := blankTailGold(t)
	long := strings.Replace(gold, " }\n \n", " }\n+// added\n \n", 1)
	got, err := ExtractDiffDetail("```diff\n" + long + "```\n")
	if err != nil {
		t.Fatal(err)
	}
	if got.Patch != long || got.Recounted != 0 {
		t.Errorf("a hunk longer than its header was changed (recounted %d): %s", got.Recounted,
			firstDifference(got.Patch, long))
	}
	short := strings.Replace(gold, "+func B() int64 {\n", "", 1)
	got, err = ExtractDiffDetail("```diff\n" + short + "```\n")
	if err != nil {
		t.Fatal(err)
	}
	if got.Recounted != 0 {
		t.Errorf("a hunk short of an added line was recounted:\n%s", got.Patch)
	}
	if _, err := diff.Parse(got.Patch); !errors.Is(err, diff.ErrMalformed) {
		t.Errorf("want ErrMalformed, got %v", err)
	}
}
