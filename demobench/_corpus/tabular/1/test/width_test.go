package tabular

import "testing"

func TestDisplayWidthCountsCharacters(t *testing.T) {
	cases := map[string]int{
		"":                   0,
		"abc":                3,
		"café":               4,
		"naïve":              5,
		"Zürich":             6,
		"cafe\u0301":         4, // e followed by a combining acute accent
		"a\tb":               5,
		"→ done":             6,
		"\x1b[1mbold\x1b[0m": 10,
	}
	for in, want := range cases {
		if got := displayWidth(in); got != want {
			t.Errorf("displayWidth(%q) = %d, want %d", in, got, want)
		}
	}
}

func TestTruncateAccented(t *testing.T) {
	if got := truncate("Zürich-Flughafen", 9); got != "Zürich..." {
		t.Errorf("truncate = %q", got)
	}
	if got := truncate("Zürich", 6); got != "Zürich" {
		t.Errorf("truncate of a cell that fits = %q", got)
	}
}
