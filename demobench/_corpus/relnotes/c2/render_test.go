package relnotes

import (
	"strings"
	"testing"
)

func TestRenderGroupsByKind(t *testing.T) {
	var b strings.Builder
	err := Render(&b, []Entry{{Fixed, "a crash"}, {Added, "a flag"}, {Fixed, "a leak"}}, 80)
	if err != nil {
		t.Fatal(err)
	}
	want := "### Added\n\n  - a flag\n\n### Fixed\n\n  - a crash\n  - a leak\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func TestRenderEmpty(t *testing.T) {
	var b strings.Builder
	if err := Render(&b, nil, 80); err != nil || b.Len() != 0 {
		t.Errorf("got %q, %v", b.String(), err)
	}
}
