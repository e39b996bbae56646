package e2e

import (
	"strings"
	"testing"

	"ctxlab/dataset/swebench"
	"ctxlab/demobench"
)

// FewDemoInstances picks one Go and one Python instance of the demo, in that order: grading is the slow part, and
// two languages cover both test runners.
func FewDemoInstances(t testing.TB, bench *demobench.Result) []swebench.Instance {
	t.Helper()
	var goInst, pyInst *swebench.Instance
	for i, in := range bench.Instances {
		switch {
		case goInst == nil && strings.Contains(in.TestPatch, "_test.go"):
			goInst = &bench.Instances[i]
		case pyInst == nil && strings.Contains(in.TestPatch, ".py"):
			pyInst = &bench.Instances[i]
		}
	}
	if goInst == nil || pyInst == nil {
		t.Fatal("the demo has no Go or no Python instance")
	}
	return []swebench.Instance{*goInst, *pyInst}
}
