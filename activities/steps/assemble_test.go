package steps

import (
	"fmt"
	"strings"
	"testing"

	"ctxlab/activities/contexts"
	"ctxlab/activities/llm"
	"ctxlab/activities/search"
	"ctxlab/activities/tokens"
	"ctxlab/specs"
)

func lines(n int, f string) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, f+"\n", i)
	}
	return b.String()
}

// TestAssembleCaps checks step 4's caps: files cut at the file cap, snippets at the snippet cap, and a block that
// would pass the total skipped while a later, smaller one still goes in.
func TestAssembleCaps(t *testing.T) {
	big := lines(400, "line number %d of a rather long file")
	blocks := []contexts.Block{
		{Path: "a.go", Kind: contexts.KindFile, Text: big},
		{Path: "b.go", Kind: contexts.KindSnippet, Start: 10, Text: lines(100, "snippet %d")},
		{Path: "c.go", Kind: contexts.KindSnippet, Start: 1, Text: lines(300, "another long snippet line %d")},
		{Path: "d.go", Kind: contexts.KindSnippet, Start: 1, Text: "func small() {}\n"},
	}
	p := specs.AssembleParams{Tokenizer: tokens.O200kBase, FileCap: 1000, SnippetCap: 500, TotalCap: 1700}
	c, st, err := AssembleBlocks("issue", blocks, 1, p)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, b := range c.Blocks {
		paths = append(paths, b.Path)
		n, _ := tokens.Count(p.Tokenizer, b.Text)
		limit := p.SnippetCap
		if b.Kind == contexts.KindFile {
			limit = p.FileCap
		}
		if n > limit {
			t.Errorf("%s has %d tokens, over its cap %d", b.Path, n, limit)
		}
		if !strings.HasPrefix(blocksText(blocks, b.Path), b.Text) {
			t.Errorf("%s was not cut at a line boundary of its text", b.Path)
		}
	}
	if got := strings.Join(paths, " "); got != "a.go b.go d.go" {
		t.Errorf("kept %s; want c.go skipped (it would pass the total) and d.go kept", got)
	}
	if st.Tokens > p.TotalCap || st.Skipped != 1 || st.Cut < 2 {
		t.Errorf("stats %+v", st)
	}
}

func blocksText(bs []contexts.Block, path string) string {
	for _, b := range bs {
		if b.Path == path {
			return b.Text
		}
	}
	return ""
}

// TestCollectEvidenceLimits checks step 3's limits: at most newFiles new files per search, files already shown
// never taken again, definitions first, and collection stopping once maxFiles files are covered.
func TestCollectEvidenceLimits(t *testing.T) {
	var files []search.File
	for i := range 6 {
		files = append(files, search.File{Path: fmt.Sprintf("use%d.go", i),
			Text: "package p\n\nfunc caller() {\n\tParse(x)\n}\n"})
	}
	files = append(files, search.File{Path: "parse.go", Text: "package p\n\n// Parse parses.\nfunc Parse(s string) {\n}\n"},
		search.File{Path: "shown.go", Text: "package p\n\nfunc g() { Parse(y) }\n"})
	plan := llm.SearchPlan{Searches: []llm.Search{
		{Kind: llm.SearchDefinition, Strings: []string{"Parse"}},
		{Kind: llm.SearchCallers, Strings: []string{"Parse("}},
		{Kind: llm.SearchCallers, Strings: []string{"Parse("}},
		{Kind: llm.SearchString, Strings: []string{"Parse"}},
	}}
	got := CollectEvidence(files, []string{"shown.go"}, plan, 2, 5, 10)
	var paths []string
	perSearch := map[int]int{}
	for _, s := range got {
		paths = append(paths, s.Path)
		perSearch[s.Search]++
	}
	if len(got) != 5 {
		t.Fatalf("%d snippets (%v), want 5: stop at maxFiles", len(got), paths)
	}
	if got[0].Path != "parse.go" || got[0].Name != "Parse" || got[0].Start != 3 {
		t.Errorf("definition search took %+v first, want parse.go's Parse with its doc comment", got[0].Snippet)
	}
	for s, n := range perSearch {
		if n > 2 {
			t.Errorf("search %d took %d files", s, n)
		}
	}
	seen := map[string]bool{}
	for _, p := range paths {
		if p == "shown.go" || seen[p] {
			t.Errorf("took %s again: %v", p, paths)
		}
		seen[p] = true
	}
}
