package tabular

import (
	"strings"
	"testing"
)

func TestFromCSV(t *testing.T) {
	in := "name,qty\napples,3\n\"pears, green\",12\n"
	tb, err := FromCSV(strings.NewReader(in), CSVOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tb.SetAlign(1, AlignRight)
	want := "" +
		"name          qty\n" +
		"------------  ---\n" +
		"apples          3\n" +
		"pears, green   12\n"
	if got := tb.String(); got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestFromCSVOptions(t *testing.T) {
	in := "a;b\nc;d;e\nf\n"
	tb, err := FromCSV(strings.NewReader(in), CSVOptions{Comma: ';', NoHeader: true, MaxRows: 2})
	if err != nil {
		t.Fatal(err)
	}
	if tb.Rows() != 2 || tb.numCols() != 3 {
		t.Fatalf("rows %d cols %d", tb.Rows(), tb.numCols())
	}
}
