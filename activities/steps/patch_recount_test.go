package steps

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ctxlab/activities/llm/offline"
	"ctxlab/patch/diff"
)

// TestPatchRowRecordsRecount: an answer whose last hunk lost its trailing blank context line gives a patch that
// applies, and the patch step's row says how many hunks were recounted; an exact answer leaves the row without it.
func TestPatchRowRecordsRecount(t *testing.T) {
	src := "package p\n\nfunc A() int {\n\treturn 1\n}\n\nfunc B() int {\n\treturn 2\n}\n"
	edited := strings.Replace(src, "func A() int {", "func A() int64 {", 1)
	gold := diff.Unified("p.go", []byte(src), []byte(edited))
	if !strings.HasSuffix(gold, "\n \n") {
		t.Fatalf("the gold hunk should end in a blank context line:\n%s", gold)
	}
	noFiles := func(string) (string, bool) { return "", false }

	row := map[string]any{}
	patch := recordPatch(row, "```diff\n"+strings.TrimSuffix(gold, " \n")+"```\n", offline.FormatDiff, noFiles)
	if row["patch_recounted"] != 1 || row["patch_parse_error"] != nil {
		t.Fatalf("row %v", row)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := diff.ApplyDir(dir, patch); err != nil {
		t.Fatalf("recounted patch does not apply: %v\n%s", err, patch)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "p.go")); string(got) != edited {
		t.Errorf("applied patch gives\n%s", got)
	}

	row = map[string]any{}
	if patch := recordPatch(row, "```diff\n"+gold+"```\n", offline.FormatDiff, noFiles); patch != gold {
		t.Errorf("exact answer read as\n%s", patch)
	}
	if _, ok := row["patch_recounted"]; ok {
		t.Errorf("an exact answer's row has patch_recounted: %v", row)
	}
}
