package executor

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"ctxlab/dataset/swebench"
	"ctxlab/grading/testlog"
	"ctxlab/patch/diff"
	"ctxlab/testkit/filetree"
)

// The Python parity corpus: CPython's own tests of a dozen standard library modules, from Debian's
// libpython3.11-testsuite, run with Debian's python3 (whose pytest is Debian's python3-pytest; scripts/test installs
// both). They are unittest-based, offline and quick, and hold skips, an expected failure, subtests, docstrings,
// doctests (difflib's load_tests), class fixtures, and mixin classes pytest collects on its own and fails.
const debianPython = "/usr/bin/python3"

var parityModules = []string{"textwrap", "shlex", "csv", "difflib", "fnmatch", "getopt", "reprlib", "fractions",
	"ipaddress", "pprint", "optparse", "bisect"}

// parityBug breaks two functions of the copied modules: shlex.quote(”) and textwrap's sentence endings.
var parityBug = map[string][2]string{
	"shlex.py":    {"    if not s:\n        return \"''\"\n", "    if not s:\n        return \"\"\n"},
	"textwrap.py": {"                chunks[i+1] = \"  \"\n", "                chunks[i+1] = \" \"\n"},
}

// unittestReference runs the named test modules as `python -m unittest` does (unittest.main(module=None):
// loadTestsFromNames, TextTestRunner) and prints one JSON object per test id with the outcome unittest's own
// result lists give it (on lines of their own, marked, since tests print too): errors and failures (a failing subtest fails its test), unexpected successes, expected
// failures, skips, and pass for every other test that ran.
const unittestReference = `import json, sys, unittest

suite = unittest.defaultTestLoader.loadTestsFromNames(sys.argv[1:])
ids = []
def walk(s):
    for t in s:
        if isinstance(t, unittest.TestSuite):
            walk(t)
        else:
            ids.append(t.id())
walk(suite)
result = unittest.TextTestRunner(stream=open("/dev/null", "w"), verbosity=2).run(suite)
outcome = {}
def case(t):
    return t.test_case.id() if isinstance(t, unittest.case._SubTest) else t.id()
for rank, name, items in [(1, "skip", [t for t, _ in result.skipped]), (2, "xfail", [t for t, _ in result.expectedFailures]),
                          (3, "xpass", result.unexpectedSuccesses), (4, "fail", [t for t, _ in result.failures]),
                          (4, "error", [t for t, _ in result.errors])]:
    for t in items:
        if outcome.get(case(t), (0, ""))[0] < rank:
            outcome[case(t)] = (rank, name)
for i in ids + [k for k in outcome if k not in ids]:
    print("ctxlab-reference " + json.dumps({"id": i, "outcome": outcome.get(i, (0, "pass"))[1]}))
`

// junitSuites is pytest's --junitxml report.
type junitSuites struct {
	Cases []struct {
		Class   string    `xml:"classname,attr"`
		Name    string    `xml:"name,attr"`
		Failure *struct{} `xml:"failure"`
		Error   *struct{} `xml:"error"`
		Skipped *struct {
			Type string `xml:"type,attr"`
		} `xml:"skipped"`
	} `xml:"testsuite>testcase"`
}

// parityBucket is the Verdict bucket a reference outcome must land in: what the harness's rule makes of it.
func parityBucket(outcome string) string {
	switch outcome {
	case "pass", "xfail":
		return "passed"
	case "fail", "error", "xpass":
		return "failed"
	case "skip":
		return "skipped"
	}
	return "unknown " + outcome
}

