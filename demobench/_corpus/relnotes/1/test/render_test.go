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

func TestRenderWrapsWithinWidth(t *testing.T) {
	var b strings.Builder
	text := "the retry loop now waits with exponential backoff and full jitter between attempts"
	if err := Render(&b, []Entry{{Changed, text}}, 30); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) < 4 || lines[0] != "### Changed" || !strings.HasPrefix(lines[2], "  - the retry") {
		t.Fatalf("got\n%s", b.String())
	}
	var words []string
	for i, l := range lines[2:] {
		if len(l) > 30 {
			t.Errorf("line %q is %d characters, wider than 30", l, len(l))
		}
		if i > 0 && !strings.HasPrefix(l, "    ") {
			t.Errorf("continuation line %q is not indented under the text", l)
		}
		words = append(words, strings.Fields(strings.TrimPrefix(l, "  - "))...)
	}
	if strings.Join(words, " ") != text {
		t.Errorf("the words changed: %q", strings.Join(words, " "))
	}
}
