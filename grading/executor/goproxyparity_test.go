package executor

import (
	"encoding/json"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"ctxlab/grading/testlog"
	"ctxlab/testkit/filetree"
)

// proxyParity are the repository shapes of the proxy corpus (TestGoParityProxyModules), each made of public modules
// fetched through the Go module proxy at test time (their zips hold their tests and testdata):
//   - yaml.v2: gopkg.in/yaml.v2 at v2.3.0 with v2.4.0's test patch and fix: an older module without go.sum (its
//     go.mod, of no go version, requires gopkg.in/check.v1), a gocheck suite (every check under one Test function),
//     and a test patch that does not compile at base (it calls yaml.FutureLineWrap, which v2.4.0 adds);
//   - testify: github.com/stretchr/testify's suite and assert packages: testify suites (TestSuite/TestMethod names),
//     inner runners (testing.RunTests inside a test: "signature validation/TestValidSignature", and a suite named
//     t.Name()+"InBeforeTest" that no function declares), and subtests named with brackets, colons, quotes, spaces
//     and heap addresses;
//   - zap: go.uber.org/zap with go.uber.org/zap/exp in its exp folder, a nested module that replaces its parent
//     with ../, tested upstream as cd exp && go test ./...; and a bug patch that panics part-way through zapslog's
//     tests, so that the tests after it have no result;
//   - text: golang.org/x/text's cases and secure/precis packages: subtests named with unicode, colons, quotes, pipes
//     and backslash escapes;
//   - toml: github.com/BurntSushi/toml (a go.mod without requirements, so without go.sum; subtests named with
//     brackets, colons and #), and a bug patch that panics in its encoder part-way through the package's tests.
var proxyParity = []string{"yaml.v2", "testify", "zap", "text", "toml"}

// proxySample is what CI grades of proxyParity (paritySample): every shape but x/text's precis package and
// testify's assert package, which only add more names of the kinds the sample has.
var proxySample = []string{"yaml.v2", "testify", "zap", "text", "toml"}

// The test suites of public modules fetched through the Go module proxy, each in a repository of the shape it
// shows (proxyParity), graded by ctxlab, agree test by test with go test -json -count=1 on the same tree (with the
// worker's GOPROXY, as go test resolves an older module's requirements): at base, and with the patches each
// member names.
func TestGoParityProxyModules(t *testing.T) {
	t.Parallel()
	full := parityFull()
	var total parityCount
	for _, m := range paritySample(t, proxyParity, proxySample) {
		t.Run(m, func(t *testing.T) {
			var n parityCount
			switch m {
			case "yaml.v2":
				n = parityYAML(t)
			case "testify":
				pkgs := []string{"suite"}
				if full {
					pkgs = append(pkgs, "assert")
				}
				n = parityTestify(t, pkgs)
			case "zap":
				n = parityZap(t)
			case "text":
				pkgs := []string{"cases"}
				if full {
					pkgs = append(pkgs, "secure/precis")
				}
				n = parityModule(t, "golang.org/x/text", "v0.42.0", pkgs, nil)
			case "toml":
				n = parityModule(t, "github.com/BurntSushi/toml", "v1.6.0", []string{"."}, &moduleBug{file: "encode.go",
					old: "func (enc *Encoder) Encode(v any) error {\n",
					new: "func (enc *Encoder) Encode(v any) error {\n\tpanic(\"injected\")\n"})
			}
			t.Logf("%s: %s", m, n)
			total = total.add(n)
		})
	}
	t.Logf("proxy corpus: %s", total)
}

// moduleBug is a change to one file of a corpus member: a model patch that breaks it.
type moduleBug struct{ file, old, new string }

