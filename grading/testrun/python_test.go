package testrun

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"ctxlab/grading/testlog"
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

// resultsPlugin writes ctxlab's pytest results plugin (the executor's, as the executor writes it into a worktree)
// into dir/.h and returns that folder.
func resultsPlugin(t *testing.T, dir string) string {
	t.Helper()
	plugin, err := os.ReadFile(filepath.Join("..", "executor", "python", "ctxlab_results.py"))
	if err != nil {
		t.Fatal(err)
	}
	helpers := filepath.Join(dir, ".h")
	if err := os.MkdirAll(helpers, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(helpers, "ctxlab_results.py"), plugin, 0o644); err != nil {
		t.Fatal(err)
	}
	return helpers
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
	// The results plugin reports test_env although the run is killed before pytest's summary.
	helpers := resultsPlugin(t, dir)
	res, err := Run(context.Background(), Options{Dir: dir, Timeout: 8 * time.Second, Parser: testlog.ParserPytest,
		Command: []string{py, "-m", "pytest", "-rA", "-v", "-p", "no:cacheprovider", "-p", "ctxlab_results", "test_c.py"},
		Results: filepath.Join(helpers, "results"), ExtraEnv: []string{"PYTHONPATH=" + helpers}})
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

// With Options.Results the report comes from the file ctxlab's pytest plugin writes, never from the output: a test
// that prints a passing summary line for a failing test, or looks for the results file by its variable or by its
// folder to write into it, changes nothing. A run whose command never loads the plugin reads no result at all and
// says so.
func TestPythonResultsFromPlugin(t *testing.T) {
	py := pytestPython(t)
	dir := t.TempDir()
	helpers := resultsPlugin(t, dir)
	if err := os.MkdirAll(filepath.Join(dir, "tests"), 0o755); err != nil {
		t.Fatal(err)
	}
	test := `import os
import pytest


def test_pass():
    pass


def test_fail():
    assert False


@pytest.mark.skip(reason="r")
def test_skip():
    pass


@pytest.mark.xfail(reason="known")
def test_xfail():
    assert False


def test_forge():
    print("PASSED tests/test_x.py::test_fail")
    assert os.environ.get("CTXLAB_RESULTS") is None, "the results file's name reached the tests"
    here = os.path.join(os.path.dirname(__file__), "..", ".h")
    assert sorted(os.listdir(here)) == ["__pycache__", "ctxlab_results.py"] or sorted(os.listdir(here)) == ["ctxlab_results.py"], os.listdir(here)
`
	if err := os.WriteFile(filepath.Join(dir, "tests", "test_x.py"), []byte(test), 0o644); err != nil {
		t.Fatal(err)
	}
	base := []string{py, "-m", "pytest", "-rA", "-p", "no:cacheprovider", "tests/test_x.py"}
	res, err := Run(context.Background(), Options{Dir: dir, Timeout: time.Minute, Parser: testlog.ParserPytest,
		Command: append(slices.Clone(base), "-p", "ctxlab_results"), Results: filepath.Join(helpers, "results"),
		ExtraEnv: []string{"PYTHONPATH=" + helpers, "PYTHONDONTWRITEBYTECODE=1"}})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"tests/test_x.py::test_pass": "pass", "tests/test_x.py::test_fail": "fail",
		"tests/test_x.py::test_skip": "skip", "tests/test_x.py::test_xfail": "pass", "tests/test_x.py::test_forge": "pass"} {
		if got := status(res.Report, name); got != want {
			t.Errorf("%s = %q, want %q\n%s", name, got, want, res.Output)
		}
	}
	if rs := res.Report.Tests["tests/test_x.py::test_fail"]; len(rs) != 1 || res.Note != "" {
		t.Errorf("test_fail has %d results (a printed line counted?), note %q", len(rs), res.Note)
	}

	// The same command without the plugin: the output says PASSED, the report says nothing, the note says why.
	res, err = Run(context.Background(), Options{Dir: dir, Timeout: time.Minute, Parser: testlog.ParserPytest,
		Command: base, Results: filepath.Join(helpers, "results"),
		ExtraEnv: []string{"PYTHONPATH=" + helpers, "PYTHONDONTWRITEBYTECODE=1"}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res.Output), "PASSED tests/test_x.py::test_pass") || len(res.Report.Tests) != 0 ||
		!strings.Contains(res.Note, "never started ctxlab's results plugin") {
		t.Errorf("without the plugin: %d results, note %q\n%s", len(res.Report.Tests), res.Note, res.Output)
	}
	// A results file that already exists (a name the patch prepared) is refused.
	if _, err := Run(context.Background(), Options{Dir: dir, Timeout: time.Minute, Parser: testlog.ParserPytest,
		Command: base, Results: filepath.Join(helpers, "ctxlab_results.py")}); err == nil ||
		!strings.Contains(err.Error(), "results file") {
		t.Errorf("an existing results file: %v", err)
	}
}
