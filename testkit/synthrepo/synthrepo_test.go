package synthrepo

import (
	"bytes"
	"testing"
)

func TestSizeAndDeterminism(t *testing.T) {
	a, b := Generate(1), Generate(1)
	if len(a) != Files {
		t.Fatalf("%d files", len(a))
	}
	lines, paths := 0, map[string]bool{}
	for i := range a {
		lines += bytes.Count(a[i].Content, []byte("\n"))
		if a[i].Path != b[i].Path || !bytes.Equal(a[i].Content, b[i].Content) {
			t.Fatalf("file %d differs between two generations", i)
		}
		if paths[a[i].Path] {
			t.Fatalf("duplicate path %s", a[i].Path)
		}
		paths[a[i].Path] = true
	}
	if lines != Lines {
		t.Errorf("%d lines, want %d", lines, Lines)
	}
	if c := Generate(2); bytes.Equal(c[0].Content, a[0].Content) && c[1].Path == a[1].Path {
		t.Error("another seed gave the same repository")
	}
}
