package diff

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/bluekeyes/go-gitdiff/gitdiff"
)

// A 3000-line file with 30 edits; the target is shifted by 5 lines (strict finds every hunk at an offset) or also
// has a context line changed next to every edit (only fuzz applies).
func benchCase() (src, shifted, drifted []byte, patch string) {
	src = lines(3000, func(i int) string { return fmt.Sprintf("line %d of a longer file", i) })
	dst := edited(src, func(ls []string) []string {
		for i := 50; i < 3000; i += 100 {
			ls[i] = "edited " + ls[i]
		}
		return ls
	})
	patch = Unified("f", src, dst)
	shifted = append([]byte("a\nb\nc\nd\ne\n"), src...)
	drifted = edited(shifted, func(ls []string) []string {
		for i := 50 + 5 - 2; i < len(ls); i += 100 {
			ls[i] = "drifted"
		}
		return ls
	})
	return src, shifted, drifted, patch
}

// BenchmarkGoGitdiffAtPosition is the baseline: go-gitdiff's own applier, every hunk at its stated position.
func BenchmarkGoGitdiffAtPosition(b *testing.B) {
	src, _, _, patch := benchCase()
	files, _, err := gitdiff.Parse(strings.NewReader(patch))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		var out bytes.Buffer
		if err := gitdiff.Apply(&out, bytes.NewReader(src), files[0]); err != nil {
			b.Fatal(err)
		}
	}
}

func benchApply(b *testing.B, target []byte, want Outcome) {
	_, _, _, patch := benchCase()
	files, err := Parse(patch)
	if err != nil {
		b.Fatal(err)
	}
	m := mode{}
	if want == AppliedWithFuzz {
		m.fuzz = DefaultFuzz
	}
	for b.Loop() {
		pl := newPlan(func(string) ([]byte, bool, error) { return target, true, nil }, m)
		if err := pl.apply(files); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStrictAtPosition(b *testing.B) {
	src, _, _, _ := benchCase()
	benchApply(b, src, Applied)
}
func BenchmarkStrictShifted(b *testing.B) { _, s, _, _ := benchCase(); benchApply(b, s, Applied) }
func BenchmarkFuzzDrifted(b *testing.B)   { _, _, d, _ := benchCase(); benchApply(b, d, AppliedWithFuzz) }