// proxyModule fetches module mod at version through the worker's Go module proxy into its module cache, as go mod
// download does, and returns its folder there.
func proxyModule(t *testing.T, mod, version string) string {
	t.Helper()
	cmd := exec.Command("go", "mod", "download", "-json", mod+"@"+version)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local")
	out, err := cmd.Output()
	var info struct{ Dir, Error string }
	if json.Unmarshal(out, &info) != nil || info.Dir == "" {
		t.Fatalf("go mod download %s@%s (the Go module proxy must be reachable): %v %s %s", mod, version, err,
			info.Error, out)
	}
	return info.Dir
}

// copyTree copies the regular files under src (a module's folder) to dst, writable.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !d.Type().IsRegular() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		filetree.Write(t, dst, map[string]string{filepath.ToSlash(rel): string(b)})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// proxyEnv is the go command's environment for the reference runs of the proxy corpus: the worker's GOPROXY, so
// that go test resolves what a go.mod without go.sum needs, as ctxlab's download does before its offline build.
func proxyEnv() []string { return append(os.Environ(), "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local") }

// parityCompare grades repo at base with patch (and testPatch; empty: one adding .parity/tests), FAIL_TO_PASS the
// listed names, compares it with go test -json run in refDir on pkgs, and returns the counts.
func parityCompare(t *testing.T, what, repo, base, id string, listed map[string][]string, patch, testPatch, refDir string,
	pkgs ...string) parityCount {
	t.Helper()
	return parityCompareIn(t, parityTimeout, what, repo, base, id, listed, patch, testPatch, refDir, pkgs...)
}

// parityCompareIn is parityCompare with the grade's time (a test binary that hangs stops itself at a part of it).
func parityCompareIn(t *testing.T, timeout time.Duration, what, repo, base, id string, listed map[string][]string,
	patch, testPatch, refDir string, pkgs ...string) parityCount {
	t.Helper()
	ref := goTestJSONEnv(t, refDir, proxyEnv(), pkgs...)
	res := gradeParityWith(t, repo, base, id, listed, patch, testPatch, "", timeout)
	n := compareParity(t, what, ref, res, listed)
	t.Logf("%s: %s", what, n)
	return n
}

// parityModule grades the packages pkgs of module mod@version, copied whole into a repository, at base and, when
// bug is set, with a patch making that change.
func parityModule(t *testing.T, mod, version string, pkgs []string, bug *moduleBug) parityCount {
	t.Helper()
	repo := t.TempDir()
	copyTree(t, proxyModule(t, mod, version), repo)
	repo, base := gitRepoOf(t, repo)
	var targets []string
	for _, p := range pkgs {
		targets = append(targets, "./"+p)
	}
	listed := goTestListEnv(t, repo, proxyEnv(), targets...)
	id := strings.ReplaceAll(path.Base(mod), ".", "_")
	n := parityCompare(t, mod+"@"+version, repo, base, id, listed, notePatch(t, repo), "", repo, targets...)
	if bug == nil {
		return n
	}
	patch := gitPatch(t, repo, func(dir string) { applyBug(t, dir, *bug) })
	bugged := t.TempDir()
	cloneAt(t, repo, base, bugged)
	applyGit(t, bugged, patch)
	nb := parityCompare(t, mod+" with the bug", repo, base, id+"-bug", listed, patch, "", bugged, targets...)
	if nb.failed == 0 || nb.tests == nb.failed {
		t.Errorf("%s: the bug patch should fail some tests and leave others: %s", mod, nb)
	}
	return n.add(nb)
}

