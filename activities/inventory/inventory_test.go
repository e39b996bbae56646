package inventory

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"ctxlab/activities/tokens"
)

func TestWordsSplitsIdentifiersAndStems(t *testing.T) {
	got := Words("KeyedMiddleware parse_config HTTPServer the parser parsing Parsed internal/x")
	want := []string{"keyed", "middlewar", "pars", "config", "serv", "pars", "pars", "pars"} // "http" is a stop word
	if !slices.Equal(got, want) {
		t.Errorf("Words = %v, want %v", got, want)
	}
}

func TestRankPrefersSharedWordsThenCode(t *testing.T) {
	paths := []string{"docs/duration.md", "duration_test.go", "duration.go", "bytes.go", "internal/lru/lru.go", "README.md"}
	got := Rank(paths, "humanize.Duration prints the wrong duration")
	var order []string
	for _, s := range got {
		order = append(order, s.Path)
	}
	want := []string{"duration.go", "duration_test.go", "docs/duration.md", "bytes.go", "internal/lru/lru.go", "README.md"}
	if !slices.Equal(order, want) {
		t.Errorf("rank %v, want %v", order, want)
	}
	if got[0].Score != 1 || got[3].Score != 0 {
		t.Errorf("scores %v", got)
	}
}

// TestSelectKeepsBestWithinTau checks tau = ratio · min(all tokens, cap): the kept paths are the best-ranked that
// fit, listed alphabetically, and their tokens never exceed tau.
func TestSelectKeepsBestWithinTau(t *testing.T) {
	var paths []string
	for i := range 200 {
		paths = append(paths, fmt.Sprintf("pkg%02d/file%03d.go", i%17, i))
	}
	paths = append(paths, "ratelimit/bucket.go", "ratelimit/refill.go")
	issue := "the bucket never refills"
	all := 0
	for _, p := range paths {
		n, _ := tokens.Count(tokens.O200kBase, p+"\n")
		all += n
	}
	inv, err := Select(paths, issue, tokens.O200kBase, 0.5, 32000)
	if err != nil {
		t.Fatal(err)
	}
	if inv.AllTokens != all || inv.Tau != all/2 {
		t.Errorf("all %d tau %d, want %d and %d", inv.AllTokens, inv.Tau, all, all/2)
	}
	if inv.Tokens > inv.Tau || inv.Tokens < inv.Tau-20 {
		t.Errorf("kept %d tokens for tau %d", inv.Tokens, inv.Tau)
	}
	if !sort.StringsAreSorted(inv.Paths) {
		t.Error("kept paths are not alphabetical")
	}
	for _, want := range []string{"ratelimit/bucket.go", "ratelimit/refill.go"} {
		if !slices.Contains(inv.Paths, want) {
			t.Errorf("%s shares a word with the issue but was not kept", want)
		}
	}
	if len(inv.Paths) >= len(paths) || len(inv.Paths) < len(paths)/3 {
		t.Errorf("kept %d of %d paths", len(inv.Paths), len(paths))
	}
	if !strings.HasSuffix(inv.Text(), "\n") || strings.Count(inv.Text(), "\n") != len(inv.Paths) {
		t.Error("Text is not one path per line")
	}

	// The 32K cap binds on a big repository: tau = 16K however many paths there are.
	var big []string
	for i := range 20000 {
		big = append(big, fmt.Sprintf("src/module%05d/implementation_file.py", i))
	}
	inv, err = Select(big, issue, tokens.O200kBase, 0.5, 32000)
	if err != nil {
		t.Fatal(err)
	}
	if inv.Tau != 16000 || inv.Tokens > 16000 || inv.Tokens < 15900 {
		t.Errorf("big repository: tau %d, kept %d tokens", inv.Tau, inv.Tokens)
	}
	if _, err := Select(paths, issue, "nope", 0.5, 32000); err == nil {
		t.Error("unknown tokenizer accepted")
	}
	if _, err := Select(paths, issue, tokens.O200kBase, 0, 32000); err == nil {
		t.Error("ratio 0 accepted")
	}
}

func TestTestsAndDocs(t *testing.T) {
	for p, want := range map[string][2]bool{
		"a_test.go": {true, false}, "tests/test_x.py": {true, false}, "pkg/test_util.py": {true, false},
		"docs/x.md": {false, true}, "README.md": {false, true}, ".github/ISSUE_TEMPLATE/bug.md": {false, true},
		"LICENSE": {false, true}, "parser.go": {false, false}, "testing_helpers.go": {false, false},
	} {
		if IsTest(p) != want[0] || IsDoc(p) != want[1] {
			t.Errorf("%s: test %v doc %v, want %v", p, IsTest(p), IsDoc(p), want)
		}
	}
}
