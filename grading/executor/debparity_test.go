package executor

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io/fs"
	"maps"
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

// debianSuite is a pure-Python library whose Debian package ships its upstream tests: its module folder becomes a
// repository (under src/ for a src layout), its tests are graded with their environment stated in install_config.
type debianSuite struct {
	pkg, version, module string
	// src lays the module out under src/ (a src layout: importable only as pip install -e . makes it).
	src bool
	// tests are the test files (relative to the module's folder); unittest says unittest's own lists are a
	// reference too (a suite of unittest classes).
	tests    []string
	unittest bool
	// drop are module files left out (compiled speedups, so the pure-Python code is what runs).
	drop []string
	// bug breaks one line of a module file: file, line, broken line.
	bug [3]string
}

var debianSuites = []debianSuite{
	{pkg: "python3-simplejson", version: "3.18.3-1", module: "simplejson", src: true, unittest: true,
		tests: []string{"tests/test_decode.py", "tests/test_dump.py", "tests/test_encode_basestring_ascii.py",
			"tests/test_errors.py", "tests/test_fail.py", "tests/test_float.py", "tests/test_indent.py",
			"tests/test_scanstring.py", "tests/test_speedups.py", "tests/test_unicode.py", "tests/test_tool.py"},
		drop: []string{"_speedups.cpython-311-x86_64-linux-gnu.so"},
		bug:  [3]string{"encoder.py", "    '\\t': '\\\\t',\n", "    '\\t': '\\\\u0009',\n"}},
	{pkg: "python3-networkx", version: "2.8.8-1", module: "networkx",
		tests: []string{"readwrite/tests/test_edgelist.py", "readwrite/tests/test_gml.py", "readwrite/tests/test_adjlist.py",
			"classes/tests/test_graph.py", "classes/tests/test_reportviews.py"},
		bug: [3]string{"readwrite/edgelist.py", "                line = line[:p]\n", "                line = line[p:]\n"}},
}

// debianCache is where the packages are kept between runs: CTXLAB_CACHE, else /var/cache/ctxlab, as the other
// test assets.
func debianCache(t *testing.T) string {
	dir := os.Getenv("CTXLAB_CACHE")
	if dir == "" {
		dir = "/var/cache/ctxlab"
	}
	dir = filepath.Join(dir, "debian-python")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("the Debian parity corpus's cache: %v", err)
	}
	return dir
}

// debianPackage extracts the suite's Debian package (downloaded once with apt-get download into the cache) and
// returns its module folder.
func debianPackage(t *testing.T, s debianSuite) string {
	t.Helper()
	cache := debianCache(t)
	glob := filepath.Join(cache, s.pkg+"_"+strings.ReplaceAll(s.version, ":", "%3a")+"_*.deb")
	debs, _ := filepath.Glob(glob)
	if len(debs) == 0 {
		cmd := exec.Command("apt-get", "download", s.pkg+"="+s.version)
		cmd.Dir = cache
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("the Debian parity corpus needs %s %s (apt-get download, from Debian's mirror): %v\n%s",
				s.pkg, s.version, err, out)
		}
		debs, _ = filepath.Glob(glob)
	}
	if len(debs) != 1 {
		t.Fatalf("%s: want one package file, have %v", glob, debs)
	}
	dir := t.TempDir()
	if out, err := exec.Command("dpkg-deb", "-x", debs[0], dir).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb -x %s: %v\n%s", debs[0], err, out)
	}
	return filepath.Join(dir, "usr", "lib", "python3", "dist-packages", s.module)
}

// debianCorpus is a suite made into a repository at a base commit, with its test patch (touching every chosen test
// file), its scenarios (no fix, the injected bug) and its runners, for either executor to grade.
type debianCorpus struct {
	s          debianSuite
	files      map[string]string
	repo, base string
	// testFiles are the test files' paths in the repository, modules their dotted names.
	testFiles, modules []string
	testPatch          string
	scenarios          []debianScenario
	runners            []debianRunner
	// pythonPath makes the module importable for the references, without an install.
	pythonPath string
}

type debianScenario struct{ name, patch string }

// debianRunner is a test command of install_config and the parser whose reference judges it.
type debianRunner struct{ parser, cmd string }

