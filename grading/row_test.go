package grading

import (
	"strings"
	"testing"
)

func TestHeadOfKeepsWholeLines(t *testing.T) {
	long := strings.Repeat("a line of compiler output\n", 200)
	got := headOf(long, maxBuildError)
	if len(got) > maxBuildError+10 || !strings.HasSuffix(got, "output\n[...]\n") || !strings.HasPrefix(long, strings.TrimSuffix(got, "[...]\n")) {
		t.Errorf("headOf: %d bytes, ends %q", len(got), got[len(got)-20:])
	}
	if headOf("short\n", maxBuildError) != "short\n" {
		t.Error("short text changed")
	}
}
