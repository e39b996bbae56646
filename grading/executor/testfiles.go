package executor

import (
	"embed"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// Languages of an instance, as test_cmd keys and test-file rules name them.
const (
	LangGo     = "go"
	LangPython = "python"
)

// Values of Config.ModelTests and Config.Tests (empty means the first of each pair).
const (
	// ModelTestsDrop resets the model patch's test files to base_commit before the tests run (the default).
	ModelTestsDrop = "drop"
	// ModelTestsKeep leaves them, for studies of model-written tests; the test patch's own files are still reset.
	ModelTestsKeep = "keep"
	// TestsFiles runs the test files of the test patch, as the SWE-bench harness does (Python; the default).
	TestsFiles = "files"
	// TestsListed runs exactly the FAIL_TO_PASS and PASS_TO_PASS ids (Python).
	TestsListed = "listed"
)

// LanguageOf is the language of a worktree: Go when it has a go.mod at its root, else Python.
func LanguageOf(dir string) string {
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
		return LangGo
	}
	return LangPython
}

// IsTestFile says whether a repository path is a test file of a language, one a model patch may not change by
// default (Config.ModelTests):
//   - Go: *_test.go, and anything under a testdata folder (go test reads fixtures from there);
//   - Python: test_*.py, *_test.py, and anything under a tests or test folder at any depth (pytest's and unittest's
//     usual homes, fixtures included); and every file that decides what pytest or Python loads before the tests
//     run (PythonRunnerFile).
//
// The files the instance's test patch touches are test files too; callers add them.
func IsTestFile(lang, p string) bool {
	p = path.Clean(p)
	dirs := strings.Split(path.Dir(p), "/")
	base := path.Base(p)
	switch lang {
	case LangGo:
		return strings.HasSuffix(base, "_test.go") || slices.Contains(dirs, "testdata")
	default:
		if PythonRunnerFile(p) {
			return true
		}
		if strings.HasSuffix(base, ".py") && (strings.HasPrefix(base, "test_") || strings.HasSuffix(base, "_test.py")) {
			return true
		}
		return slices.Contains(dirs, "tests") || slices.Contains(dirs, "test")
	}
}

// pythonConfigFiles are the files, at any depth, that pytest reads its configuration from (pytest.ini,
// .pytest.ini, pytest.toml, .pytest.toml, pyproject.toml, tox.ini and setup.cfg, any of which can say `addopts = -p
// plugin`), that it loads as plugins (conftest.py), and that Python imports at start from any folder on its path
// (sitecustomize.py, usercustomize.py, which can set PYTEST_ADDOPTS or patch anything).
var pythonConfigFiles = []string{"pytest.ini", ".pytest.ini", "pytest.toml", ".pytest.toml", "pyproject.toml",
	"tox.ini", "setup.cfg", "conftest.py", "sitecustomize.py", "usercustomize.py"}

// runnerModules are top-level modules the Python runner imports before any test runs: the test runners themselves
// and ctxlab's helpers (pythonHelpers). `python -m pytest` looks modules up in the working folder first, so a
// module or package of one of these names at the repository's root would run instead.
var runnerModules = []string{"pytest", "_pytest", "pluggy", "unittest", resultsPluginModule,
	unittestRunnerModule, listedPluginModule}

// PythonRunnerFile says whether a repository path is one through which a patch could decide what pytest or Python
// loads before the tests run, and so forge their results: a configuration or start-up file (pythonConfigFiles) at
// any depth, a .pth file, anything in an .egg-info or .dist-info folder (their entry_points.txt registers pytest11
// plugins, which pytest loads from every folder on the path), or a root-level module or package that stands in for
// one the runner imports (runnerModules).
func PythonRunnerFile(p string) bool {
	p = path.Clean(p)
	parts := strings.Split(p, "/")
	base := parts[len(parts)-1]
	if slices.Contains(pythonConfigFiles, base) || strings.HasSuffix(base, ".pth") {
		return true
	}
	for _, d := range parts[:len(parts)-1] {
		if strings.HasSuffix(d, ".egg-info") || strings.HasSuffix(d, ".dist-info") {
			return true
		}
	}
	top := parts[0]
	if len(parts) == 1 {
		top = strings.TrimSuffix(top, ".py")
	}
	return slices.Contains(runnerModules, top)
}

// TestCmdFor is the test command of an instance: the command for its repository ("owner/name"), else the one for
// its language, else the command for every instance (empty: the executor's default).
func (c Config) TestCmdFor(repo, lang string) string {
	if cmd, ok := c.TestCmds[repo]; ok && repo != "" {
		return cmd
	}
	if cmd, ok := c.TestCmds[lang]; ok {
		return cmd
	}
	return c.TestCmd
}

// modelTestsKept reports whether the config keeps the model's test files.
func (c Config) modelTestsKept() bool { return c.ModelTests == ModelTestsKeep }

// ctxlab's Python helpers (the python folder, embedded), written for each run into a folder of its own outside the
// worktree (pythonRunner):
//   - ctxlab_boot.py, through which every interpreter of the run starts (its docstring says how), and which loads
//     the others in a process that runs pytest or unittest;
//   - ctxlab_results.py, the pytest plugin (-p ctxlab_results) that writes every test's result to the results file
//     (testrun.Options.Results), the only place the local runner reads pytest's results from;
//   - ctxlab_unittest.py, `python -m unittest` with a result class that does the same;
//   - ctxlab_listed.py, the plugin of the listed mode (grading.tests = 'listed'), which deselects every collected
//     test that is not listed, and listed.txt, its list.
//
//go:embed python/*.py
var pythonHelpers embed.FS

// Module names of the helpers (which the runner imports before any folder of the worktree is on the path), and the
// name of the results file in the worktree's pyResultsDir.
const (
	resultsPluginModule  = "ctxlab_results"
	unittestRunnerModule = "ctxlab_unittest"
	listedPluginModule   = "ctxlab_listed"
	resultsFile          = "results"
)

// pytestFiles are the files the node ids name (the part before "::"), sorted, without repeats, keeping those that
// exist in dir; when none does, all of them, so pytest reports them not found and runs nothing.
func pytestFiles(dir string, ids []string) []string {
	var all, existing []string
	for _, id := range ids {
		f, _, _ := strings.Cut(id, "::")
		f = strings.TrimSpace(f)
		if f == "" || slices.Contains(all, f) {
			continue
		}
		all = append(all, f)
		if !filepath.IsLocal(f) {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(f))); err == nil {
			existing = append(existing, f)
		}
	}
	if len(existing) == 0 {
		existing = all
	}
	slices.Sort(existing)
	return existing
}

// UnittestID turns a unittest test name as datasets write it ("test_x (pkg.mod.Class)", "test_x
// (pkg.mod.Class.test_x)" or "pkg.mod.Class.test_x") into the dotted id unittest and Django's runtests.py accept.
func UnittestID(name string) string {
	name = strings.TrimSpace(name)
	method, rest, ok := strings.Cut(name, " (")
	if !ok || !strings.HasSuffix(rest, ")") {
		return name
	}
	class := strings.TrimSuffix(rest, ")")
	class = strings.TrimSuffix(class, "."+method)
	return class + "." + method
}

// listedIDs are the instance's FAIL_TO_PASS and PASS_TO_PASS names, without repeats, in order.
func listedIDs(f2p, p2p []string) []string {
	var out []string
	for _, id := range append(append([]string{}, f2p...), p2p...) {
		if id = strings.TrimSpace(id); id != "" && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}
