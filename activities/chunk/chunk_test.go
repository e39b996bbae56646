package chunk

import (
	"fmt"
	"strings"
	"testing"
)

const goSrc = `package demo

import "fmt"

// Greeting is what Hello says.
const Greeting = "hi"

// Hello greets.
func Hello(name string) string {
	return fmt.Sprintf("%s %s", Greeting, name)
}

type T struct{ n int }

func (t *T) Inc() {
	t.n++
}
`

const pySrc = `import os

X = 1


@decorator
def top(a,
        b):
    """Doc.

not indented in the string
"""
    def inner():
        return 1
    return inner()


class K:
    def m(self):
        return (1 +
    2)

    async def n(self):
        pass

print(X)
`

func describe(cs []Chunk) string {
	var parts []string
	for _, c := range cs {
		parts = append(parts, fmt.Sprintf("%s:%d-%d", c.Kind, c.Start, c.End))
	}
	return strings.Join(parts, " ")
}

func TestGoBoundaries(t *testing.T) {
	for _, tc := range []struct {
		unit Unit
		want string
	}{
		{Definition, "gap:1-1 import:3-3 const:5-6 func:8-11 type:13-13 func:15-17"},
		{Function, "gap:1-6 func:8-11 gap:13-13 func:15-17"},
		{Window, "window:1-5 window:6-10 window:11-15 window:16-17"},
		{File, "file:1-17"},
	} {
		got := Split("a/demo.go", []byte(goSrc), tc.unit, 5)
		if d := describe(got); d != tc.want {
			t.Errorf("%s: got %s, want %s", tc.unit, d, tc.want)
		}
		checkText(t, got, goSrc)
	}
}

func TestPythonBoundaries(t *testing.T) {
	for _, tc := range []struct {
		unit Unit
		want string
	}{
		{Definition, "gap:1-3 def:6-15 class:18-24 gap:26-26"},
		{Function, "gap:1-3 def:6-15 gap:18-18 def:19-21 def:23-24 gap:26-26"},
	} {
		got := Split("pkg/m.py", []byte(pySrc), tc.unit, 60)
		if d := describe(got); d != tc.want {
			t.Errorf("%s: got %s, want %s", tc.unit, d, tc.want)
		}
		checkText(t, got, pySrc)
	}
}

func TestFallbacks(t *testing.T) {
	md := strings.Repeat("line\n", 130)
	if d := describe(Split("README.md", []byte(md), Definition, 60)); d != "window:1-60 window:61-120 window:121-130" {
		t.Errorf("markdown by definition: %s", d)
	}
	broken := "package x\nfunc (\n"
	if d := describe(Split("x.go", []byte(broken), Function, 60)); d != "window:1-2" {
		t.Errorf("unparsable Go: %s", d)
	}
	if got := Split("empty.go", nil, Definition, 60); len(got) != 0 {
		t.Errorf("empty file gave %d chunks", len(got))
	}
	noNL := "a\nb"
	if c := Split("f.txt", []byte(noNL), File, 0); len(c) != 1 || c[0].End != 2 || c[0].Text != noNL {
		t.Errorf("file without final newline: %+v", c)
	}
	if _, err := ParseUnit("paragraph"); err == nil {
		t.Error("unknown unit accepted")
	}
}

// checkText asserts each chunk's text is exactly its lines of the file.
func checkText(t *testing.T, cs []Chunk, src string) {
	t.Helper()
	lines := strings.SplitAfter(src, "\n")
	for _, c := range cs {
		if want := strings.Join(lines[c.Start-1:c.End], ""); c.Text != want {
			t.Errorf("chunk %d-%d text %q, want %q", c.Start, c.End, c.Text, want)
		}
	}
}
