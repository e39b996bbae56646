package testrun

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"ctxlab/activities/testlog"
)

// pytestPython returns python3 on PATH or /usr/bin/python3, whichever imports pytest (.ci/run installs it).
func pytestPython(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"python3", "/usr/bin/python3"} {
		if path, err := exec.LookPath(p); err == nil && exec.Command(path, "-c", "import pytest").Run() == nil {
			return path
		}
	}
	t.Fatal("no python3 with pytest (install python3-pytest; .ci/run does)")
	return ""
}

// A Python test run is contained like a Go one: a hanging test is killed with its whole group at the timeout, the
// tests see no credentials, and the results come from the parsed log.
func TestPythonCommandContained(t *testing.T) {
	py := pytestPython(t)
	t.Setenv("OPENAI_API_KEY", "sk-should-not-leak")
	t.Setenv("ANTHROPIC_API_KEY", "should-not-leak")
	t.Setenv("HF_TOKEN", "should-not-leak")
	dir := t.TempDir()
	marker := filepath.Join(t.TempDir(), "child-pid")
	test := `import os, subprocess, sys, time

def test_env():
    leaked = [k for k in os.environ if "KEY" in k or "TOKEN" in k or "SECRET" in k]
    assert leaked == [], leaked

def test_hang():
    # A grandchild that would outlive a kill of the direct child only.
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
    open(%r, "w").write(str(p.pid))
    time.sleep(3600)
`
	test = strings.Replace(test, "%r", "'"+marker+"'", 1)
	if err := os.WriteFile(filepath.Join(dir, "test_c.py"), []byte(test), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	res, err := Run(context.Background(), Options{Dir: dir, Timeout: 8 * time.Second, Parser: testlog.ParserPytest,
		Command: []string{py, "-m", "pytest", "-rA", "-v", "-p", "no:cacheprovider", "test_c.py"}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.TimedOut {
		t.Fatalf("not timed out after %s\n%s", time.Since(start), res.Output)
	}
	if got := status(res.Report, "test_c.py::test_env"); got != "pass" {
		t.Errorf("test_env = %q (credentials reached the tests?)\n%s", got, res.Output)
	}
	if got := status(res.Report, "test_c.py::test_hang"); got != "" {
		t.Errorf("test_hang = %q, want no result", got)
	}
	b, err := os.ReadFile(marker)
	if err != nil {
		t.Fatalf("the hanging test did not start its child: %v\n%s", err, res.Output)
	}
	pid, _ := strconv.Atoi(string(b))
	deadline := time.Now().Add(3 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("grandchild %d of the killed run survived", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
