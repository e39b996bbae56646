package testlog

import (
	"bytes"
	"ctxlab/testkit/filetree"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// pythonWith returns a python interpreter that can import module, trying python3 on PATH, then /usr/bin/python3
// (where Debian's python3-pytest installs; .ci/run installs it).
func pythonWith(t *testing.T, module string) string {
	t.Helper()
	for _, p := range []string{"python3", "/usr/bin/python3"} {
		path, err := exec.LookPath(p)
		if err != nil {
			continue
		}
		if exec.Command(path, "-c", "import "+module).Run() == nil {
			return path
		}
	}
	t.Fatalf("no python3 with %s found (install python3-pytest; .ci/run does)", module)
	return ""
}

// run returns the combined output; the exit code is ignored on purpose (failing tests exit non-zero).
func runPy(t *testing.T, dir, bin string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	out, _ := cmd.CombinedOutput()
	return out
}

const pytestFile = `import pytest

def test_pass():
    assert 1 + 1 == 2

def test_fail():
    assert 1 + 1 == 3

@pytest.mark.skip(reason="not today")
def test_skip():
    pass

@pytest.mark.xfail(reason="known")
def test_xfail():
    assert False

@pytest.fixture
def broken():
    raise RuntimeError("fixture broke")

def test_error(broken):
    pass

@pytest.mark.parametrize("x", ["a b", "c"])
def test_param(x):
    assert x != "c"

class TestGroup:
    def test_method(self):
        assert True
`

func TestParsePytestOnRealRun(t *testing.T) {
	py := pythonWith(t, "pytest")
	dir := t.TempDir()
	filetree.Write(t, dir, map[string]string{"tests/test_sample.py": pytestFile})
	want := map[string]Status{
		"tests/test_sample.py::test_pass":              StatusPass,
		"tests/test_sample.py::test_fail":              StatusFail,
		"tests/test_sample.py::test_xfail":             StatusPass,
		"tests/test_sample.py::test_error":             StatusFail,
		"tests/test_sample.py::test_param[a b]":        StatusPass,
		"tests/test_sample.py::test_param[a":           StatusPass, // SWE-bench's cut form
		"tests/test_sample.py::test_param[c]":          StatusFail,
		"tests/test_sample.py::TestGroup::test_method": StatusPass,
	}
	for _, args := range [][]string{
		{"-m", "pytest", "-rA", "-p", "no:cacheprovider", "tests/test_sample.py"},
		{"-m", "pytest", "-rA", "-v", "-p", "no:cacheprovider", "tests/test_sample.py"},
	} {
		out := runPy(t, dir, py, args...)
		rep, err := ParsePytest(bytes.NewReader(out))
		if err != nil {
			t.Fatal(err)
		}
		for name, st := range want {
			rs := rep.Tests[name]
			if len(rs) == 0 || rs[0].Status != st {
				t.Errorf("%v: %s = %v, want %s\n%s", args, name, rs, st, out)
			}
		}
		// -rA names a skip by location only, and -v progress lines are not read (a test could print one).
		if rs := rep.Tests["tests/test_sample.py::test_skip"]; len(rs) != 0 {
			t.Errorf("%v: skip read from outside the summary: %v", args, rs)
		}
		v := Decide([]string{"tests/test_sample.py::test_pass"}, []string{"tests/test_sample.py::test_xfail"}, rep)
		if !v.Resolved {
			t.Errorf("pass + xfail not resolved: %+v", v)
		}
		for _, bad := range []string{"tests/test_sample.py::test_fail", "tests/test_sample.py::test_error",
			"tests/test_sample.py::test_absent"} {
			if Decide([]string{bad}, nil, rep).Resolved {
				t.Errorf("%v: FAIL_TO_PASS %s resolved", args, bad)
			}
		}
	}
}

const unittestFile = `import unittest

class TestCalc(unittest.TestCase):
    def test_add(self):
        self.assertEqual(1 + 1, 2)

    def test_sub(self):
        self.assertEqual(2 - 1, 0)

    def test_boom(self):
        raise ValueError("boom")

    @unittest.skip("later")
    def test_skipped(self):
        pass

    @unittest.expectedFailure
    def test_expected(self):
        self.assertTrue(False)

    def test_doc(self):
        """A docstring moves the status to the next line."""
        self.assertTrue(True)

    def test_noisy(self):
        print("output without a newline", end="")
        self.assertTrue(True)
`

func TestParseUnittestOnRealRun(t *testing.T) {
	py := pythonWith(t, "unittest")
	dir := t.TempDir()
	filetree.Write(t, dir, map[string]string{"pkg/__init__.py": "", "pkg/test_calc.py": unittestFile})
	out := runPy(t, dir, py, "-m", "unittest", "-v", "pkg.test_calc")
	rep, err := ParseUnittest(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Status{
		"test_add (pkg.test_calc.TestCalc.test_add)": StatusPass,
		"test_add (pkg.test_calc.TestCalc)":          StatusPass,
		"pkg.test_calc.TestCalc.test_add":            StatusPass,
		"test_sub (pkg.test_calc.TestCalc)":          StatusFail,
		"test_boom (pkg.test_calc.TestCalc)":         StatusFail,
		"test_skipped (pkg.test_calc.TestCalc)":      StatusSkip,
		"test_expected (pkg.test_calc.TestCalc)":     StatusPass,
		"test_doc (pkg.test_calc.TestCalc)":          StatusPass,
		"test_noisy (pkg.test_calc.TestCalc)":        StatusPass,
	}
	for name, st := range want {
		rs := rep.Tests[name]
		if len(rs) == 0 || rs[0].Status != st {
			t.Errorf("%s = %v, want %s\n%s", name, rs, st, out)
		}
	}
	if !Decide([]string{"test_add (pkg.test_calc.TestCalc)"}, []string{"pkg.test_calc.TestCalc.test_doc"}, rep).Resolved {
		t.Error("passing tests not resolved")
	}
	// A skip counts neither way (the harness's rule): beside a failure it does not resolve, alone it does.
	if v := Decide([]string{"test_skipped (pkg.test_calc.TestCalc)"}, nil, rep); !v.Resolved || len(v.Skipped) != 1 {
		t.Errorf("a skipped FAIL_TO_PASS test alone: %+v", v)
	}
	for _, bad := range []string{"test_sub (pkg.test_calc.TestCalc)", "test_missing (pkg.test_calc.TestCalc)"} {
		if Decide([]string{bad}, nil, rep).Resolved {
			t.Errorf("FAIL_TO_PASS %s resolved", bad)
		}
	}
}

func TestParseDispatch(t *testing.T) {
	rep, err := Parse(ParserPytest, strings.NewReader("==== short test summary info ====\nPASSED a.py::t\n"))
	if err != nil || len(rep.Tests["a.py::t"]) != 1 {
		t.Fatalf("pytest dispatch: %v %v", rep, err)
	}
	rep, err = Parse(ParserGo, bytes.NewReader([]byte(`{"Action":"pass","Package":"p","Test":"TestA"}`+"\n")))
	if err != nil || len(rep.Tests["TestA"]) != 1 {
		t.Fatalf("go dispatch: %v %v", rep, err)
	}
}

// Output a test prints lands in pytest's FAILURES and PASSES sections, before the short test summary: a test's
// printed "PASSED name" or "name PASSED" line is output, not a result, so a listed test that never ran stays
// missing.
func TestParsePytestReadsOnlyTheSummary(t *testing.T) {
	py := pythonWith(t, "pytest")
	dir := t.TempDir()
	filetree.Write(t, dir, map[string]string{"tests/test_t.py": `import pytest

def test_a():
    print("PASSED tests/test_t.py::test_gone")
    print("tests/test_t.py::test_gone PASSED")

def test_f():
    print("=========================== short test summary info ============================")
    print("PASSED tests/test_t.py::test_gone2")
    assert False

@pytest.mark.skip(reason="r")
def test_s():
    pass
`})
	for _, args := range [][]string{
		{"-m", "pytest", "-rA", "-p", "no:cacheprovider", "tests/test_t.py"},
		{"-m", "pytest", "-rA", "-v", "-p", "no:cacheprovider", "tests/test_t.py"},
	} {
		out := runPy(t, dir, py, args...)
		rep, err := ParsePytest(bytes.NewReader(out))
		if err != nil {
			t.Fatal(err)
		}
		for name, want := range map[string]Status{"tests/test_t.py::test_a": StatusPass,
			"tests/test_t.py::test_f": StatusFail, "tests/test_t.py::test_gone": "", "tests/test_t.py::test_gone2": ""} {
			got := Status("")
			if rs := rep.Tests[name]; len(rs) > 0 {
				got = rs[0].Status
			}
			if got != want {
				t.Errorf("%v: %s = %q, want %q\n%s", args, name, got, want, out)
			}
		}
	}
}

// unittest -v names: a docstring's first line (Django's harness keys such a test by it), subtests ("name (id)
// (i=1)", "[msg] (k='v')") with their own results, a failing subtest failing its test; a bare \r ends a line.
func TestParseUnittestNames(t *testing.T) {
	py := pythonWith(t, "unittest")
	dir := t.TempDir()
	filetree.Write(t, dir, map[string]string{"pkg/__init__.py": "", "pkg/test_s.py": `import sys
import unittest


class T(unittest.TestCase):
    def test_sub(self):
        for i in range(3):
            with self.subTest(i=i):
                self.assertNotEqual(i, 1)

    def test_sub_msg(self):
        with self.subTest("named case", k="v"):
            self.fail("x")

    def test_sub_ok(self):
        for i in range(2):
            with self.subTest(i=i):
                pass

    def test_doc(self):
        """First doc line.

        More."""

    def test_doc_fail(self):
        """Doc fails."""
        self.fail("f")

    def test_cr(self):
        sys.stderr.write("progress 1\rprogress 2\r")
`})
	out := runPy(t, dir, py, "-m", "unittest", "-v", "pkg.test_s")
	rep, err := ParseUnittest(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]Status{
		"test_sub (pkg.test_s.T.test_sub)":                              StatusFail,
		"test_sub (pkg.test_s.T)":                                       StatusFail,
		"test_sub (pkg.test_s.T.test_sub) (i=1)":                        StatusFail,
		"test_sub (pkg.test_s.T) (i=1)":                                 StatusFail,
		"test_sub_msg (pkg.test_s.T.test_sub_msg) [named case] (k='v')": StatusFail,
		"test_sub_msg (pkg.test_s.T)":                                   StatusFail,
		"test_sub_ok (pkg.test_s.T)":                                    StatusPass,
		"test_doc (pkg.test_s.T)":                                       StatusPass,
		"First doc line.":                                               StatusPass,
		"test_doc_fail (pkg.test_s.T.test_doc_fail)":                    StatusFail,
		"Doc fails.":             StatusFail,
		"test_cr (pkg.test_s.T)": StatusPass,
	} {
		got := Status("")
		for _, r := range rep.Tests[name] {
			if got == "" || r.Status == StatusFail {
				got = r.Status
			}
		}
		if got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	if t.Failed() {
		t.Logf("output:\n%s", out)
	}
	// Two results that a bare \r separates are two lines.
	rep, err = ParseUnittest(strings.NewReader("test_a (m.T.test_a) ... ok\rtest_b (m.T.test_b) ... FAIL\n"))
	if err != nil {
		t.Fatal(err)
	}
	if a, b := rep.Tests["test_a (m.T)"], rep.Tests["test_b (m.T)"]; len(a) != 1 || a[0].Status != StatusPass ||
		len(b) != 1 || b[0].Status != StatusFail {
		t.Errorf("\\r-separated results: a %v b %v", a, b)
	}
}
