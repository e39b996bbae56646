package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ctxlab/activities/api/errkind"
	"ctxlab/results"
)

// hidePythonScript runs a starter in a private mount namespace where every python3 the grader could find is hidden
// (an unreadable device bound over /usr/bin/python3, and a PATH without any other): a machine that lacks the
// interpreter.
const hidePythonScript = `set -u
for p in /usr/bin/python3 /usr/local/bin/python3; do
	if [ -e "$p" ]; then mount --bind /dev/null "$(readlink -f "$p")" || exit 97; fi
done
PATH="$GODIR:/usr/bin:/bin" exec "$STARTER" "$@"
`

// TestHiddenPythonIsTheEnvironmentsAndARerunFixesIt (issue 27, "Done when"): on a machine whose python3 is hidden,
// starter run's check refuses before anything runs (exit 2, naming the Python instance and python3, no row
// written); a sweep run past the check (--no-check) files its Python rows as the environment's failure
// (missing_runner, class environment, which a re-run retries), not the model's, and grades its Go rows as usual; a
// plain re-run on the machine with its python3 (and pytest, which scripts/test installs) passes the check, says it
// retries them and ends with 0 errors, each row once. Before, the rows were filed "model ... final" and the re-run
// exited 4 again.
func TestHiddenPythonIsTheEnvironmentsAndARerunFixesIt(t *testing.T) {
	t.Parallel()
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Fatalf("no unshare (util-linux) to hide python3: %v", err)
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"--mount", "--propagation", "private"}
	if os.Geteuid() != 0 {
		args = append([]string{"--user", "--map-root-user"}, args...)
	}
	spec := demoVariant(t, "{ name: 'nopython', dataset+: { instances: ['acme__tablefmt-1', 'acme__humanize-1'] }, "+
		referenceMethods+" }")
	runs := t.TempDir()
	dir := filepath.Join(runs, "nopython")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	hidden := func(starterArgs ...string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, unshare, append(append(args, "sh", "-c", hidePythonScript, "sh"),
			starterArgs...)...)
		cmd.Env = append(starter(ctx, t).Env, "GODIR="+filepath.Dir(gobin), "STARTER="+os.Args[0])
		return cmd.CombinedOutput()
	}
	out, err := hidden("run", spec, "--runs", runs)
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitUsage ||
		!strings.Contains(string(out), "instance acme__tablefmt-1: its python tests cannot run here") ||
		!strings.Contains(string(out), "python3 is not on PATH") || strings.Contains(string(out), "acme__humanize-1") {
		t.Fatalf("the run's check without python3: %v, want exit %d naming acme__tablefmt-1 (only) and python3\n%s",
			err, exitUsage, lastLines(string(out), 20))
	}
	if _, err := os.Stat(filepath.Join(dir, "results.jsonl")); !os.IsNotExist(err) {
		t.Fatalf("results.jsonl after the check refused: %v", err)
	}
	out, err = hidden("run", spec, "--runs", runs, "--no-check")
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitRowErrors {
		t.Fatalf("the sweep without python3 (--no-check): %v, want exit %d\n%s", err, exitRowErrors,
			lastLines(string(out), 20))
	}
	rows := readRows(t, filepath.Join(dir, "results.jsonl"))
	failed := 0
	for k, r := range rows {
		python := k.Instance == "acme__tablefmt-1"
		switch {
		case python && r["grade_status"] == "empty_patch":
			// An empty patch is graded without running a test: no interpreter needed.
		case python && (results.ErrorKind(r) != string(errkind.MissingRunner) ||
			r[results.FieldErrorClass] != string(errkind.Environment) ||
			!strings.Contains(r.String(results.FieldError), "python3")):
			t.Errorf("Python row %v: kind %q, class %v, error %v; want missing_runner, environment, naming python3", k,
				results.ErrorKind(r), r[results.FieldErrorClass], r[results.FieldError])
		case python:
			failed++
		case r[results.FieldError] != nil:
			t.Errorf("Go row %v failed: %v", k, r[results.FieldError])
		}
	}
	if len(rows) != 4 || failed == 0 {
		t.Fatalf("%d rows, %d Python rows failed; want 2 instances x 2 methods, the Python rows with tests to run "+
			"failed", len(rows), failed)
	}
	if want := fmt.Sprintf("by cause: environment %d (missing_runner %d; a re-run retries them)", failed, failed); !strings.Contains(string(out), want) {
		t.Errorf("the sweep without python3 does not say %q:\n%s", want, lastLines(string(out), 10))
	}

	_, stderr, code := runStarter(t, 6*time.Minute, "run", spec, "--runs", runs)
	if want := fmt.Sprintf("%d row(s) to retry: environment %d (missing_runner %d)", failed, failed, failed); code != exitOK ||
		!strings.Contains(stderr, want) {
		t.Errorf("the re-run on the fixed machine: exit %d, want 0, saying %q:\n%s", code, want, lastLines(stderr, 10))
	}
	all, _, err := results.ReadFile(filepath.Join(dir, "results.jsonl"))
	if err != nil || len(all) != 4 {
		t.Fatalf("results.jsonl: %d rows (%v), want each row once", len(all), err)
	}
	for _, r := range all {
		if r[results.FieldError] != nil || r["grade_status"] == nil {
			t.Errorf("row %v after the re-run: error %v, grade %v", r.Key(), r[results.FieldError], r["grade_status"])
		}
	}
}
