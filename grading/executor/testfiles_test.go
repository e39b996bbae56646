package executor

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"ctxlab/dataset/swebench"
	"ctxlab/grading/testlog"
	"ctxlab/patch/diff"
)

// A small Go module with a real bug: Add subtracts. The test patch adds TestAdd (FAIL_TO_PASS); TestMul passes before
// and after (PASS_TO_PASS).
var (
	adderBase = map[string]string{
		"go.mod":      "module example.com/adder\n\ngo 1.21\n",
		"adder.go":    "package adder\n\nfunc Add(a, b int) int { return a - b }\n\nfunc Mul(a, b int) int { return a * b }\n",
		"mul_test.go": "package adder\n\nimport \"testing\"\n\nfunc TestMul(t *testing.T) {\n\tif Mul(2, 3) != 6 {\n\t\tt.Fatal(\"mul\")\n\t}\n}\n",
	}
	adderGold = diff.Unified("adder.go", []byte(adderBase["adder.go"]),
		[]byte(strings.Replace(adderBase["adder.go"], "a - b", "a + b", 1)))
)

func adderInstance() swebench.Instance {
	tp := diff.Unified("add_test.go", nil, []byte("package adder\n\nimport \"testing\"\n\n"+
		"func TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal(\"add\")\n\t}\n}\n"))
	return swebench.Instance{InstanceID: "acme__adder-1", Repo: "acme/adder",
		BaseCommit: "89abcdef0123456789abcdef0123456789abcdef", ProblemStatement: "Add subtracts", Patch: adderGold,
		TestPatch: tp, FailToPass: []string{"TestAdd"}, PassToPass: []string{"TestMul"}}
}

// forgedTestMain is the attack of issue 13: a test file whose TestMain prints passing results for every listed test
// and exits 0 without running any.
const forgedTestMain = `package adder

import (
	"fmt"
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	fmt.Println("forged by the model")
	for _, name := range []string{"TestAdd", "TestMul"} {
		fmt.Printf("=== RUN   %s\n--- PASS: %s (0.00s)\n", name, name)
	}
	fmt.Println("PASS")
	os.Exit(0)
}
`

