package kvconf

import (
	"reflect"
	"strings"
	"testing"
)

func mustParse(t *testing.T, src string) *File {
	t.Helper()
	f, err := ParseString(src)
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, src)
	}
	return f
}

func TestParseSections(t *testing.T) {
	f := mustParse(t, `
[server]
host = example.com
port: 8080

[server "tls"]
cert = /etc/ssl/cert.pem

[Database]
URL = postgres://db/app
`)
	if got, want := f.SectionNames(), []string{"database", "server", "server.tls"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("sections %v, want %v", got, want)
	}
	for _, c := range []struct{ sec, key, want string }{
		{"server", "host", "example.com"},
		{"server", "port", "8080"},
		{"server.tls", "cert", "/etc/ssl/cert.pem"},
		{"database", "url", "postgres://db/app"},
	} {
		if got, ok := f.Get(c.sec, c.key); !ok || got != c.want {
			t.Errorf("[%s] %s = %q, %v; want %q", c.sec, c.key, got, ok, c.want)
		}
	}
}

func TestParseComments(t *testing.T) {
	f := mustParse(t, `# leading comment
; another comment
[app]
name = demo   # trailing comment
mode = fast ; trailing comment
url = http://example.com/#anchor
empty =
`)
	for key, want := range map[string]string{
		"name":  "demo",
		"mode":  "fast",
		"url":   "http://example.com/#anchor",
		"empty": "",
	} {
		if got, _ := f.Get("app", key); got != want {
			t.Errorf("%s = %q, want %q", key, got, want)
		}
	}
}

func TestParseQuotedValues(t *testing.T) {
	f := mustParse(t, `[app]
greeting = "  hello, world  "
path = "C:\\temp\\logs"
multi = "line one\nline two"
`)
	for key, want := range map[string]string{
		"greeting": "  hello, world  ",
		"path":     `C:\temp\logs`,
		"multi":    "line one\nline two",
	} {
		if got, _ := f.Get("app", key); got != want {
			t.Errorf("%s = %q, want %q", key, got, want)
		}
	}
}

func TestParseContinuation(t *testing.T) {
	f := mustParse(t, "[app]\nhosts = a.example.com, \\\n        b.example.com\nnext = 1\n")
	if got, _ := f.Get("app", "hosts"); got != "a.example.com, b.example.com" {
		t.Fatalf("hosts = %q", got)
	}
	if got := f.Section("app").List("hosts"); len(got) != 2 {
		t.Fatalf("list = %q", got)
	}
}

func TestParseLastValueWins(t *testing.T) {
	f := mustParse(t, "[a]\nx = 1\nx = 2\n")
	if got, _ := f.Get("a", "x"); got != "2" {
		t.Fatalf("x = %q", got)
	}
}

func TestParseTypedValues(t *testing.T) {
	f := mustParse(t, "[limits]\nworkers = 1_000\nverbose = yes\ntimeout = 90\nmax_body = 4M\n")
	s := f.Section("limits")
	if n, err := s.Int("workers", 0); err != nil || n != 1000 {
		t.Errorf("workers = %d, %v", n, err)
	}
	if b, err := s.Bool("verbose", false); err != nil || !b {
		t.Errorf("verbose = %v, %v", b, err)
	}
	if d, err := s.Duration("timeout", 0); err != nil || d.Seconds() != 90 {
		t.Errorf("timeout = %v, %v", d, err)
	}
	if n, err := s.Size("max_body", 0); err != nil || n != 4<<20 {
		t.Errorf("max_body = %d, %v", n, err)
	}
	if _, err := s.Int("verbose", 0); err == nil || !strings.Contains(err.Error(), "not a valid integer") {
		t.Errorf("want a type error, got %v", err)
	}
}
