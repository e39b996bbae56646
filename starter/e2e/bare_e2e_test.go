package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"ctxlab/results"
	"ctxlab/specs"
	"ctxlab/testkit/e2e"
)

// bareEnv makes TestDemoOnBareMachine fail, instead of skip, where it cannot hide the Python packages (scripts/test
// sets it).
const bareEnv = "CTXLAB_BARE"

// pythonPackageDirs are the folders of installed packages of every python3 the grader could pick (python3 on PATH,
// and /usr/bin/python3, as executor.FindPython looks), and of Debian's python3: site-packages, dist-packages and
// the user's site-packages, those that exist.
func pythonPackageDirs(t *testing.T) []string {
	t.Helper()
	var pythons []string
	for _, p := range []string{"python3", "/usr/bin/python3"} {
		if path, err := exec.LookPath(p); err == nil && !slices.Contains(pythons, path) {
			pythons = append(pythons, path)
		}
	}
	dirs := []string{"/usr/lib/python3/dist-packages", "/usr/local/lib/python3/dist-packages"}
	const script = "import site, sys\nprint('\\n'.join(site.getsitepackages() + [site.getusersitepackages()] + sys.path))"
	for _, py := range pythons {
		out, err := exec.Command(py, "-c", script).Output()
		if err != nil {
			t.Fatalf("%s: listing its package folders: %v", py, err)
		}
		for _, d := range strings.Fields(string(out)) {
			if strings.Contains(d, "-packages") && !slices.Contains(dirs, d) {
				dirs = append(dirs, d)
			}
		}
	}
	var existing []string
	for _, d := range dirs {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			existing = append(existing, d)
		}
	}
	return existing
}

// TestDemoOnBareMachine is issue 27's second story: the README demo on a machine with Go and nothing installed by
// hand. The starter runs in a private mount namespace where an empty tmpfs hides every folder of installed Python
// packages of every python3 it could grade with (Debian's dist-packages, a pyenv build's site-packages), so no
// pytest is importable (checked inside before the run): it exits 0 with every row free of errors, and the Python
// instance's gold-file context resolves it.
func TestDemoOnBareMachine(t *testing.T) {
	t.Parallel()
	unshare, err := exec.LookPath("unshare")
	if err != nil || os.Geteuid() != 0 {
		msg := "hiding Python's packages needs root and unshare (util-linux)"
		if os.Getenv(bareEnv) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg + "; " + bareEnv + "=1 makes this a failure")
	}
	dirs := pythonPackageDirs(t)
	// The script hides the folders, proves it (no python3 imports pytest, or even finds the folders' packages), and
	// becomes the starter.
	script := `set -e
for d in "$@"; do
  case "$d" in --) shift; break ;; esac
  mount -t tmpfs -o size=1m ctxlab-bare "$d"
  shift
done
for py in python3 /usr/bin/python3; do
  if command -v "$py" >/dev/null && "$py" -c 'import pytest' 2>/dev/null; then
    echo "bare: $py still imports pytest" >&2; exit 97
  fi
done
exec "$@"`
	runs := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := starter(ctx, t, "run", demoSpec(t), "--runs", runs)
	cmd.Args = append(append(append([]string{unshare, "--mount", "--propagation", "private", "sh", "-c", script, "sh"},
		dirs...), "--"), cmd.Args...)
	cmd.Path = unshare
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("the demo did not finish in 10 minutes; stderr:\n%s", e2e.Tail(errb.String(), 4000))
	}
	if err != nil {
		t.Fatalf("the demo on a bare machine (%s hidden): %v\nstdout:\n%s\nstderr:\n%s", strings.Join(dirs, ", "), err,
			out.String(), e2e.Tail(errb.String(), 8000))
	}
	rows := readRows(t, filepath.Join(runs, "demo", "results.jsonl"))
	if len(rows) != 253 {
		t.Errorf("%d rows, want the demo's 253", len(rows))
	}
	python := 0
	for k, r := range rows {
		if r[results.FieldError] != nil {
			t.Errorf("%v: %v", k, r[results.FieldError])
		}
		if k.Instance == "acme__tablefmt-1" {
			python++
			if resolved, _ := r.Bool(specs.Resolved.Name); k.Method == "oracle_files" && !resolved {
				t.Errorf("%v: not resolved with the gold files in its context: %v", k, r)
			}
		}
	}
	if python != 23 {
		t.Errorf("%d rows of the Python instance, want 23", python)
	}
	t.Logf("hid %s", strings.Join(dirs, ", "))
}
