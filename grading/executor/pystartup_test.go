package executor

import (
	"context"
	"maps"
	"os/exec"
	"strings"
	"testing"
	"time"

	"ctxlab/dataset/swebench"
	"ctxlab/patch/diff"
	"ctxlab/testkit/filetree"
)

// Start-up files a patch can add to forge a Python grade (issue 39, defect 1): whatever Python imports when the
// interpreter starts, from any folder on its path, runs before pytest or unittest, so it can set PYTEST_ADDOPTS to
// load zzplugin (every report passed) or replace unittest's TestCase.run. Resetting such files by name misses their
// other forms: a sitecustomize package, a stand-in for a module the interpreter imports during its own start
// (encodings), or the same file at a depth the environment puts on the path.
const (
	// unittestAllPass is start-up code that makes every unittest test report a success without running.
	unittestAllPass = "import unittest\n\n\ndef _run(self, result=None):\n    result.startTest(self)\n" +
		"    result.addSuccess(self)\n    result.stopTest(self)\n\n\nunittest.TestCase.run = _run\n"
	// encodingsStandIn is a package named encodings: the interpreter imports it before site, to decode file names;
	// it sets PYTEST_ADDOPTS and runs the standard library's encodings in its place (builtins are not there yet).
	encodingsStandIn = "import _io\nimport os\n\nos.environ[\"PYTEST_ADDOPTS\"] = \"-p zzplugin\"\n" +
		"__path__ = [os.path.join(os.path.dirname(os.__file__), \"encodings\")]\n" +
		"with _io.FileIO(os.path.join(__path__[0], \"__init__.py\")) as _f:\n" +
		"    exec(compile(_f.readall(), __path__[0] + \"/__init__.py\", \"exec\"))\n"
)

// startupVector is one way in: the files a patch adds (beside zzplugin.py), the folder of the worktree that a plain
// interpreter would have on its path, and what shows that the files ran there.
type startupVector struct {
	name  string
	files map[string]string
	// pathDir is the worktree folder (relative) on a plain interpreter's path through which the files load.
	pathDir string
	// unittest: the vector targets unittest's runner, not pytest's; src: it lies in a src layout's src folder, which
	// the row's environment (install_config: pip install -e .) puts on the path.
	unittest, src bool
}

var startupVectors = []startupVector{
	{name: "sitecustomize package", files: map[string]string{"sitecustomize/__init__.py": addopts}, pathDir: "."},
	{name: "usercustomize package", files: map[string]string{"usercustomize/__init__.py": addopts}, pathDir: "."},
	{name: "sitecustomize.py", files: map[string]string{"sitecustomize.py": addopts}, pathDir: "."},
	{name: "usercustomize.py", files: map[string]string{"usercustomize.py": addopts}, pathDir: "."},
	{name: "encodings stand-in", files: map[string]string{"encodings/__init__.py": encodingsStandIn}, pathDir: "."},
	{name: "sitecustomize package patching unittest", files: map[string]string{"sitecustomize/__init__.py": unittestAllPass},
		pathDir: ".", unittest: true},
	{name: "sitecustomize package in src, on the environment's path", pathDir: "src", unittest: true, src: true,
		files: map[string]string{"src/sitecustomize/__init__.py": unittestAllPass}},
}

// startupRuns reports whether the vector's files run at the start of a plain interpreter whose path holds the
// vector's folder of a worktree made of base and the files: the vector is live, so a grade it does not forge shows
// the grader's defence, not a dud.
func startupRuns(t *testing.T, py string, base map[string]string, v startupVector) bool {
	t.Helper()
	dir := t.TempDir()
	files := maps.Clone(base)
	maps.Copy(files, v.files)
	filetree.Write(t, dir, files)
	probe := "import os; print(os.environ.get('PYTEST_ADDOPTS'))"
	if v.unittest {
		probe = "import unittest; print(unittest.TestCase.run.__module__)"
	}
	cmd := exec.Command(py, "-c", probe)
	cmd.Dir = t.TempDir()
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir(), "PYTHONPATH=" + dir + "/" + v.pathDir}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", v.name, err, out)
	}
	got := strings.TrimSpace(string(out))
	return got == "-p zzplugin" || got == "sitecustomize"
}

