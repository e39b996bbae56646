package dotenv

import (
	"strings"
	"testing"
)

func TestParseBasic(t *testing.T) {
	got, err := Map(strings.NewReader("# settings\nHOST=localhost\n\nPORT = 8080\nexport DEBUG=1\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"HOST": "localhost", "PORT": "8080", "DEBUG": "1"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("got %d variables, want %d", len(got), len(want))
	}
}

func TestParseQuoted(t *testing.T) {
	got, err := Map(strings.NewReader(`GREETING="hello\nworld"
RAW='a\nb # not a comment'
HASH="#ff0000"
`))
	if err != nil {
		t.Fatal(err)
	}
	if got["GREETING"] != "hello\nworld" {
		t.Errorf("GREETING = %q", got["GREETING"])
	}
	if got["RAW"] != `a\nb # not a comment` {
		t.Errorf("RAW = %q", got["RAW"])
	}
	if got["HASH"] != "#ff0000" {
		t.Errorf("HASH = %q", got["HASH"])
	}
}

func TestParseErrors(t *testing.T) {
	for _, in := range []string{"NOEQUALS", "1BAD=x", "Q=\"open", "S='open"} {
		if _, err := Parse(strings.NewReader(in)); err == nil {
			t.Errorf("Parse(%q) succeeded", in)
		}
	}
}

func TestParseInlineComment(t *testing.T) {
	got, err := Map(strings.NewReader("PORT=8080 # web port\nLEVEL=debug   # verbose\nCOLOR=#ff0000\nURL=http://example.com/#top\nQUOTED=\"a # b\" # note\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"PORT":   "8080",
		"LEVEL":  "debug",
		"COLOR":  "#ff0000",
		"URL":    "http://example.com/#top",
		"QUOTED": "a # b",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
}