func TestLocalDropsForgedGoTestMain(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	in := adderInstance()
	forged := diff.Unified("forge_test.go", nil, []byte(forgedTestMain))
	req := Request{Instance: in, Materialize: materializer(adderBase), Timeout: 5 * time.Minute, Patch: forged}
	ctx := context.Background()

	res, err := Local{}.Run(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if v := decide(in, res); v.Resolved || !res.Ran {
		t.Fatalf("a forged TestMain resolved the instance: %+v\n%s", v, res.Output)
	}
	if !slices.Equal(res.TestFilesDropped, []string{"forge_test.go"}) || len(res.ModelTestFiles) != 0 {
		t.Errorf("dropped %v, kept %v", res.TestFilesDropped, res.ModelTestFiles)
	}
	if strings.Contains(string(res.Output), "forged by the model") {
		t.Errorf("the forged TestMain ran:\n%s", res.Output)
	}

	// The gold patch with the forgery still resolves: only the test file is dropped.
	req.Patch = adderGold + forged
	res, err = Local{}.Run(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if v := decide(in, res); !v.Resolved || !slices.Equal(res.TestFilesDropped, []string{"forge_test.go"}) {
		t.Errorf("gold plus forgery: %+v dropped %v\n%s", v, res.TestFilesDropped, res.Output)
	}

	// keep runs the model's test file, and says which it is; judging its output is the Go runner's business.
	req.Patch, req.Config.ModelTests = forged, ModelTestsKeep
	res, err = Local{}.Run(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Ran || !slices.Equal(res.ModelTestFiles, []string{"forge_test.go"}) || len(res.TestFilesDropped) != 0 ||
		!strings.Contains(string(res.Output), "forged by the model") {
		t.Errorf("keep: ran %v kept %v dropped %v\n%s", res.Ran, res.ModelTestFiles, res.TestFilesDropped, res.Output)
	}
}

func TestLocalDropsForgingConftest(t *testing.T) {
	py := python(t)
	t.Setenv("TMPDIR", t.TempDir())
	in := calcInstance()
	// A conftest.py that reports every test as passed, whatever happened.
	forged := diff.Unified("conftest.py", nil, []byte(`import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    outcome.get_result().outcome = "passed"
`))
	req := Request{Instance: in, Materialize: materializer(calcBase), Timeout: 2 * time.Minute, Patch: forged,
		Config: Config{Python: py}}
	res, err := Local{}.Run(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if v := decide(in, res); v.Resolved || !slices.Equal(res.TestFilesDropped, []string{"conftest.py"}) {
		t.Fatalf("forging conftest.py: %+v dropped %v\n%s", v, res.TestFilesDropped, res.Output)
	}
	req.Config.ModelTests = ModelTestsKeep
	res, err = Local{}.Run(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.ModelTestFiles, []string{"conftest.py"}) || len(res.TestFilesDropped) != 0 {
		t.Errorf("keep: kept %v dropped %v", res.ModelTestFiles, res.TestFilesDropped)
	}
}

func TestIsTestFile(t *testing.T) {
	for _, c := range []struct {
		lang, path string
		want       bool
	}{
		{LangGo, "a_test.go", true}, {LangGo, "pkg/x/a_test.go", true}, {LangGo, "pkg/testdata/in.txt", true},
		{LangGo, "testdata/x.go", true}, {LangGo, "a.go", false}, {LangGo, "test/helpers.go", false},
		{LangGo, "conftest.py", false}, {LangGo, "latest.go", false},
		{LangPython, "test_a.py", true}, {LangPython, "pkg/a_test.py", true}, {LangPython, "conftest.py", true},
		{LangPython, "pkg/sub/conftest.py", true}, {LangPython, "pytest.ini", true},
		{LangPython, "tests/data/x.json", true}, {LangPython, "pkg/test/util.py", true},
		{LangPython, "pkg/testing.py", false}, {LangPython, "pkg/contest.py", false}, {LangPython, "a_test.go", false},
		{LangPython, "latest.py", false}, {LangPython, "testsuite/x.py", false},
		// What pytest and Python load before the tests (PythonRunnerFile).
		{LangPython, "tox.ini", true}, {LangPython, "setup.cfg", true}, {LangPython, "pkg/pyproject.toml", true},
		{LangPython, ".pytest.ini", true}, {LangPython, "pytest.toml", true}, {LangPython, "sitecustomize.py", true},
		{LangPython, "src/usercustomize.py", true}, {LangPython, "zz.pth", true},
		{LangPython, "zz.egg-info/entry_points.txt", true}, {LangPython, "lib/zz-1.0.dist-info/METADATA", true},
		{LangPython, "pytest.py", true}, {LangPython, "_pytest/main.py", true}, {LangPython, "pluggy/__init__.py", true},
		{LangPython, "unittest/__init__.py", true}, {LangPython, "ctxlab_results.py", true},
		{LangPython, "pkg/pytest.py", false}, {LangPython, "pkg/unittest/case.py", false}, {LangPython, "setup.py", false},
		{LangPython, "pytest_helpers.py", false}, {LangPython, "docs/conf.py", false}, {LangGo, "tox.ini", false},
	} {
		if got := IsTestFile(c.lang, c.path); got != c.want {
			t.Errorf("IsTestFile(%s, %s) = %v", c.lang, c.path, got)
		}
	}
}

func TestTestCmdFor(t *testing.T) {
	c := Config{TestCmd: "all", TestCmds: map[string]string{"python": "py", "acme/calc": "calc"}}
	for _, x := range []struct{ repo, lang, want string }{
		{"acme/calc", LangPython, "calc"}, {"acme/calc", LangGo, "calc"}, {"acme/other", LangPython, "py"},
		{"acme/other", LangGo, "all"}, {"", LangGo, "all"},
	} {
		if got := c.TestCmdFor(x.repo, x.lang); got != x.want {
			t.Errorf("%s %s: %q, want %q", x.repo, x.lang, got, x.want)
		}
	}
}

// One config grades a Go and a Python instance: the Python project needs its unittest command (pytest would name
// its tests differently), which must not reach the Go instance, which runs go test.
func TestLocalMixedLanguagesOneConfig(t *testing.T) {
	py := python(t)
	t.Setenv("TMPDIR", t.TempDir())
	cfg := Config{TestCmds: map[string]string{LangPython: py + " -m unittest -v"}}
	ut, utFiles := unittestInstance()
	ut.PassToPass = nil // in another file: the files mode does not run it
	for _, c := range []struct {
		in    swebench.Instance
		files map[string]string
	}{{adderInstance(), adderBase}, {ut, utFiles}} {
		res, err := Local{}.Run(context.Background(), Request{Instance: c.in, Patch: c.in.Patch, Config: cfg,
			Materialize: materializer(c.files), Timeout: 5 * time.Minute})
		if err != nil {
			t.Fatalf("%s: %v", c.in.InstanceID, err)
		}
		if v := decide(c.in, res); !v.Resolved {
			t.Errorf("%s gold: %+v (command %v)\n%s", c.in.InstanceID, v, res.Command, res.Output)
		}
	}
	// The listed mode, with a command for each language: the Go command is left as written.
	cfg.Tests, cfg.TestCmds[LangGo] = TestsListed, "go test -json -count=1 ./..."
	ut, _ = unittestInstance()
	for _, c := range []struct {
		in    swebench.Instance
		files map[string]string
	}{{adderInstance(), adderBase}, {ut, utFiles}} {
		res, err := Local{}.Run(context.Background(), Request{Instance: c.in, Patch: c.in.Patch, Config: cfg,
			Materialize: materializer(c.files), Timeout: 5 * time.Minute})
		if err != nil {
			t.Fatalf("%s: %v", c.in.InstanceID, err)
		}
		if v := decide(c.in, res); !v.Resolved || !slices.Contains(res.Command, strings.Fields(cfg.TestCmds[languageOfFiles(c.files)])[0]) {
			t.Errorf("%s gold, listed: %+v (command %v)\n%s", c.in.InstanceID, v, res.Command, res.Output)
		}
	}
}

// languageOfFiles is LanguageOf for the files of a test repository.
func languageOfFiles(files map[string]string) string {
	if _, ok := files["go.mod"]; ok {
		return LangGo
	}
	return LangPython
}

// A PASS_TO_PASS test in a file the test patch does not touch: the harness's files mode never runs it, the listed
// mode runs exactly the listed ids, parametrized ones included, and one id that does not exist does not stop the
// others.
func TestLocalPythonListedTests(t *testing.T) {
	py := python(t)
	t.Setenv("TMPDIR", t.TempDir())
	files := map[string]string{}
	for k, v := range calcBase {
		files[k] = v
	}
	files["tests/test_other.py"] = "import pytest\n\nfrom calc.ops import mul\n\n\nclass TestOther:\n" +
		"    @pytest.mark.parametrize(\"n\", [1, 2])\n    def test_mul_one(self, n):\n        assert mul(n, 1) == n\n\n" +
		"    def test_not_listed(self):\n        assert False, 'not listed, must not run'\n"
	in := calcInstance()
	in.PassToPass = append(in.PassToPass, "tests/test_other.py::TestOther::test_mul_one[1]",
		"tests/test_other.py::TestOther::test_mul_one[2]")
	req := Request{Instance: in, Patch: in.Patch, Materialize: materializer(files), Timeout: 2 * time.Minute,
		Config: Config{Python: py}}
	ctx := context.Background()

	res, err := Local{}.Run(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if v := decide(in, res); v.Resolved || len(v.Missing) != 2 || !strings.HasPrefix(v.Missing[0], "tests/test_other.py") {
		t.Errorf("files mode: %+v", v)
	}

	req.Config.Tests = TestsListed
	res, err = Local{}.Run(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if v := decide(in, res); !v.Resolved {
		t.Errorf("listed mode: %+v\n%s", v, res.Output)
	}
	if _, ran := res.Report.Tests["tests/test_other.py::TestOther::test_not_listed"]; ran {
		t.Errorf("a test that is not listed ran:\n%s", res.Output)
	}
	// The wrong fix is still caught in the listed mode.
	req.Patch = strings.Replace(in.Patch, "a + b", "a * b", 1)
	res, err = Local{}.Run(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if v := decide(in, res); v.Resolved || !slices.Equal(v.Failed, []string{"tests/test_calc.py::test_add"}) {
		t.Errorf("listed mode, wrong fix: %+v\n%s", v, res.Output)
	}
	// An id that names no test is missing; the others still run.
	req.Patch = in.Patch
	req.Instance.PassToPass = append(slices.Clone(in.PassToPass), "tests/test_other.py::TestOther::test_gone",
		"tests/test_nowhere.py::test_x")
	res, err = Local{}.Run(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if v := decide(req.Instance, res); len(v.Missing) != 2 || len(v.Passed) != 4 {
		t.Errorf("listed mode with unknown ids: %+v\n%s", v, res.Output)
	}
}

// unittestInstance is a Python project tested with unittest, whose dataset row names tests as unittest does.
func unittestInstance() (swebench.Instance, map[string]string) {
	files := map[string]string{
		"calc/__init__.py": "", "tests/__init__.py": "",
		"calc/ops.py": "def add(a, b):\n    return a - b\n",
		"tests/test_other.py": "import unittest\n\nfrom calc.ops import add\n\n\nclass TestZero(unittest.TestCase):\n" +
			"    def test_zero(self):\n        self.assertEqual(add(0, 0), 0)\n\n" +
			"    def test_not_listed(self):\n        self.fail('not listed')\n",
		"tests/test_add.py": "",
	}
	in := swebench.Instance{InstanceID: "acme__calc-2", Repo: "acme/calc",
		Patch: diff.Unified("calc/ops.py", []byte(files["calc/ops.py"]), []byte("def add(a, b):\n    return a + b\n")),
		TestPatch: diff.Unified("tests/test_add.py", nil, []byte("import unittest\n\nfrom calc.ops import add\n\n\n"+
			"class TestAdd(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n")),
		FailToPass: []string{"test_add (tests.test_add.TestAdd)"},
		PassToPass: []string{"tests.test_other.TestZero.test_zero"}}
	// The test patch creates tests/test_add.py; the base has none.
	delete(files, "tests/test_add.py")
	return in, files
}

func TestLocalUnittestListedTests(t *testing.T) {
	py := python(t)
	t.Setenv("TMPDIR", t.TempDir())
	in, files := unittestInstance()
	req := Request{Instance: in, Patch: in.Patch, Materialize: materializer(files), Timeout: 2 * time.Minute,
		Config: Config{TestCmd: py + " -m unittest -v", Tests: TestsListed}}
	res, err := Local{}.Run(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if v := decide(in, res); !v.Resolved {
		t.Errorf("unittest listed: %+v (command %v)\n%s", v, res.Command, res.Output)
	}
	if strings.Contains(string(res.Output), "test_not_listed") {
		t.Errorf("a test that is not listed ran:\n%s", res.Output)
	}
}

func TestUnittestID(t *testing.T) {
	for in, want := range map[string]string{
		"test_b (pkg.tests.test_x.TestA)":        "pkg.tests.test_x.TestA.test_b",
		"test_b (pkg.tests.test_x.TestA.test_b)": "pkg.tests.test_x.TestA.test_b",
		"pkg.tests.test_x.TestA.test_b":          "pkg.tests.test_x.TestA.test_b",
	} {
		if got := UnittestID(in); got != want {
			t.Errorf("UnittestID(%q) = %q, want %q", in, got, want)
		}
	}
}

// Listed tests through docker: pytest gets exactly the FAIL_TO_PASS and PASS_TO_PASS node ids, each quoted for
// the shell (a parametrized id holds brackets, spaces or quotes).
func TestDockerListedPassesNodeIDs(t *testing.T) {
	in := calcInstance()
	in.PassToPass = append(in.PassToPass, "tests/test_mul.py::test_mul[it's 2]")
	cmd, parser := testCommand(Request{Instance: in, Config: Config{Tests: TestsListed}}, LangPython)
	want := `pytest -rA 'tests/test_calc.py::test_add' 'tests/test_calc.py::test_mul_zero' 'tests/test_mul.py::test_mul[it'\''s 2]'`
	if cmd != want || parser != testlog.ParserPytest {
		t.Errorf("command %s (%s), want %s", cmd, parser, want)
	}
	out, err := exec.Command("bash", "-c", "printf '%s\\n' "+strings.TrimPrefix(cmd, "pytest -rA ")).Output()
	if lines := strings.Split(strings.TrimSpace(string(out)), "\n"); err != nil || len(lines) != 3 || lines[2] != in.PassToPass[1] {
		t.Errorf("bash reads the ids as %q (%v)", out, err)
	}
}

// Through docker, the model's test files never reach the container: a new conftest.py and an edit of the test
// patch's file stay on this side, and the result says so.
func TestDockerDropsModelTestFiles(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	in := calcInstance()
	f := newFakeDocker(t, realLog(t, in, in.Patch), false)
	patch := in.Patch + diff.Unified("conftest.py", nil, []byte("# forged\n")) +
		diff.Unified("tests/test_calc.py", []byte(calcBase["tests/test_calc.py"]),
			[]byte(strings.Replace(calcBase["tests/test_calc.py"], "== 0", "== 1", 1)))
	res, err := Docker{}.Run(context.Background(), Request{Instance: in, Patch: patch, Timeout: time.Minute,
		Config: Config{Docker: f.bin}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.TestFilesDropped, []string{"conftest.py", "tests/test_calc.py"}) || len(res.ModelTestFiles) != 0 {
		t.Errorf("dropped %v kept %v", res.TestFilesDropped, res.ModelTestFiles)
	}
	if _, err := os.Stat(filepath.Join(f.root, "testbed", "conftest.py")); err == nil {
		t.Error("conftest.py reached the container")
	}
	if b, _ := os.ReadFile(filepath.Join(f.root, "testbed", "tests", "test_calc.py")); string(b) != calcBase["tests/test_calc.py"] {
		t.Errorf("the model's edit of tests/test_calc.py reached the container: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(f.root, "testbed", "calc", "ops.py")); !strings.Contains(string(b), "a + b") {
		t.Errorf("the fix did not reach the container: %q", b)
	}

	// keep: the new conftest.py goes in; the test patch's file is still reset by the eval script, so it is dropped.
	g := newFakeDocker(t, realLog(t, in, in.Patch), false)
	res, err = Docker{}.Run(context.Background(), Request{Instance: in, Patch: patch, Timeout: time.Minute,
		Config: Config{Docker: g.bin, ModelTests: ModelTestsKeep}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.ModelTestFiles, []string{"conftest.py"}) || !slices.Equal(res.TestFilesDropped, []string{"tests/test_calc.py"}) {
		t.Errorf("keep: dropped %v kept %v", res.TestFilesDropped, res.ModelTestFiles)
	}
	if _, err := os.Stat(filepath.Join(g.root, "testbed", "conftest.py")); err != nil {
		t.Errorf("keep: conftest.py did not reach the container: %v", err)
	}
}