// Issue 39, defect 1: no start-up file, in any form, forges a grade, whether the grader resets it by name or the
// study keeps the model's files (model_tests: keep). Each vector is first shown live in a plain interpreter.
func TestLocalStartupFilesCannotForge(t *testing.T) {
	py := python(t)
	t.Setenv("TMPDIR", t.TempDir())
	pin := calcInstance()
	uin, ufiles := unittestInstance()
	for _, v := range startupVectors {
		t.Run(v.name, func(t *testing.T) {
			in, base, cfg := pin, calcBase, Config{Python: py}
			if v.unittest {
				in, base, cfg = uin, ufiles, Config{TestCmd: py + " -m unittest -v", Tests: TestsListed}
			}
			if v.src {
				in, base = srcLayout()
				in.InstallConfig = &swebench.InstallConfig{Install: "pip install -e .",
					TestCmd: swebench.TestCommands{"python -m unittest -v"}}
				cfg = Config{Python: py}
			}
			if !startupRuns(t, py, base, v) {
				t.Fatalf("the vector does not run at start in a plain interpreter (the test shows nothing)")
			}
			files := maps.Clone(v.files)
			files["zzplugin.py"] = zzPlugin
			for _, keep := range []bool{false, true} {
				c := cfg
				if keep {
					c.ModelTests = ModelTestsKeep
				}
				res, err := Local{}.Run(context.Background(), Request{Instance: in, Patch: patchAdding(files),
					Materialize: materializer(base), Timeout: 2 * time.Minute, Config: c})
				if err != nil {
					t.Fatal(err)
				}
				if !res.Ran {
					t.Fatalf("keep=%v: the patch did not apply: %s", keep, res.ApplyErr)
				}
				if verdict := decide(in, res); verdict.Resolved {
					t.Errorf("keep=%v: a start-up file forged the grade: %+v\n%s", keep, verdict, res.Output)
				}
			}
			// With the fix beside them the files change nothing: the tests ran and pass.
			res, err := Local{}.Run(context.Background(), Request{Instance: in, Patch: in.Patch + patchAdding(files),
				Materialize: materializer(base), Timeout: 2 * time.Minute, Config: cfg})
			if err != nil {
				t.Fatal(err)
			}
			if verdict := decide(in, res); !verdict.Resolved || res.Note != "" {
				t.Errorf("the fix with the files does not resolve: %+v %s\n%s", verdict, res.Note, res.Output)
			}
		})
	}
}

// srcLayout is a src-layout package with a unittest suite: importable only with src on the path, as the harness's
// `pip install -e .` makes it.
func srcLayout() (swebench.Instance, map[string]string) {
	files := map[string]string{
		"src/calc/__init__.py": "", "src/calc/ops.py": "def add(a, b):\n    return a - b\n",
		"tests/__init__.py": "", "README.md": "calc\n",
		"tests/test_other.py": "import unittest\n\nfrom calc.ops import add\n\n\nclass TestZero(unittest.TestCase):\n" +
			"    def test_zero(self):\n        self.assertEqual(add(0, 0), 0)\n",
	}
	in := swebench.Instance{InstanceID: "acme__srccalc-1", Repo: "acme/srccalc",
		Patch: diff.Unified("src/calc/ops.py", []byte(files["src/calc/ops.py"]), []byte("def add(a, b):\n    return a + b\n")),
		TestPatch: diff.Unified("tests/test_add.py", nil, []byte("import unittest\n\nfrom calc.ops import add\n\n\n"+
			"class TestAdd(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n")),
		FailToPass: []string{"test_add (tests.test_add.TestAdd)"}}
	return in, files
}

// Issue 38, item 4: a command that wraps its runner (env setting PYTHONPATH) keeps the results channel: the gold
// patch resolves, read from ctxlab's results file, and printed results still count for nothing.
func TestLocalWrappedCommandKeepsResults(t *testing.T) {
	python(t)
	t.Setenv("TMPDIR", t.TempDir())
	in, files := srcLayout()
	pytestIn := in
	pytestIn.FailToPass = []string{"tests/test_add.py::TestAdd::test_add"}
	forged := diff.Unified("src/calc/ops.py", []byte(files["src/calc/ops.py"]), []byte(printedForgery))
	for _, c := range []struct {
		name, cmd string
		in        swebench.Instance
	}{
		{"env unittest", "env PYTHONPATH=src python3 -m unittest -v", in},
		{"env pytest", "env PYTHONPATH=src python3 -m pytest -rA -p no:cacheprovider", pytestIn},
		{"env pytest script", "env PYTHONPATH=src pytest -rA -p no:cacheprovider", pytestIn},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, patch := range []string{c.in.Patch, forged} {
				res, err := Local{}.Run(context.Background(), Request{Instance: c.in, Patch: patch,
					Materialize: materializer(files), Timeout: 2 * time.Minute, Config: Config{TestCmd: c.cmd}})
				if err != nil {
					t.Fatal(err)
				}
				v := decide(c.in, res)
				if gold := patch == c.in.Patch; v.Resolved != gold || res.Note != "" {
					t.Errorf("gold=%v: resolved %v, note %q: %+v\n%s", gold, v.Resolved, res.Note, v, res.Output)
				}
			}
		})
	}
}
