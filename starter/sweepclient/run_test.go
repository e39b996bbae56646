package sweepclient

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ctxlab/dataset/swebench"
	"ctxlab/specs"
	"ctxlab/starter/exitcode"
)

// A spec that does not compile stops the round before anything runs: exit 2, the spec named, nothing checked.
func TestRunOfBadSpecIsUsage(t *testing.T) {
	runs := t.TempDir()
	spec := filepath.Join(t.TempDir(), "bad.jsonnet")
	if err := os.WriteFile(spec, []byte("{ name: 'x', \n"), 0o644); err != nil {
		t.Fatal(err)
	}
	checked := false
	var out, errb bytes.Buffer
	code := Run(Options{Spec: spec, Runs: runs, Check: func(context.Context, *specs.Experiment, *specs.Plan,
		[]swebench.Instance, string, bool, string, io.Writer) bool {
		checked = true
		return true
	}}, &out, &errb)
	if code != exitcode.Usage || !strings.Contains(errb.String(), "bad.jsonnet") || checked {
		t.Errorf("run of a spec that does not compile: exit %d, checked %v, stderr %q", code, checked, errb.String())
	}
}

// The checks run before anything is paid: one that fails stops the round with exit 2 before the plan is stored or a
// server started; with --no-worker they are told the workers are not this process's.
func TestRunStopsWhenChecksFail(t *testing.T) {
	for _, noWorker := range []bool{false, true} {
		runs := t.TempDir()
		var gotWorkers bool
		var gotInstances int
		var out, errb bytes.Buffer
		code := Run(Options{Spec: filepath.Join("..", "..", "specs", "demo.jsonnet"), Runs: runs, Quiet: true,
			NoWorker: noWorker, Check: func(_ context.Context, e *specs.Experiment, plan *specs.Plan,
				instances []swebench.Instance, runDir string, workers bool, _ string, w io.Writer) bool {
				gotWorkers, gotInstances = workers, len(instances)
				io.WriteString(w, "check: a problem\n")
				return false
			}}, &out, &errb)
		if code != exitcode.Usage || gotWorkers == noWorker || gotInstances == 0 ||
			!strings.Contains(errb.String(), "check: a problem") {
			t.Errorf("no-worker %v: exit %d, workers %v, %d instances, stderr %q", noWorker, code, gotWorkers,
				gotInstances, errb.String())
		}
		if _, err := os.Stat(filepath.Join(runs, "demo", "cas")); err == nil {
			t.Errorf("no-worker %v: the plan was stored although the checks failed", noWorker)
		}
	}
}
