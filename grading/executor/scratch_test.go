package executor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ctxlab/grading/sandbox"
	"ctxlab/patch/diff"
)

// Issue 39, defect 3: with the worker's TMPDIR on a scratch disk (outside /tmp), graded code writes conftest.py into
// the folder that holds every grade's worktree. pytest loads conftest.py files from a test's folder and every
// folder above it when the repository has no ini file, so a later grade of an unfixed patch would resolve. The
// first grade's patch fixes nothing and is no test file: it only writes the conftest when its module is imported.
func TestLocalGradeLeavesNothingForTheNext(t *testing.T) {
	if ok, why := sandbox.Available(); !ok {
		t.Skipf("isolation unavailable here: %s", why)
	}
	py := python(t)
	scratch, err := os.MkdirTemp("/", "ctxlab-test-scratch-")
	if err != nil {
		t.Fatalf("a scratch folder outside /tmp: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(scratch) })
	if err := os.Chmod(scratch, 0o1777); err != nil { // as /tmp: every user may make folders there
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", scratch)
	in := calcInstance()
	hostile := calcBase["calc/ops.py"] + `

import os as _os

for _d in (_os.path.dirname(_os.getcwd()), _os.path.dirname(_os.path.dirname(_os.getcwd()))):
    try:
        with open(_os.path.join(_d, "conftest.py"), "w") as _f:
            _f.write(` + "'''" + zzPlugin + "'''" + `)
    except OSError:
        pass
`
	first := diff.Unified("calc/ops.py", []byte(calcBase["calc/ops.py"]), []byte(hostile))
	unrelated := diff.Unified("README.md", []byte(calcBase["README.md"]), []byte("calc, a calculator\n"))
	for i, patch := range []string{first, unrelated} {
		req := Request{Instance: in, Patch: patch, Materialize: materializer(calcBase), Timeout: 2 * time.Minute,
			Config: Config{Python: py}}
		res, err := Local{}.Run(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Ran || res.Isolation != sandbox.IsolationNamespaces {
			t.Fatalf("grade %d: ran %v, isolation %q\n%s", i+1, res.Ran, res.Isolation, res.Output)
		}
		if v := decide(in, res); v.Resolved {
			t.Errorf("grade %d resolved without a fix: %+v\n%s", i+1, v, res.Output)
		}
	}
	left, _ := filepath.Glob(filepath.Join(scratch, "*"))
	for _, p := range left {
		if strings.HasSuffix(p, "conftest.py") {
			t.Errorf("graded code left %s on the host", p)
		}
	}
}
