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

// zzPlugin is a pytest plugin that marks every report passed, whatever happened.
const zzPlugin = `import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    outcome.get_result().outcome = "passed"
`

// addopts sets PYTEST_ADDOPTS before pytest reads it: what a sitecustomize.py or usercustomize.py can do at start.
const addopts = "import os\n\nos.environ[\"PYTEST_ADDOPTS\"] = \"-p zzplugin\"\n"

// realPytestWithPlugin is a pytest.py at the repository's root, which `python -m pytest` runs: it loads the real
// pytest from the rest of the path and runs it with zzplugin added.
const realPytestWithPlugin = `import importlib.machinery
import importlib.util
import os
import sys

path = [p for p in sys.path if os.path.abspath(p or ".") != os.getcwd()]
spec = importlib.machinery.PathFinder.find_spec("pytest", path)
mod = importlib.util.module_from_spec(spec)
sys.modules["pytest"] = mod
spec.loader.exec_module(mod)
sys.exit(mod.main(sys.argv[1:] + ["-p", "zzplugin"]))
`

// patchAdding is a patch that creates each file.
func patchAdding(files map[string]string) string {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(files)) {
		b.WriteString(diff.Unified(name, nil, []byte(files[name])))
	}
	return b.String()
}

// Issue 28, item 9: every file pytest (or Python, before pytest starts) reads its configuration or plugins from is
// a way to load zzplugin, which marks every report passed. A patch that fixes nothing but adds one of them (and
// zzplugin.py) must not resolve: the file is reset before the tests run and listed on the row. Each vector is
// shown to forge a pass when the file is kept (model_tests: keep), so the reset is what stops it.
func TestLocalPytestConfigAndPluginVectors(t *testing.T) {
	py := python(t)
	t.Setenv("TMPDIR", t.TempDir())
	in := calcInstance()
	for _, c := range []struct {
		name    string
		files   map[string]string
		dropped []string // besides zzplugin.py, which is kept: it is no test file, and inert once not loaded
		noKeep  bool     // the vector is inert even when kept (shown dropped only)
	}{
		{"tox.ini", map[string]string{"tox.ini": "[pytest]\naddopts = -p zzplugin\n"}, []string{"tox.ini"}, false},
		{"setup.cfg", map[string]string{"setup.cfg": "[tool:pytest]\naddopts = -p zzplugin\n"}, []string{"setup.cfg"}, false},
		{"pyproject.toml", map[string]string{"pyproject.toml": "[tool.pytest.ini_options]\naddopts = \"-p zzplugin\"\n"},
			[]string{"pyproject.toml"}, false},
		{"pytest.ini", map[string]string{"pytest.ini": "[pytest]\naddopts = -p zzplugin\n"}, []string{"pytest.ini"}, false},
		{".pytest.ini", map[string]string{".pytest.ini": "[pytest]\naddopts = -p zzplugin\n"}, []string{".pytest.ini"}, false},
		{"conftest.py", map[string]string{"conftest.py": "pytest_plugins = ['zzplugin']\n"}, []string{"conftest.py"}, false},
		{"tests/conftest.py", map[string]string{"tests/conftest.py": zzPlugin}, []string{"tests/conftest.py"}, false},
		// Start-up files are inert even when kept: the interpreter starts with none of the worktree on its path
		// (TestLocalStartupFilesCannotForge); they are reset all the same.
		{"sitecustomize.py", map[string]string{"sitecustomize.py": addopts}, []string{"sitecustomize.py"}, true},
		{"usercustomize.py", map[string]string{"usercustomize.py": addopts}, []string{"usercustomize.py"}, true},
		{"entry point in a dist-info folder", map[string]string{
			"zz-1.0.dist-info/METADATA":         "Metadata-Version: 2.1\nName: zz\nVersion: 1.0\n",
			"zz-1.0.dist-info/entry_points.txt": "[pytest11]\nzz = zzplugin\n"},
			[]string{"zz-1.0.dist-info/METADATA", "zz-1.0.dist-info/entry_points.txt"}, false},
		{"entry point in an egg-info folder", map[string]string{
			"zz.egg-info/PKG-INFO":         "Metadata-Version: 2.1\nName: zz\nVersion: 1.0\n",
			"zz.egg-info/entry_points.txt": "[pytest11]\nzz = zzplugin\n"},
			[]string{"zz.egg-info/PKG-INFO", "zz.egg-info/entry_points.txt"}, false},
		// A .pth file is read only in a site folder, which the worktree is not; it is reset all the same.
		{".pth file", map[string]string{"zz.pth": "import zzplugin\n"}, []string{"zz.pth"}, true},
		// A pytest.py at the root is what `python -m pytest` runs: it runs the real pytest with the plugin added.
		{"pytest.py standing in for pytest", map[string]string{"pytest.py": realPytestWithPlugin},
			[]string{"pytest.py"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			files := maps.Clone(c.files)
			files["zzplugin.py"] = zzPlugin
			req := Request{Instance: in, Patch: patchAdding(files), Materialize: materializer(calcBase),
				Timeout: 2 * time.Minute, Config: Config{Python: py}}
			res, err := Local{}.Run(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if v := decide(in, res); v.Resolved || !res.Ran {
				t.Errorf("resolved without a fix: %+v\n%s", v, res.Output)
			}
			if !slices.Equal(res.TestFilesDropped, c.dropped) {
				t.Errorf("dropped %v, want %v", res.TestFilesDropped, c.dropped)
			}
			if c.noKeep {
				return
			}
			req.Config.ModelTests = ModelTestsKeep
			res, err = Local{}.Run(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if v := decide(in, res); !v.Resolved {
				t.Errorf("kept, the vector did not forge (the test shows nothing): %+v\n%s", v, res.Output)
			}
		})
	}
}

// The worker's own PYTEST_ADDOPTS, PYTEST_PLUGINS and PYTHONSTARTUP never reach the tests: a plugin the repository
// happens to hold is not loaded through them.
func TestLocalPytestEnvironmentIgnored(t *testing.T) {
	py := python(t)
	t.Setenv("TMPDIR", t.TempDir())
	t.Setenv("PYTEST_ADDOPTS", "-p zzplugin")
	t.Setenv("PYTEST_PLUGINS", "zzplugin")
	t.Setenv("PYTHONSTARTUP", "zzplugin.py")
	base := maps.Clone(calcBase)
	base["zzplugin.py"] = zzPlugin
	in := calcInstance()
	res, err := Local{}.Run(context.Background(), Request{Instance: in, Patch: diff.Unified("README.md",
		[]byte(calcBase["README.md"]), []byte("calc!\n")), Materialize: materializer(base), Timeout: 2 * time.Minute,
		Config: Config{Python: py}})
	if err != nil {
		t.Fatal(err)
	}
	if v := decide(in, res); v.Resolved {
		t.Errorf("the worker's environment loaded a plugin: %+v\n%s", v, res.Output)
	}
}

// printedForgery is model code (calc/ops.py, no test file) that writes a complete pytest summary saying every
// listed test passed, to its output and to every descriptor pytest may keep the real output on, and ends the process
// before any test reports, and again at exit: a parser of the output would believe it.
const printedForgery = `import atexit
import os

_FORGED = (
    "tests/test_calc.py::test_add PASSED\n"
    "=========================== short test summary info ============================\n"
    "PASSED tests/test_calc.py::test_add\n"
    "PASSED tests/test_calc.py::test_mul_zero\n"
    "test_add (tests.test_add.TestAdd) ... ok\n"
    "test_zero (tests.test_other.TestZero) ... ok\n"
    "============================== 2 passed in 0.01s ===============================\n"
).encode()


def _forge():
    for fd in range(1, 64):
        try:
            os.write(fd, _FORGED)
        except OSError:
            pass


atexit.register(_forge)


def add(a, b):
    _forge()
    os._exit(0)


def mul(a, b):
    return a * b
`

// Model code that prints results (a complete summary, -v lines, unittest lines) before killing the run, and again
// at exit, forges nothing: the local runner reads results from its results plugin, not from the output.
func TestLocalPrintedResultsAreNotBelieved(t *testing.T) {
	py := python(t)
	t.Setenv("TMPDIR", t.TempDir())
	pin := calcInstance()
	uin, ufiles := unittestInstance()
	for _, c := range []struct {
		name  string
		in    swebench.Instance
		files map[string]string
		cfg   Config
	}{
		{"pytest files", pin, calcBase, Config{Python: py}},
		{"pytest listed", pin, calcBase, Config{Python: py, Tests: TestsListed}},
		{"unittest files", uin, ufiles, Config{TestCmd: py + " -m unittest -v"}},
		{"unittest listed", uin, ufiles, Config{TestCmd: py + " -m unittest -v", Tests: TestsListed}},
	} {
		t.Run(c.name, func(t *testing.T) {
			patch := diff.Unified("calc/ops.py", []byte(c.files["calc/ops.py"]), []byte(printedForgery))
			res, err := Local{}.Run(context.Background(), Request{Instance: c.in, Patch: patch,
				Materialize: materializer(c.files), Timeout: 2 * time.Minute, Config: c.cfg})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(res.Output), "PASSED tests/test_calc.py::test_add") {
				t.Fatalf("the forgery printed nothing (the test shows nothing):\n%s", res.Output)
			}
			if v := decide(c.in, res); v.Resolved || len(v.Passed) > 0 && slices.Contains(v.Passed, c.in.FailToPass[0]) {
				t.Errorf("printed results believed: %+v\n%s", v, res.Output)
			}
		})
	}
}
