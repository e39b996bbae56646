package tabular

import "testing"

func TestRenderSimple(t *testing.T) {
	tb := New("name", "lang", "stars").
		AddRow("gin", "Go", "75000").
		AddRow("requests", "Python", "51000").
		AddRow("serde", "Rust")
	want := "" +
		"name      lang    stars\n" +
		"--------  ------  -----\n" +
		"gin       Go      75000\n" +
		"requests  Python  51000\n" +
		"serde     Rust\n"
	if got := tb.String(); got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestRenderRightAlign(t *testing.T) {
	tb := New("item", "qty").AddRow("apples", "3").AddRow("pears", "12").SetAlign(1, AlignRight)
	want := "" +
		"item    qty\n" +
		"------  ---\n" +
		"apples    3\n" +
		"pears    12\n"
	if got := tb.String(); got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestRenderAutoAlignAndTruncate(t *testing.T) {
	tb := New("file", "size").AutoAlign(true).SetMaxWidth(8).
		AddRow("README.md", "1,204").
		AddRow("go.mod", "87")
	want := "" +
		"file       size\n" +
		"--------  -----\n" +
		"READM...  1,204\n" +
		"go.mod       87\n"
	if got := tb.String(); got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestRenderTabsInCells(t *testing.T) {
	tb := New("a", "b").AddRow("x\ty", "z")
	want := "" +
		"a      b\n" +
		"-----  -\n" +
		"x   y  z\n"
	if got := tb.String(); got != want {
		t.Fatalf("got:\n%q\nwant:\n%q", got, want)
	}
}
