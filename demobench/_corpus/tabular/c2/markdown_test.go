package tabular

import "testing"

func TestMarkdownHeader(t *testing.T) {
	tb := New("name", "version").AddRow("tabular", "0.2.0")
	want := "" +
		"| name    | version |\n" +
		"| ------- | ------- |\n" +
		"| tabular | 0.2.0   |\n"
	if got := tb.Markdown(); got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
}

// TestMarkdownAlignedColumns checks that the Markdown source lines up: every cell is padded with spaces to the
// width of its column, so the pipes stay aligned in the source and in review diffs, and a column's alignment shows
// in the delimiter row (---: for right, :--: for center).
func TestMarkdownAlignedColumns(t *testing.T) {
	tb := New("city", "population", "note").
		AddRow("Lyon", "522250", "").
		AddRow("Marseille", "873076", "port").
		SetAlign(1, AlignRight).SetAlign(2, AlignCenter)
	want := "" +
		"| city      | population | note |\n" +
		"| --------- | ---------: | :--: |\n" +
		"| Lyon      |     522250 |      |\n" +
		"| Marseille |     873076 | port |\n"
	if got := tb.Markdown(); got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestMarkdownEscapesPipes(t *testing.T) {
	tb := New("expr", "meaning").AddRow("a|b", "a or b").AddRow("x", "line one\nline two")
	want := "" +
		"| expr | meaning              |\n" +
		"| ---- | -------------------- |\n" +
		"| a\\|b | a or b               |\n" +
		"| x    | line one<br>line two |\n"
	if got := tb.Markdown(); got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
}