// newDebianCorpus lays the suite's Debian package out as a repository: its module (under src/ for a src layout),
// and a setup.py declaring it as upstream's does (Debian's binary package ships none), so that the stated install,
// pip install -e ., can run where the grade runs it.
func newDebianCorpus(t *testing.T, s debianSuite) *debianCorpus {
	src := debianPackage(t, s)
	prefix := s.module + "/"
	upstream, _, _ := strings.Cut(s.version, "-")
	setup := fmt.Sprintf("setup(name=%q, version=%q, packages=find_packages())\n", s.module, upstream)
	if s.src {
		prefix = "src/" + prefix
		setup = fmt.Sprintf("setup(name=%q, version=%q, package_dir={\"\": \"src\"}, packages=find_packages(\"src\"))\n",
			s.module, upstream)
	}
	files := map[string]string{"README.md": s.pkg + " " + s.version + " (Debian's package)\n",
		"setup.py": "from setuptools import find_packages, setup\n\n" + setup}
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if slices.Contains(s.drop, rel) || strings.Contains(rel, "__pycache__") {
			return nil
		}
		b, err := os.ReadFile(p)
		files[prefix+filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	c := &debianCorpus{s: s, files: files, pythonPath: "PYTHONPATH=."}
	c.repo, c.base = gitRepo(t, files)
	var testPatch strings.Builder
	for _, f := range s.tests {
		f = prefix + f
		c.testFiles = append(c.testFiles, f)
		c.modules = append(c.modules, strings.ReplaceAll(strings.TrimSuffix(f, ".py"), "/", "."))
		testPatch.WriteString(diff.Unified(f, []byte(files[f]), []byte(files[f]+"\n# the parity corpus's test patch\n")))
	}
	c.testPatch = testPatch.String()
	bugFile := prefix + s.bug[0]
	if !strings.Contains(files[bugFile], s.bug[1]) {
		t.Fatalf("%s: the injected bug's line is not there", bugFile)
	}
	c.scenarios = []debianScenario{
		{"base", diff.Unified("PARITY.md", nil, []byte("upstream tests of "+s.pkg+"\n"))},
		{"injected bug", diff.Unified(bugFile, []byte(files[bugFile]),
			[]byte(strings.Replace(files[bugFile], s.bug[1], s.bug[2], 1)))},
	}
	if s.src {
		c.pythonPath = "PYTHONPATH=src:."
	}
	c.runners = []debianRunner{{testlog.ParserPytest, "python -m pytest -rA -p no:cacheprovider"}}
	if s.unittest {
		c.runners = append(c.runners, debianRunner{testlog.ParserUnittest, "python -m unittest -v"})
	}
	return c
}

// tree writes the repository at base with a scenario's patch and the test patch applied into dir.
func (c *debianCorpus) tree(t *testing.T, dir string, sc debianScenario) {
	t.Helper()
	if err := c.materialize(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{sc.patch, c.testPatch} {
		if _, err := diff.ApplyDir(dir, p); err != nil {
			t.Fatal(err)
		}
	}
}

func (c *debianCorpus) materialize(_ context.Context, dir string) error {
	return exec.Command("sh", "-c", "git -C \"$1\" archive \"$2\" | tar -x -C \"$3\"", "sh", c.repo, c.base, dir).Run()
}

// references runs the references on a tree through run (python3 with the tree as working folder and the
// corpus's PYTHONPATH), junit's report written to xmlPath: each test's outcome by id, by parser.
func (c *debianCorpus) references(t *testing.T, run func(args ...string) []byte, xmlPath string) map[string]map[string]string {
	t.Helper()
	refs := map[string]map[string]string{testlog.ParserPytest: junitReference(t, run, xmlPath, c.testFiles, c.modules)}
	if c.s.unittest {
		refs[testlog.ParserUnittest] = unittestLists(t, run(append([]string{"-c", unittestReference}, c.modules...)...))
	}
	for parser, ref := range refs {
		if len(ref) < 50 {
			t.Fatalf("%s reference: only %d tests", parser, len(ref))
		}
	}
	return refs
}

// instance is the corpus's row for a runner: every test of the reference is FAIL_TO_PASS, and the environment is
// stated in install_config.
func (c *debianCorpus) instance(runner debianRunner, ids []string) swebench.Instance {
	return swebench.Instance{InstanceID: "debian__" + c.s.module + "-1", Repo: "debian/" + c.s.module,
		BaseCommit: c.base, TestPatch: c.testPatch, FailToPass: ids,
		InstallConfig: &swebench.InstallConfig{Install: "pip install -e .", TestCmd: swebench.TestCommands{runner.cmd}}}
}

// compareBuckets reports every test whose bucket in v is not what the reference's outcome means, and returns the
// summary line of the run.
func compareBuckets(t *testing.T, run string, ref map[string]string, v testlog.Verdict) string {
	t.Helper()
	counts := map[string]int{}
	ids := slices.Sorted(maps.Keys(ref))
	for _, id := range ids {
		want, got := parityBucket(ref[id]), bucketOfVerdict(v, id)
		counts[got]++
		if want == got {
			counts["agree"]++
		} else {
			t.Errorf("%s: %q is %s, reference %s (%s)", run, id, got, ref[id], want)
		}
	}
	return fmt.Sprintf("%s: %d tests, %d agree (%d passed, %d failed, %d skipped, %d missing)", run, len(ids),
		counts["agree"], counts["passed"], counts["failed"], counts["skipped"], counts["missing"])
}

// TestPythonParityDebianSuites grades upstream suites of pure-Python libraries as Debian ships them (a src layout
// with a suite of unittest classes, and pytest tests with parametrized ids holding spaces and escaped characters)
// with the local executor, their environment stated in install_config, in the files and the listed mode, and
// compares each test's bucket with pytest's --junitxml and, for unittest classes, unittest's own result lists, at
// base and with a bug injected.
func TestPythonParityDebianSuites(t *testing.T) {
	t.Parallel()
	if err := exec.Command(debianPython, "-c", "import pytest").Run(); err != nil {
		t.Fatalf("%s has no pytest (install python3-pytest; scripts/test does): %v", debianPython, err)
	}
	for _, s := range debianSuites {
		t.Run(s.pkg, func(t *testing.T) { debianSuiteParity(t, newDebianCorpus(t, s)) })
	}
}

func debianSuiteParity(t *testing.T, c *debianCorpus) {
	var summary []string
	for _, sc := range c.scenarios {
		dir := t.TempDir()
		c.tree(t, dir, sc)
		refs := c.references(t, func(args ...string) []byte {
			cmd := exec.Command(debianPython, args...)
			cmd.Dir = dir
			cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir(), "PYTHONDONTWRITEBYTECODE=1", c.pythonPath}
			out, _ := cmd.Output() // failing tests exit non-zero
			return out
		}, filepath.Join(t.TempDir(), "junit.xml"))
		for _, runner := range c.runners {
			ref := refs[runner.parser]
			for _, mode := range []string{TestsFiles, TestsListed} {
				in := c.instance(runner, slices.Sorted(maps.Keys(ref)))
				res, err := Local{}.Run(context.Background(), Request{Instance: in, Patch: sc.patch,
					Materialize: c.materialize, Timeout: 10 * time.Minute,
					Config: Config{Python: debianPython, Tests: mode}})
				if err != nil {
					t.Fatal(err)
				}
				run := fmt.Sprintf("%s, %s runner, %s mode", sc.name, runner.parser, mode)
				summary = append(summary, compareBuckets(t, run, ref, testlog.DecideInstance(in, res.Report)))
				if strings.Contains(res.Note, "never started") || strings.Contains(res.Note, "from the output") {
					t.Errorf("%s: %s", run, res.Note)
				}
			}
		}
	}
	t.Logf("%s %s (%d test files), local executor:\n%s", c.s.pkg, c.s.version, len(c.testFiles), strings.Join(summary, "\n"))
}

// junitReference runs pytest on the test files with --junitxml=xmlPath (through run, in the worktree) and returns
// each test's outcome by node id, read back from the report's classname (the file's dotted path, then its classes)
// and name; modules are the files' dotted paths.
func junitReference(t *testing.T, run func(args ...string) []byte, xmlPath string, testFiles, modules []string) map[string]string {
	t.Helper()
	out := run(append([]string{"-m", "pytest", "-p", "no:cacheprovider", "--junitxml=" + xmlPath}, testFiles...)...)
	b, err := os.ReadFile(xmlPath)
	if err != nil {
		t.Fatalf("pytest --junitxml: %v\n%s", err, out)
	}
	var suites junitSuites
	if err := xml.Unmarshal(b, &suites); err != nil {
		t.Fatal(err)
	}
	ref := map[string]string{}
	for _, c := range suites.Cases {
		i := slices.IndexFunc(modules, func(m string) bool { return c.Class == m || strings.HasPrefix(c.Class, m+".") })
		if i < 0 {
			t.Fatalf("junit case %s %s: no module of the corpus", c.Class, c.Name)
		}
		parts := []string{testFiles[i]}
		if rest := strings.TrimPrefix(c.Class, modules[i]); rest != "" {
			parts = append(parts, strings.Split(strings.TrimPrefix(rest, "."), ".")...)
		}
		id := strings.Join(append(parts, c.Name), "::")
		outcome := "pass"
		switch {
		case c.Error != nil:
			outcome = "error"
		case c.Failure != nil:
			outcome = "fail"
		case c.Skipped != nil && c.Skipped.Type == "pytest.xfail":
			outcome = "xfail"
		case c.Skipped != nil:
			outcome = "skip"
		}
		if prev, seen := ref[id]; !seen || parityBucket(outcome) == "failed" || prev == "pass" {
			ref[id] = outcome
		}
	}
	return ref
}

// unittestLists reads unittestReference's output: each test's outcome by id.
func unittestLists(t *testing.T, out []byte) map[string]string {
	t.Helper()
	ref := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		line, ok := strings.CutPrefix(line, "ctxlab-reference ")
		if !ok {
			continue // a test's own output
		}
		var r struct{ ID, Outcome string }
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("unittest reference: %v: %q", err, line)
		}
		ref[r.ID] = r.Outcome
	}
	return ref
}
