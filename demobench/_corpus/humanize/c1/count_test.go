package humanize

import (
	"math"
	"testing"
)

func TestComma(t *testing.T) {
	cases := map[int64]string{
		0:             "0",
		999:           "999",
		1000:          "1,000",
		-1234567:      "-1,234,567",
		math.MinInt64: "-9,223,372,036,854,775,808",
	}
	for in, want := range cases {
		if got := Comma(in); got != want {
			t.Errorf("Comma(%d) = %q, want %q", in, got, want)
		}
	}
}

func TestPlural(t *testing.T) {
	if got := Plural(1, "file", ""); got != "1 file" {
		t.Errorf("got %q", got)
	}
	if got := Plural(1200, "entry", "entries"); got != "1,200 entries" {
		t.Errorf("got %q", got)
	}
	if got := Compact(2300000); got != "2.3M" {
		t.Errorf("Compact = %q", got)
	}
}