func applyBug(t *testing.T, dir string, b moduleBug) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(b.file))
	src, err := os.ReadFile(p)
	if err != nil || !strings.Contains(string(src), b.old) {
		t.Fatalf("%s no longer holds %q: %v", b.file, b.old, err)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(src), b.old, b.new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// parityYAML grades gopkg.in/yaml.v2 at v2.3.0 with v2.4.0's test files as the test patch: at base the test patch
// does not compile (a build failure, every test missing, as under go test), and v2.4.0's other files, the fix,
// resolve it.
func parityYAML(t *testing.T) parityCount {
	t.Helper()
	old, fixed := proxyModule(t, "gopkg.in/yaml.v2", "v2.3.0"), proxyModule(t, "gopkg.in/yaml.v2", "v2.4.0")
	repo := t.TempDir()
	copyTree(t, old, repo)
	if _, err := os.Stat(filepath.Join(repo, "go.sum")); err == nil {
		t.Fatal("yaml.v2 v2.3.0 comes with a go.sum: it no longer shows a module without one")
	}
	repo, base := gitRepoOf(t, repo)
	copyFiles := func(tests bool) func(dir string) {
		return func(dir string) {
			entries, err := os.ReadDir(fixed)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if e.Type().IsRegular() && strings.HasSuffix(e.Name(), "_test.go") == tests {
					b, err := os.ReadFile(filepath.Join(fixed, e.Name()))
					if err != nil {
						t.Fatal(err)
					}
					filetree.Write(t, dir, map[string]string{e.Name(): string(b)})
				}
			}
		}
	}
	testPatch := gitPatch(t, repo, copyFiles(true))
	gold := gitPatch(t, repo, copyFiles(false))
	withTests, withFix := t.TempDir(), t.TempDir()
	cloneAt(t, repo, base, withTests)
	applyGit(t, withTests, testPatch)
	cloneAt(t, repo, base, withFix)
	applyGit(t, withFix, testPatch)
	applyGit(t, withFix, gold)
	listed := goTestListEnv(t, withFix, proxyEnv(), ".")
	if len(listed["gopkg.in/yaml.v2"]) == 0 {
		t.Fatalf("go test -list found no test in yaml.v2 v2.4.0: %v", listed)
	}
	n := parityCompare(t, "yaml.v2 v2.3.0 with v2.4.0's tests", repo, base, "yaml-base", listed, notePatch(t, repo),
		testPatch, withTests, ".")
	n = n.add(parityCompare(t, "yaml.v2 with v2.4.0's fix", repo, base, "yaml-fix", listed, gold, testPatch, withFix, "."))
	return n
}

// parityTestify grades testify's packages pkgs, and names only inner runners report, listed bare: they run
// through the declared test whose body names them.
func parityTestify(t *testing.T, pkgs []string) parityCount {
	t.Helper()
	repo := t.TempDir()
	copyTree(t, proxyModule(t, "github.com/stretchr/testify", "v1.12.1"), repo)
	repo, base := gitRepoOf(t, repo)
	var targets []string
	for _, p := range pkgs {
		targets = append(targets, "./"+p)
	}
	listed := goTestListEnv(t, repo, proxyEnv(), targets...)
	n := parityCompare(t, "testify", repo, base, "testify", listed, notePatch(t, repo), "", repo, targets...)

	// Inner runners' names, listed as a dataset would list them, with their outcomes under go test.
	ref := goTestJSONEnv(t, repo, proxyEnv(), "./suite")["github.com/stretchr/testify/suite"]
	inner := []string{"signature validation/TestValidSignature", "signature validation/TestInvalidSignatureArg",
		"TestSuiteRecoverPanicInBeforeTest/Test"}
	in := parityInstance("testify-inner", base, "")
	in.FailToPass = inner
	res := gradeParityRun(t, repo, base, in, notePatch(t, repo), "", parityTimeout)
	for _, name := range inner {
		if ref[name] == "" {
			t.Fatalf("go test no longer reports %s: %v", name, slices.Sorted(maps.Keys(ref)))
		}
		if got := orMissing(statusOf(res.Report, name)); got != ref[name] {
			t.Errorf("testify inner runner %s: ctxlab %s, go test %s", name, got, ref[name])
		}
	}
	return n
}

// statusOf is a name's status in a report ("" when it has none; the worst of several).
func statusOf(rep testlog.Report, name string) string {
	s := ""
	for _, r := range rep.Tests[name] {
		if s == "" || r.Status == testlog.StatusFail {
			s = string(r.Status)
		}
	}
	return s
}

