package executor

import (
	"os"
	"slices"
	"testing"
)

// paritySample is what a parity corpus checks: every one of all with CTXLAB_PARITY=full, else (plain go test,
// scripts/test, CI) the members of sample, a fixed part of the corpus chosen to hold each kind of thing the whole
// corpus holds (docs/grading.md says which). Both runs of a comparison (ctxlab's grader and the reference runner)
// see the same members, so a sample still compares the real go test, unittest or pytest with ctxlab, outcome by
// outcome; it only compares fewer packages. A sample member that is not in the corpus fails the test.
func paritySample[T comparable](t *testing.T, all, sample []T) []T {
	t.Helper()
	for _, s := range sample {
		if !slices.Contains(all, s) {
			t.Fatalf("parity sample member %v is not in the corpus", s)
		}
	}
	if parityFull() {
		t.Logf("CTXLAB_PARITY=full: all %d members of the corpus", len(all))
		return all
	}
	t.Logf("the CI sample: %d of the corpus's %d members (CTXLAB_PARITY=full checks every one)", len(sample), len(all))
	var out []T
	for _, a := range all {
		if slices.Contains(sample, a) {
			out = append(out, a)
		}
	}
	return out
}

// parityFull reports CTXLAB_PARITY=full.
func parityFull() bool { return os.Getenv("CTXLAB_PARITY") == "full" }
