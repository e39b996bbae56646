package kvconf

import (
	"strings"
	"testing"
)

func TestWriteCanonical(t *testing.T) {
	f := mustParse(t, "[server]\nport:8080\nhost=example.com\n[server \"tls\"]\ncert = a.pem\n")
	var b strings.Builder
	if err := Write(&b, f); err != nil {
		t.Fatal(err)
	}
	want := "[server]\nport = 8080\nhost = example.com\n\n[server \"tls\"]\ncert = a.pem\n"
	if b.String() != want {
		t.Fatalf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}

// TestWriteQuotesSpecialValues writes values that need quotes and reads them back.
func TestWriteQuotesSpecialValues(t *testing.T) {
	f := NewFile()
	values := map[string]string{
		"padded":    "  x  ",
		"hash":      "p#ss;word",
		"quote":     `say "hi"`,
		"backslash": `C:\temp`,
		"newline":   "a\nb",
	}
	for k, v := range values {
		f.Set("app", k, v)
	}
	var b strings.Builder
	if err := Write(&b, f); err != nil {
		t.Fatal(err)
	}
	back := mustParse(t, b.String())
	for k, want := range values {
		if got, _ := back.Get("app", k); got != want {
			t.Errorf("%s: got %q, want %q\n%s", k, got, want, b.String())
		}
	}
}
