package kvconf

import (
	"errors"
	"strings"
	"testing"
)

// parseErr parses src and returns the *ParseError it must fail with.
func parseErr(t *testing.T, src string, opts Options) *ParseError {
	t.Helper()
	_, err := ParseWithOptions(strings.NewReader(src), opts)
	var pe *ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("want a *ParseError, got %v", err)
	}
	return pe
}

func TestParseErrorFormat(t *testing.T) {
	e := &ParseError{File: "prod.conf", Line: 4, Msg: msgUnterminatedQuote}
	if got := e.Error(); got != "kvconf: prod.conf:4: unterminated quoted value" {
		t.Errorf("got %q", got)
	}
	e.File = ""
	if got := e.Error(); got != "kvconf: line 4: unterminated quoted value" {
		t.Errorf("got %q", got)
	}
}

// TestUnterminatedQuoteError checks the error for a quoted value that never closes.
func TestUnterminatedQuoteError(t *testing.T) {
	pe := parseErr(t, "[db]\nuser = app\npassword = \"unterminated\n", Options{Name: "prod.conf"})
	if pe.Line != 3 || pe.Msg != msgUnterminatedQuote {
		t.Fatalf("got line %d %q", pe.Line, pe.Msg)
	}
	if !strings.Contains(pe.Error(), "prod.conf:3: unterminated quoted value") {
		t.Fatalf("got %q", pe.Error())
	}
}

func TestTextAfterQuoteError(t *testing.T) {
	pe := parseErr(t, "[db]\npassword = \"quoted\" trailing\n", Options{})
	if pe.Msg != msgTextAfterQuote {
		t.Fatalf("got %q", pe.Msg)
	}
}

func TestStrictDuplicates(t *testing.T) {
	pe := parseErr(t, "[server]\nport = 1\nport = 2\n", Options{Strict: true})
	if pe.Line != 3 || !strings.Contains(pe.Msg, `duplicate key "port" in section "server"`) {
		t.Fatalf("got line %d %q", pe.Line, pe.Msg)
	}
	pe = parseErr(t, "[a]\n[b]\n[a]\n", Options{Strict: true})
	if pe.Line != 3 || !strings.Contains(pe.Msg, `duplicate section "a"`) {
		t.Fatalf("got line %d %q", pe.Line, pe.Msg)
	}
}

func TestSyntaxErrors(t *testing.T) {
	cases := map[string]string{
		"[server\n":              msgBadSection,
		"[]\n":                   msgEmptySection,
		"[a]\njust words\n":      "expected '=' or ':'",
		"[a]\n= value\n":         msgEmptyKey,
		"key = 1\n":              "before any section header",
		"[a]\nx = \"bad \\q\"\n": "unknown escape sequence",
		"[a]\nx = 1 \\\n":        msgContinuationAtEOF,
	}
	for src, want := range cases {
		pe := parseErr(t, src, Options{})
		if !strings.Contains(pe.Msg, want) {
			t.Errorf("%q: got %q, want it to contain %q", src, pe.Msg, want)
		}
	}
}