// TestPythonParityCPythonSuite runs beside the other parallel tests of the package (the Go parity corpora, the
// container tests): the grader's temporary folders are its own, under the machine's temporary folder.
func TestPythonParityCPythonSuite(t *testing.T) {
	t.Parallel()
	stdlib, err := exec.Command(debianPython, "-c", "import sysconfig; print(sysconfig.get_paths()['stdlib'])").Output()
	if err != nil {
		t.Fatalf("the parity corpus needs Debian's python3 (scripts/test installs what it needs): %v", err)
	}
	cpythonLib := strings.TrimSpace(string(stdlib))
	if _, err := os.Stat(filepath.Join(cpythonLib, "test", "test_textwrap.py")); err != nil {
		t.Fatalf("the parity corpus needs CPython's test suite, Debian's libpython3.X-testsuite for %s "+
			"(scripts/test installs it): %v", debianPython, err)
	}
	if err := exec.Command(debianPython, "-c", "import pytest").Run(); err != nil {
		t.Fatalf("%s has no pytest (install python3-pytest; scripts/test does): %v", debianPython, err)
	}

	// The repository at its base commit: the modules' sources at the root (so that a patch can break them) and their
	// tests in a package; the test patch touches every test file, so the files mode runs them all.
	repoDir := t.TempDir()
	files := map[string]string{"cpython/__init__.py": ""}
	var testFiles []string
	for _, m := range parityModules {
		for src, dst := range map[string]string{m + ".py": m + ".py", "test/test_" + m + ".py": "cpython/test_" + m + ".py"} {
			b, err := os.ReadFile(filepath.Join(cpythonLib, src))
			if err != nil {
				t.Fatal(err)
			}
			files[dst] = string(b)
		}
		testFiles = append(testFiles, "cpython/test_"+m+".py")
	}
	filetree.Write(t, repoDir, files)
	git := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=ctxlab", "-c", "user.email=ctxlab@example.com"}, args...)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git(repoDir, "init", "-q")
	git(repoDir, "add", "-A")
	git(repoDir, "commit", "-q", "-m", "base")
	base := git(repoDir, "rev-parse", "HEAD")
	materialize := func(_ context.Context, dir string) error {
		archive := exec.Command("git", "-C", repoDir, "archive", base)
		untar := exec.Command("tar", "-x", "-C", dir)
		var err error
		if untar.Stdin, err = archive.StdoutPipe(); err != nil {
			return err
		}
		if err := untar.Start(); err != nil {
			return err
		}
		if err := archive.Run(); err != nil {
			return err
		}
		return untar.Wait()
	}
	var testPatch, bugPatch strings.Builder
	for _, f := range testFiles {
		testPatch.WriteString(diff.Unified(f, []byte(files[f]), []byte(files[f]+"\n# the parity corpus's test patch\n")))
	}
	for _, f := range slices.Sorted(maps.Keys(parityBug)) {
		fix := parityBug[f]
		if !strings.Contains(files[f], fix[0]) {
			t.Fatalf("%s: the injected bug's line is not there", f)
		}
		bugPatch.WriteString(diff.Unified(f, []byte(files[f]), []byte(strings.Replace(files[f], fix[0], fix[1], 1))))
	}
	modules := make([]string, len(testFiles))
	for i, f := range testFiles {
		modules[i] = strings.ReplaceAll(strings.TrimSuffix(f, ".py"), "/", ".")
	}

	// The references run on a worktree made the same way (base, the patch, the test patch).
	tree := func(patch string) string {
		t.Helper()
		dir := t.TempDir()
		if err := materialize(context.Background(), dir); err != nil {
			t.Fatal(err)
		}
		if _, err := diff.ApplyDir(dir, patch); err != nil {
			t.Fatal(err)
		}
		if _, err := diff.ApplyDir(dir, testPatch.String()); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	refRun := func(dir string, args ...string) []byte {
		t.Helper()
		cmd := exec.Command(debianPython, args...)
		cmd.Dir = dir
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir(), "PYTHONDONTWRITEBYTECODE=1", "PYTHONPATH=" + dir}
		out, _ := cmd.Output() // failing tests exit non-zero
		return out
	}
	unittestRef := func(dir string) map[string]string {
		return unittestLists(t, refRun(dir, append([]string{"-c", unittestReference}, modules...)...))
	}
	pytestRef := func(dir string) map[string]string {
		return junitReference(t, func(args ...string) []byte { return refRun(dir, args...) },
			filepath.Join(t.TempDir(), "junit.xml"), testFiles, modules)
	}

	type tally struct{ tests, agree, passed, failed, skipped, missing int }
	var summary []string
	// The base is graded with a patch that changes no code (an empty patch would not run).
	noFix := diff.Unified("PARITY.md", nil, []byte("CPython's tests of a dozen modules\n"))
	for _, scenario := range []struct{ name, patch string }{{"base", noFix}, {"injected bug", bugPatch.String()}} {
		dir := tree(scenario.patch)
		refs := map[string]map[string]string{testlog.ParserUnittest: unittestRef(dir), testlog.ParserPytest: pytestRef(dir)}
		for _, runner := range []struct {
			parser string
			cfg    Config
		}{
			{testlog.ParserUnittest, Config{TestCmd: debianPython + " -m unittest -v"}},
			{testlog.ParserPytest, Config{Python: debianPython}},
		} {
			ref := refs[runner.parser]
			ids := slices.Sorted(maps.Keys(ref))
			if len(ids) < 500 {
				t.Fatalf("%s %s reference: only %d tests", scenario.name, runner.parser, len(ids))
			}
			for _, mode := range []string{TestsFiles, TestsListed} {
				cfg := runner.cfg
				cfg.Tests = mode
				in := swebench.Instance{InstanceID: "cpython__stdlib-1", Repo: "cpython/stdlib", BaseCommit: base,
					TestPatch: testPatch.String(), FailToPass: ids}
				res, err := Local{}.Run(context.Background(), Request{Instance: in, Patch: scenario.patch,
					Materialize: materialize, Timeout: 10 * time.Minute, Config: cfg})
				if err != nil {
					t.Fatal(err)
				}
				if !res.Ran {
					t.Fatalf("%s: the patch did not apply: %s", scenario.name, res.ApplyErr)
				}
				v := testlog.DecideInstance(in, res.Report)
				var n tally
				for _, id := range ids {
					n.tests++
					want, got := parityBucket(ref[id]), bucketOfVerdict(v, id)
					if runner.parser == testlog.ParserUnittest && mode == TestsListed && !strings.HasPrefix(id, "cpython.") {
						// A doctest's id ("difflib.Differ") names no test unittest can load by name.
						want = "missing"
					}
					if want == got {
						n.agree++
					} else {
						t.Errorf("%s, %s runner, %s mode: %s is %s, reference %s (%s)", scenario.name, runner.parser,
							mode, id, got, ref[id], want)
					}
					switch got {
					case "passed":
						n.passed++
					case "failed":
						n.failed++
					case "skipped":
						n.skipped++
					case "missing":
						n.missing++
					}
				}
				// No invented test: every node id the pytest runner reports is one pytest's own report has.
				if runner.parser == testlog.ParserPytest {
					for name := range res.Report.Tests {
						if _, ok := ref[name]; !ok && !strings.Contains(name, " ") {
							t.Errorf("%s, pytest runner, %s mode: %s is not in pytest's report", scenario.name, mode, name)
						}
					}
				}
				if res.Note != "" {
					t.Errorf("%s, %s, %s: %s", scenario.name, runner.parser, mode, res.Note)
				}
				summary = append(summary, fmt.Sprintf("%s, %s runner, %s mode: %d tests, %d agree (%d passed, %d failed, "+
					"%d skipped, %d missing)", scenario.name, runner.parser, mode, n.tests, n.agree, n.passed, n.failed,
					n.skipped, n.missing))
			}
		}
		if scenario.patch != noFix {
			// The bug fails tests in both references, and the same ones in each (test_shlex's and test_textwrap's).
			for _, parser := range []string{testlog.ParserUnittest, testlog.ParserPytest} {
				var broken []string
				for id, o := range refs[parser] {
					if parityBucket(o) == "failed" && (strings.Contains(id, "shlex") || strings.Contains(id, "textwrap")) {
						broken = append(broken, id)
					}
				}
				if len(broken) == 0 {
					t.Errorf("%s reference: the injected bug failed no test", parser)
				}
				sort.Strings(broken)
				summary = append(summary, fmt.Sprintf("injected bug, %s reference: %d tests fail in shlex and textwrap", parser, len(broken)))
			}
		}
	}
	t.Logf("Python parity corpus (%d modules of CPython's test suite):\n%s", len(parityModules), strings.Join(summary, "\n"))
}

// bucketOfVerdict names the Verdict bucket a listed name landed in.
func bucketOfVerdict(v testlog.Verdict, name string) string {
	for _, b := range []struct {
		name  string
		names []string
	}{{"passed", v.Passed}, {"failed", v.Failed}, {"missing", v.Missing}, {"skipped", v.Skipped}} {
		if slices.Contains(b.names, name) {
			return b.name
		}
	}
	return "none"
}
