package executor

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"ctxlab/dataset/swebench"
	"ctxlab/patch/diff"
)

// A Multi-SWE-bench row whose run results say TestSub passed with the test patch alone: a patch that fixes Add but
// breaks Sub resolves under SWE-bench's rule (TestSub is not listed) and not under Multi-SWE-bench's ("No new
// failures"), so the local executor must run TestSub although no list names it.
func TestLocalMultiSWEBenchNoNewFailures(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	files := maps.Clone(adderBase)
	files["adder.go"] += "\nfunc Sub(a, b int) int { return a - b }\n"
	files["sub_test.go"] = "package adder\n\nimport \"testing\"\n\nfunc TestSub(t *testing.T) {\n\tif Sub(5, 3) != 2 {\n\t\tt.Fatal(\"sub\")\n\t}\n}\n"
	in := adderInstance()
	in.Format, in.NoNewFailures = swebench.FormatMultiSWEBench, []string{"TestSub"}
	fixed := strings.Replace(files["adder.go"], "return a - b }\n\nfunc Mul", "return a + b }\n\nfunc Mul", 1)
	breaksSub := strings.Replace(fixed, "func Sub(a, b int) int { return a - b }", "func Sub(a, b int) int { return b - a }", 1)
	for _, c := range []struct {
		name, patched string
		resolved      bool
	}{{"gold", fixed, true}, {"fix that breaks an unlisted test", breaksSub, false}} {
		patch := diff.Unified("adder.go", []byte(files["adder.go"]), []byte(c.patched))
		res, err := Local{}.Run(context.Background(), Request{Instance: in, Patch: patch,
			Materialize: materializer(files), Timeout: 5 * time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		v := decide(in, res)
		if v.Resolved != c.resolved {
			t.Errorf("%s: resolved %v, want %v: %+v\n%s", c.name, v.Resolved, c.resolved, v, res.Output)
		}
		if !c.resolved && !slices.Equal(v.Regressed, []string{"TestSub"}) {
			t.Errorf("%s: regressed %v, want TestSub", c.name, v.Regressed)
		}
		// The same row read as SWE-bench's resolves the breaking fix: only Multi-SWE-bench's rule checks TestSub.
		swe := in
		swe.Format = ""
		if !decide(swe, res).Resolved {
			t.Errorf("%s: SWE-bench's rule did not resolve", c.name)
		}
	}
}