// parityZap grades go.uber.org/zap/exp, a nested module of a zap repository (its go.mod replaces go.uber.org/zap
// with ../), as cd exp && go test ./... runs it, at base and with a patch that makes zapslog's WithGroup panic; and a
// bare name both modules declare runs only in the module the test patch touches.
func parityZap(t *testing.T) parityCount {
	t.Helper()
	repo := t.TempDir()
	copyTree(t, proxyModule(t, "go.uber.org/zap", "v1.28.0"), repo)
	exp := filepath.Join(repo, "exp")
	copyTree(t, proxyModule(t, "go.uber.org/zap/exp", "v0.3.0"), exp)
	gomod, err := os.ReadFile(filepath.Join(exp, "go.mod"))
	if err != nil || !strings.Contains(string(gomod), "replace go.uber.org/zap => ../") {
		t.Fatalf("zap/exp's go.mod no longer replaces its parent: %v\n%s", err, gomod)
	}
	repo, base := gitRepoOf(t, repo)
	exp = filepath.Join(repo, "exp")
	listed := goTestListEnv(t, exp, proxyEnv(), "./...")
	if len(listed) != 2 {
		t.Fatalf("go test -list in the nested module found tests in %d packages, want 2: %v", len(listed), listed)
	}
	testPatch := "diff --git a/exp/.parity-tests b/exp/.parity-tests\nnew file mode 100644\n--- /dev/null\n" +
		"+++ b/exp/.parity-tests\n@@ -0,0 +1 @@\n+graded\n"
	n := parityCompare(t, "zap/exp", repo, base, "zap-exp", listed, notePatch(t, repo), testPatch, exp, "./...")

	bug := moduleBug{file: "exp/zapslog/handler.go", old: "func (h *Handler) WithGroup(group string) slog.Handler {\n",
		new: "func (h *Handler) WithGroup(group string) slog.Handler {\n\tpanic(\"injected\")\n"}
	patch := gitPatch(t, repo, func(dir string) { applyBug(t, dir, bug) })
	bugged := t.TempDir()
	cloneAt(t, repo, base, bugged)
	applyGit(t, bugged, patch)
	nb := parityCompare(t, "zap/exp with a panic", repo, base, "zap-exp-bug", listed, patch, testPatch,
		filepath.Join(bugged, "exp"), "./...")
	if nb.failed == 0 {
		t.Errorf("zap/exp: the panicking patch failed no test: %s", nb)
	}

	if parityFull() {
		// A patch under which WithGroup blocks forever: the test binary hangs until its own -test.timeout (go
		// test's, and ctxlab's part of the grade's time), and the tests after it have no result.
		hang := moduleBug{file: bug.file, old: bug.old, new: bug.old + "\tselect {}\n"}
		patch := gitPatch(t, repo, func(dir string) { applyBug(t, dir, hang) })
		hung := t.TempDir()
		cloneAt(t, repo, base, hung)
		applyGit(t, hung, patch)
		nh := parityCompareIn(t, 3*time.Minute, "zap/exp with a deadlock", repo, base, "zap-exp-hang", listed, patch,
			testPatch, filepath.Join(hung, "exp"), "-timeout=60s", "./...")
		if nh.failed == 0 {
			t.Errorf("zap/exp: the hanging patch failed no test: %s", nh)
		}
		nb = nb.add(nh)
	}

	// TestFieldConstructors is declared by zap's root package and by exp/zapfield: listed bare, it runs in the
	// module the test patch touches.
	in := parityInstance("zap-bare", base, testPatch)
	in.FailToPass = []string{"TestFieldConstructors"}
	res := gradeParityRun(t, repo, base, in, notePatch(t, repo), "", parityTimeout)
	rs := res.Report.Tests["TestFieldConstructors"]
	if len(rs) != 1 || rs[0].Package != "go.uber.org/zap/exp/zapfield" || rs[0].Status != testlog.StatusPass {
		t.Errorf("bare TestFieldConstructors ran as %+v, want once, in go.uber.org/zap/exp/zapfield, passing", rs)
	}
	return n.add(nb)
}
