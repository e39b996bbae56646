package offline

import (
	"context"
	"strings"
	"testing"

	"github.com/bluekeyes/go-gitdiff/gitdiff"

	"ctxlab/activities/contexts"
	"ctxlab/activities/llm"
	"ctxlab/patch/diff"
	"ctxlab/specs"
)

// TestOracleAnswerKeepsBlankContextTails sends a gold patch whose hunks end in blank context lines (the common case
// of a hunk that stops just before an empty line), at a file's end without a final newline, and inside a markdown
// file's code fence, through the stand-in's answer and the patch step's parser: the patch read back is the oracle's
// patch byte for byte and applies as the gold patch does.
func TestOracleAnswerKeepsBlankContextTails(t *testing.T) {
	files := map[string]string{
		"calc.go": "package calc\n\nfunc Add(a, b int) int {\n\treturn a - b\n}\n\n// unrelated is here.\nfunc unrelated() {\n" +
			"\tprintln(1)\n\tprintln(2)\n}\n\nfunc Mul(a, b int) int {\n\treturn a + b\n}\n\nfunc Div(a, b int) int {\n\treturn a / b\n}\n",
		"README.md": "# calc\n\n```go\nx := calc.Add(1, 2)\n```\n\nMore.\n\nEven more.\n",
		"VERSION":   "1.0\n\n0",
	}
	edited := map[string]string{
		"calc.go": strings.NewReplacer("func Add(a, b int) int {", "func Add(a, b int) int { // adds",
			"func Mul(a, b int) int {", "func Mul(a, b int) int { // multiplies").Replace(files["calc.go"]),
		"README.md": strings.Replace(files["README.md"], "x := calc.Add(1, 2)", "x := calc.Add(1, 2) // 3", 1),
		"VERSION":   "1.0\n\n1",
	}
	var gold strings.Builder
	for _, p := range []string{"README.md", "VERSION", "calc.go"} {
		gold.WriteString(diff.Unified(p, []byte(files[p]), []byte(edited[p])))
	}
	parsed, _, err := gitdiff.Parse(strings.NewReader(gold.String()))
	if err != nil {
		t.Fatal(err)
	}
	blankTails := 0
	for _, f := range parsed {
		for _, frag := range f.TextFragments {
			if last := frag.Lines[len(frag.Lines)-1]; last.Op == gitdiff.OpContext && last.Line == "\n" {
				blankTails++
			}
		}
	}
	if blankTails < 2 {
		t.Fatalf("the gold patch has %d hunks ending in a blank context line, want 2 or more:\n%s", blankTails, gold.String())
	}

	var c contexts.Context
	for p, s := range files {
		c.Blocks = append(c.Blocks, contexts.Block{Path: p, Kind: contexts.KindFile, Text: s})
	}
	res, err := OraclePatch(gold.String(), c)
	if err != nil {
		t.Fatal(err)
	}
	if res.Emitted != res.Total || res.Patch != gold.String() {
		t.Fatalf("oracle emitted %d of %d hunks:\n%s", res.Emitted, res.Total, res.Patch)
	}
	resp, err := Provider{}.Complete(context.Background(), llm.Request{Task: specs.Patch.Task,
		Offline: &PatchInput{Gold: gold.String(), Context: c, Format: FormatDiff}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := llm.ExtractDiffDetail(resp.Text)
	if err != nil {
		t.Fatal(err)
	}
	if got.Patch != res.Patch || got.Recounted != 0 {
		t.Fatalf("the answer's patch differs from the oracle's (recounted %d):\n%s", got.Recounted, got.Patch)
	}
	out, err := diff.ApplyFiles(func(p string) ([]byte, bool) { s, ok := files[p]; return []byte(s), ok }, got.Patch)
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range edited {
		if string(out[p]) != want {
			t.Errorf("%s: got %q, want %q", p, out[p], want)
		}
	}
}
