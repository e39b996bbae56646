package tabular

import (
	"strings"
	"testing"
)

func TestRenderBoxASCII(t *testing.T) {
	tb := New("k", "value").AddRow("a", "1").AddRow("bb", "22")
	var b strings.Builder
	if err := tb.RenderBox(&b, BorderASCII); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"+----+-------+\n" +
		"| k  | value |\n" +
		"+----+-------+\n" +
		"| a  | 1     |\n" +
		"| bb | 22    |\n" +
		"+----+-------+\n"
	if b.String() != want {
		t.Fatalf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}
