package executor

import (
	"encoding/json"
	"fmt"
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
//   - Python: test_*.py, *_test.py, conftest.py and pytest.ini (pytest loads the last two as plugins and
//     configuration), and anything under a tests or test folder at any depth (pytest's and unittest's usual homes,
//     fixtures included).
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
		if base == "conftest.py" || base == "pytest.ini" {
			return true
		}
		if strings.HasSuffix(base, ".py") && (strings.HasPrefix(base, "test_") || strings.HasSuffix(base, "_test.py")) {
			return true
		}
		return slices.Contains(dirs, "tests") || slices.Contains(dirs, "test")
	}
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

// listedPlugin is the pytest plugin of the listed mode: it keeps, of the collected tests, those whose node id (or
// the id cut at its first space, as SWE-bench lists parametrized tests) is listed, and deselects the others. Passing
// the ids on pytest's command line instead would run nothing at all as soon as one id is not found.
const listedPlugin = `"""ctxlab: run only the listed tests (grading.tests = 'listed')."""
import json
import os

with open(os.environ["CTXLAB_LISTED_TESTS"], encoding="utf-8") as f:
    _LISTED = set(json.load(f))


def pytest_collection_modifyitems(session, config, items):
    keep, drop = [], []
    for item in items:
        nodeid = item.nodeid
        (keep if nodeid in _LISTED or nodeid.split(" ")[0] in _LISTED else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
`

// listedPluginModule is the module name of listedPlugin, and listedDir the worktree folder it is written to (inside
// the worktree, so whatever user runs the tests can read it).
const (
	listedPluginModule = "ctxlab_listed"
	listedDir          = ".ctxlab-listed"
)

// writeListedPlugin writes the plugin and the list of ids into dir's listedDir and returns the environment that
// loads them (PYTHONPATH entry and the list's path).
func writeListedPlugin(dir string, ids []string) (pythonPath, listFile string, err error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return "", "", err
	}
	defer root.Close()
	// Whatever the model patch put there goes: a package of the plugin's name would shadow it.
	if err := root.RemoveAll(listedDir); err != nil {
		return "", "", fmt.Errorf("listed tests: %w", err)
	}
	if err := root.MkdirAll(listedDir, 0o755); err != nil {
		return "", "", fmt.Errorf("listed tests: %w", err)
	}
	b, err := json.Marshal(ids)
	if err != nil {
		return "", "", err
	}
	if err := root.WriteFile(path.Join(listedDir, listedPluginModule+".py"), []byte(listedPlugin), 0o644); err != nil {
		return "", "", fmt.Errorf("listed tests: %w", err)
	}
	if err := root.WriteFile(path.Join(listedDir, "listed.json"), b, 0o644); err != nil {
		return "", "", fmt.Errorf("listed tests: %w", err)
	}
	return filepath.Join(dir, listedDir), filepath.Join(dir, listedDir, "listed.json"), nil
}

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
