package corrupt

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"ctxlab/activities/contexts"
)

func sample() contexts.Context {
	var b strings.Builder
	for i := range 400 {
		fmt.Fprintf(&b, "\tvalue%d := compute(alpha, beta_%d) + gamma * %d // note\n", i, i, i)
		if i%10 == 0 {
			b.WriteString("\n")
		}
	}
	text := b.String()
	return contexts.Context{Issue: "the issue", Blocks: []contexts.Block{
		{Path: "a.go", Kind: contexts.KindFile, Start: 1, Text: text},
		{Path: "b.go", Kind: contexts.KindSnippet, Start: 40, Text: text[:2000]},
	}}
}

func eps(t *testing.T, c contexts.Context, orig contexts.Context) float64 {
	t.Helper()
	read := func(p string) (string, bool) {
		for _, b := range orig.Blocks {
			if b.Path == p {
				return b.Text, true
			}
		}
		return "", false
	}
	return *contexts.Measure(c, nil, read).Epsilon
}

func TestTokensReproducibleAndRate(t *testing.T) {
	c := sample()
	o := Options{Mode: ModeTokens, Rate: 0.2, Seed: 7}
	a, st, err := Apply(c, o)
	if err != nil {
		t.Fatal(err)
	}
	b, _, _ := Apply(c, o)
	if a.Render() != b.Render() {
		t.Error("same seed, different output")
	}
	other, _, _ := Apply(c, Options{Mode: ModeTokens, Rate: 0.2, Seed: 8})
	if other.Render() == a.Render() {
		t.Error("different seeds, same output")
	}
	share := float64(st.TokensDeleted) / float64(st.Tokens)
	if math.Abs(share-0.2) > 0.01 {
		t.Errorf("deleted %.3f of tokens, want 0.20", share)
	}
	if a.Issue != c.Issue || len(a.Blocks) != 2 || a.Blocks[1].Start != 40 {
		t.Error("issue or block layout changed")
	}
	// Lines of 17 tokens at 20%: nearly every line is touched, so epsilon collapses.
	if e := eps(t, a, c); e > 0.1 {
		t.Errorf("epsilon after 20%% token deletion = %.2f", e)
	}
	// A block corrupts the same way whatever else the context holds.
	alone, _, _ := Apply(contexts.Context{Blocks: c.Blocks[1:]}, o)
	if alone.Blocks[0].Text != a.Blocks[1].Text {
		t.Error("a block's corruption depends on the other blocks")
	}
	zero, st0, _ := Apply(c, Options{Mode: ModeTokens, Rate: 0, Seed: 7})
	if zero.Render() != c.Render() || st0.TokensDeleted != 0 {
		t.Error("rate 0 changed the text")
	}
}

func TestLinesRate(t *testing.T) {
	c := sample()
	a, st, err := Apply(c, Options{Mode: ModeLines, Rate: 0.3, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	share := float64(st.LinesDeleted) / float64(st.Lines)
	if math.Abs(share-0.3) > 0.02 {
		t.Errorf("deleted %.3f of lines, want 0.30", share)
	}
	if e := eps(t, a, c); e != 1 {
		t.Errorf("line deletion leaves lines verbatim, epsilon = %v", e)
	}
	if got := strings.Count(a.Blocks[0].Text, "\n"); got >= strings.Count(c.Blocks[0].Text, "\n") {
		t.Error("no line deleted")
	}
	for _, bad := range []Options{{Mode: "words", Rate: 0.2}, {Mode: ModeLines, Rate: 1.5}, {Mode: ModeTokens, Rate: math.NaN()}} {
		if _, _, err := Apply(c, bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

func TestSameFilesOtherText(t *testing.T) {
	c := sample()
	for _, target := range []float64{1, 0.7, 0.25} {
		a, _, err := SameFilesOtherText(c, target, 3)
		if err != nil {
			t.Fatal(err)
		}
		if e := eps(t, a, c); math.Abs(e-target) > 0.03 {
			t.Errorf("target epsilon %.2f, got %.3f", target, e)
		}
		if fmt.Sprint(a.Files()) != fmt.Sprint(c.Files()) {
			t.Error("files changed")
		}
	}
	if _, _, err := SameFilesOtherText(c, 2, 0); err == nil {
		t.Error("epsilon 2 accepted")
	}
	if got := FilesInOrder(contexts.Context{Blocks: []contexts.Block{{Path: "z"}, {Path: "a"}, {Path: "z"}}}); fmt.Sprint(got) != "[z a]" {
		t.Errorf("FilesInOrder = %v", got)
	}
}
