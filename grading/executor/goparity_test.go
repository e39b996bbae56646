package executor

import (
	"context"
	"encoding/json"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"ctxlab/dataset/swebench"
	"ctxlab/grading/testlog"
	"ctxlab/testkit/filetree"
)

// stdlibParity are the standard library packages whose code and tests import no internal/ or vendored package and
// whose tests still build once the package is copied into a module of its own (with the Go 1.26 toolchain). Left
// out: encoding/base64, encoding/json, hash/adler32, hash/crc32, hash/fnv, image/draw, image/gif, image/jpeg,
// regexp, slices, sort, strings, bytes, bufio, path, errors, flag, text/template, unicode/utf16 (they or their tests
// import internal/ packages); go/ast, go/token, hash and debug/dwarf (their tests mix the copy's types with the
// standard library's own, through go/parser, hash/crc32, debug/elf or strings, and do not compile), unicode (its
// tests hand the copy's SpecialCase to strings.ToLowerSpecial).
var stdlibParity = []string{"cmp", "container/heap", "container/list", "container/ring", "encoding/ascii85",
	"encoding/base32", "encoding/csv", "encoding/hex", "encoding/pem", "encoding/xml", "go/build/constraint",
	"go/constant", "go/format", "html", "image", "image/color", "image/png", "index/suffixarray", "io", "maps",
	"math/bits", "math/cmplx", "mime/quotedprintable", "net/mail", "net/textproto", "regexp/syntax", "text/scanner",
	"text/tabwriter", "text/template/parse", "unicode/utf8"}

// stdlibSlow are the corpus's tests that take seconds to minutes on two busy cores (go test -short skips them),
// left out of both runs (go test's -skip, and not listed to ctxlab) so that the comparison stays a CI test.
var stdlibSlow = []string{"encoding/xml::TestCVE202230633", "index/suffixarray::TestNew32",
	"index/suffixarray::TestNew64", "image/png::TestDimensionOverflow", "encoding/pem::TestCVE202224675"}

// stdlibBugs break one function in each of four packages: an encoder (its examples fail), an escaper, a container
// method and an encoder whose output the fuzz target's seed corpus decodes again.
var stdlibBugs = []struct{ file, old, new string }{
	{"encoding/hex/hex.go", `hextable        = "0123456789abcdef"`, `hextable        = "0123456789abcdeF"`},
	{"html/escape.go", "`&`, \"&amp;\",", "`&`, \"&amp\","},
	{"container/list/list.go", "func (l *List) Len() int { return l.len }", "func (l *List) Len() int { return l.len + 1 }"},
	{"image/png/writer.go", `e.writeChunk(nil, "IEND")`, `e.writeChunk(nil, "IENX")`},
}

const stdModule = "example.com/std"

// stdlibSample is the part of stdlibParity graded unless CTXLAB_PARITY=full (paritySample): the four packages the
// bug patch breaks (encoding/hex's examples, image/png's fuzz seeds reading ../testdata), io and image, whose tests
// fail at base against the standard library's own values, encoding/csv (a fuzz target) and text/template/parse
// (hundreds of subtests).
var stdlibSample = []string{"container/list", "encoding/csv", "encoding/hex", "html", "image", "image/png", "io",
	"text/template/parse"}

// The Go standard library's own tests, examples and fuzz seeds, graded by ctxlab, agree test by test with go test
// -json -count=1 on the same tree: at the base commit, and with a patch that breaks one function in four packages.
// Nobody here wrote these tests; go test -list says what they are.
func TestGoParityStdlib(t *testing.T) {
	t.Parallel()
	goroot := goEnv(t, "GOROOT")
	files := map[string]string{"go.mod": "module " + stdModule + "\n\ngo " + goLanguageVersion(t) + "\n",
		".parity/README": "the standard library packages of TestGoParityStdlib\n"}
	pkgs := paritySample(t, stdlibParity, stdlibSample)
	for _, pkg := range pkgs {
		copyStdPackage(t, filepath.Join(goroot, "src", filepath.FromSlash(pkg)), pkg, files)
	}
	repo, base := gitRepo(t, files)
	listed := goTestList(t, repo, "./...")
	if len(listed) != len(pkgs) {
		t.Errorf("go test -list found tests in %d packages, want %d", len(listed), len(pkgs))
	}
	var skip []string
	for _, q := range stdlibSlow {
		pkg, name, _ := strings.Cut(q, "::")
		if !slices.Contains(pkgs, pkg) {
			continue
		}
		ip := stdModule + "/" + pkg
		if !slices.Contains(listed[ip], name) {
			t.Fatalf("%s is no longer a test of %s", name, pkg)
		}
		listed[ip] = slices.DeleteFunc(listed[ip], func(n string) bool { return n == name })
		skip = append(skip, name)
	}
	skipFlag := "-skip=^(" + strings.Join(skip, "|") + ")$"
	if len(skip) == 0 {
		skipFlag = "-skip=^$"
	}
	ref := goTestJSONAll(t, repo, skipFlag, "./...")
	res := gradeParity(t, repo, base, "std-base", listed, notePatch(t, repo))
	n := compareParity(t, "base", ref, res, listed)
	t.Logf("stdlib at base: %d packages, %s", len(listed), n)

	// The injected bugs: a model patch made with git in a clone, graded on the bugged packages' tests.
	bugged := map[string][]string{}
	bugPatch := gitPatch(t, repo, func(dir string) {
		for _, b := range stdlibBugs {
			if !slices.Contains(pkgs, path.Dir(b.file)) {
				t.Fatalf("%s, which the bug patch breaks, is not graded", path.Dir(b.file))
			}
			p := filepath.Join(dir, filepath.FromSlash(b.file))
			src, err := os.ReadFile(p)
			if err != nil || !strings.Contains(string(src), b.old) {
				t.Fatalf("%s no longer holds %q (a new Go release?): %v", b.file, b.old, err)
			}
			if err := os.WriteFile(p, []byte(strings.Replace(string(src), b.old, b.new, 1)), 0o644); err != nil {
				t.Fatal(err)
			}
			ip := stdModule + "/" + path.Dir(b.file)
			bugged[ip] = listed[ip]
		}
	})
	buggedRepo := t.TempDir()
	cloneAt(t, repo, base, buggedRepo)
	applyGit(t, buggedRepo, bugPatch)
	var dirs []string
	for ip := range bugged {
		dirs = append(dirs, "./"+strings.TrimPrefix(ip, stdModule+"/"))
	}
	sort.Strings(dirs)
	refBug := goTestJSONAll(t, buggedRepo, append([]string{skipFlag}, dirs...)...)
	resBug := gradeParity(t, repo, base, "std-bug", bugged, bugPatch)
	nb := compareParity(t, "bug", refBug, resBug, bugged)
	t.Logf("stdlib with the bug patch: %d packages, %s", len(bugged), nb)
	if nb.failed == 0 {
		t.Errorf("the bug patch failed no test: it shows nothing")
	}
}

// parityCount is what one comparison found; masked counts names that print a run-dependent value (maskAddresses).
type parityCount struct{ tests, agree, asRoot, failed, top, examples, fuzz, masked int }

func (n parityCount) String() string {
	s := fmt.Sprintf("%d tests and subtests (%d listed: %d examples, %d fuzz targets), %d agree, %d fail under go test",
		n.tests, n.top, n.examples, n.fuzz, n.agree, n.failed)
	if n.asRoot > 0 {
		s += fmt.Sprintf(", %d differ as go test runs them as root", n.asRoot)
	}
	if n.masked > 0 {
		s += fmt.Sprintf(", %d named with a heap address or the time (compared with it masked)", n.masked)
	}
	return s
}

func (n parityCount) add(o parityCount) parityCount {
	return parityCount{n.tests + o.tests, n.agree + o.agree, n.asRoot + o.asRoot, n.failed + o.failed, n.top + o.top,
		n.examples + o.examples, n.fuzz + o.fuzz, n.masked + o.masked}
}

// runDependent is what a subtest's name may print that differs from run to run (testify's assert names its cases
// with %#v of their values): a heap pointer (the Go runtime places the heap at a random base) or a time.Time of the
// clock. Two runs of the same binary, go test's own included, name such a test differently.
var runDependent = regexp.MustCompile(`0x[0-9a-f]{6,}|time\.Date\([^()]*\)`)

// maskAddresses returns the outcomes by package with runDependent masked in every name (names that then coincide
// keep the worse outcome: fail, then pass, then skip) and how many names held one.
func maskAddresses(byPkg map[string]map[string]string) (map[string]map[string]string, int) {
	rank := map[string]int{"fail": 3, "pass": 2, "skip": 1}
	out := map[string]map[string]string{}
	n := 0
	for pkg, names := range byPkg {
		out[pkg] = map[string]string{}
		for name, status := range names {
			m := runDependent.ReplaceAllString(name, "…")
			if m != name {
				n++
			}
			if old, ok := out[pkg][m]; !ok || rank[status] > rank[old] {
				out[pkg][m] = status
			}
		}
	}
	return out, n
}

// rootOnlyFailures are tests that fail when run as root, as go test runs them here, and pass as the sandbox's
// unprivileged uid: cobra's expects writing into a read-only file to fail, and when it does not it dereferences a
// nil error and the binary dies, so go test reports nothing of the tests after it.
var rootOnlyFailures = map[string]string{
	"github.com/spf13/cobra::TestFailGenFishCompletionFile": "writes a read-only file, which root may",
}

// gradeParity grades repo at base with patch through the local executor, FAIL_TO_PASS the listed names qualified
// by package, the modules from the module cache.
func gradeParity(t *testing.T, repo, base, id string, listed map[string][]string, patch string) Result {
	t.Helper()
	return gradeParityWith(t, repo, base, id, listed, patch, "",
		"file://"+filepath.ToSlash(filepath.Join(goEnv(t, "GOMODCACHE"), "cache", "download")), parityTimeout)
}

// parityTimeout is a corpus grade's time: far more than any needs.
const parityTimeout = 20 * time.Minute

// gradeParityWith is gradeParity with the instance's test patch (empty: one adding .parity/tests), the GOPROXY the
// grade downloads from (empty: the worker's) and the grade's time.
func gradeParityWith(t *testing.T, repo, base, id string, listed map[string][]string, patch, testPatch,
	goProxy string, timeout time.Duration) Result {
	t.Helper()
	in := parityInstance(id, base, testPatch)
	for _, ip := range slices.Sorted(maps.Keys(listed)) {
		for _, name := range listed[ip] {
			in.FailToPass = append(in.FailToPass, ip+"::"+name)
		}
	}
	res := gradeParityRun(t, repo, base, in, patch, goProxy, timeout)
	if len(res.Report.NotDeclared) > 0 {
		t.Errorf("%s: names go test -list gave that ctxlab does not declare: %v", id, res.Report.NotDeclared)
	}
	return res
}

// parityInstance is a corpus instance at base with testPatch (empty: one adding .parity/tests) and no tests listed.
func parityInstance(id, base, testPatch string) swebench.Instance {
	if testPatch == "" {
		testPatch = "diff --git a/.parity/tests b/.parity/tests\nnew file mode 100644\n--- /dev/null\n+++ b/.parity/tests\n@@ -0,0 +1 @@\n+graded\n"
	}
	return swebench.Instance{InstanceID: "parity__" + id, Repo: "parity/" + id, BaseCommit: base, TestPatch: testPatch}
}

// gradeParityRun grades in (a clone of repo at base) with patch through the local executor, in timeout.
func gradeParityRun(t *testing.T, repo, base string, in swebench.Instance, patch, goProxy string,
	timeout time.Duration) Result {
	t.Helper()
	req := Request{Instance: in, Patch: patch, Timeout: timeout, Config: Config{GoProxy: goProxy},
		Materialize: func(ctx context.Context, dir string) error {
			cloneAt(t, repo, base, dir)
			return nil
		}}
	start := time.Now()
	res, err := Local{}.Run(context.Background(), req)
	if err != nil || !res.Ran {
		t.Fatalf("grading %s: %v (applied: %s)\n%s", in.InstanceID, err, res.ApplyErr, res.Output)
	}
	t.Logf("%s graded in %s (isolation %s)", in.InstanceID, time.Since(start).Round(time.Second), res.Isolation)
	return res
}

// compareParity requires ctxlab's outcome (pass, fail, skip or missing) of every test and subtest go test reported
// in the listed packages to equal go test's, and no other result of ctxlab's there; it returns the counts. The one
// difference allowed is the sandbox's uid: where go test runs as root and ctxlab's tests as an unprivileged uid, a
// test of rootOnlyFailures fails under go test only, and the tests its dead binary never reached are missing there.
func compareParity(t *testing.T, what string, ref map[string]map[string]string, res Result,
	listed map[string][]string) parityCount {
	t.Helper()
	rep := res.Report
	ours := map[string]map[string]string{}
	for name, rs := range rep.Tests {
		for _, r := range rs {
			if ours[r.Package] == nil {
				ours[r.Package] = map[string]string{}
			}
			ours[r.Package][name] = string(r.Status)
		}
	}
	ref, masked := maskAddresses(ref)
	ours, _ = maskAddresses(ours)
	unprivileged := os.Geteuid() == 0 && res.Isolation == "namespaces"
	n := parityCount{masked: masked}
	var bad []string
	rootOnly := map[string]bool{}
	for _, ip := range slices.Sorted(maps.Keys(listed)) {
		n.top += len(listed[ip])
		for _, name := range listed[ip] {
			switch testlog.GoTestKind(name) {
			case "Example":
				n.examples++
			case "Fuzz":
				n.fuzz++
			}
		}
		names := map[string]bool{}
		for name := range ref[ip] {
			names[name] = true
		}
		for name := range ours[ip] {
			names[name] = true
		}
		for _, name := range listed[ip] {
			names[name] = true
		}
		died := false // a rootOnlyFailures test of the package failed under go test and passed here
		for q := range rootOnlyFailures {
			pkg, name, _ := strings.Cut(q, "::")
			died = died || (pkg == ip && unprivileged && ref[ip][name] == "fail" && ours[ip][name] == "pass")
		}
		for _, name := range slices.Sorted(maps.Keys(names)) {
			theirs, mine := orMissing(ref[ip][name]), orMissing(ours[ip][name])
			n.tests++
			if theirs == "fail" {
				n.failed++
			}
			_, known := rootOnlyFailures[ip+"::"+name]
			switch {
			case theirs == mine:
				n.agree++
			case died && (known || theirs == "missing"):
				n.asRoot++
				rootOnly[ip+"::"+strings.SplitN(name, "/", 2)[0]] = true
			default:
				bad = append(bad, fmt.Sprintf("%s::%s: go test %s, ctxlab %s", ip, name, theirs, mine))
			}
		}
	}
	if len(bad) > 0 {
		t.Errorf("%s: %d of %d outcomes differ:\n%s", what, len(bad), n.tests, strings.Join(bad[:min(len(bad), 40)], "\n"))
	}
	// Decide's failing set is go test's failing set among the listed top-level names.
	var f2p, theirFailed []string
	for ip, names := range listed {
		for _, name := range names {
			q := ip + "::" + name
			if rootOnly[q] {
				continue
			}
			f2p = append(f2p, q)
			if s := orMissing(ref[ip][name]); s == "fail" || s == "missing" {
				theirFailed = append(theirFailed, q)
			}
		}
	}
	v := testlog.Decide(f2p, nil, rep)
	ourFailed := append(append([]string{}, v.Failed...), v.Missing...)
	sort.Strings(ourFailed)
	sort.Strings(theirFailed)
	if !slices.Equal(ourFailed, theirFailed) {
		t.Errorf("%s: failing or missing listed tests differ:\nctxlab  %v\ngo test %v", what, ourFailed, theirFailed)
	}
	return n
}

func orMissing(s string) string {
	if s == "" {
		return "missing"
	}
	return s
}

// copyStdPackage adds the package's files and testdata from src to files under pkg, with the package's own import
// path (in its external tests and examples) rewritten to the copy's.
func copyStdPackage(t *testing.T, src, pkg string, files map[string]string) {
	t.Helper()
	copyPackage(t, src, pkg, files, func(name string, b []byte) []byte {
		if !strings.HasSuffix(name, ".go") || strings.HasPrefix(name, "testdata/") {
			return b
		}
		return rewriteImport(t, name, b, pkg, stdModule+"/"+pkg)
	})
}

// copyPackage adds the regular files of the folder src (Go, assembly, data; not its subfolders) and its testdata to
// files under dst, each through edit (its path relative to src, its content).
func copyPackage(t *testing.T, src, dst string, files map[string]string, edit func(rel string, b []byte) []byte) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && !strings.HasPrefix(rel, "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files[path.Join(dst, rel)] = string(edit(rel, b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// rewriteImport replaces the import of from by to in a Go file, at the import spec's own position.
func rewriteImport(t *testing.T, name string, src []byte, from, to string) []byte {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.ImportsOnly)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	for i := len(f.Imports) - 1; i >= 0; i-- {
		imp := f.Imports[i]
		if imp.Path.Value != strconv.Quote(from) {
			continue
		}
		start, end := fset.Position(imp.Path.Pos()).Offset, fset.Position(imp.Path.End()).Offset
		src = slices.Concat(src[:start], []byte(strconv.Quote(to)), src[end:])
	}
	return src
}

// goTestList is go test -list's answer in dir: the tests, examples and fuzz targets of each package, benchmarks
// left out (go test runs them only with -bench).
func goTestList(t *testing.T, dir string, pkgs ...string) map[string][]string {
	t.Helper()
	return goTestListEnv(t, dir, offlineEnv(), pkgs...)
}

// goTestListEnv is goTestList with the go command's environment env.
func goTestListEnv(t *testing.T, dir string, env []string, pkgs ...string) map[string][]string {
	t.Helper()
	out := goCommandEnv(t, dir, env, append([]string{"test", "-list", ".", "-json"}, pkgs...)...)
	listed := map[string][]string{}
	for _, line := range strings.Split(string(out), "\n") {
		var ev struct{ Action, Package, Output string }
		if json.Unmarshal([]byte(line), &ev) != nil || ev.Action != "output" {
			continue
		}
		name := strings.TrimSpace(ev.Output)
		if testlog.GoTestKind(name) == "" || strings.ContainsAny(name, " \t") {
			continue
		}
		listed[ev.Package] = append(listed[ev.Package], name)
	}
	return listed
}

// goTestJSONAll is every test's and subtest's last status in go test -json -count=1's report, by package. A test
// that started (a run event) and never reported a result, because its binary exited under it (an example calling
// log.Fatal), is "fail": it ran and did not pass, as ctxlab records it.
func goTestJSONAll(t *testing.T, dir string, pkgs ...string) map[string]map[string]string {
	t.Helper()
	return goTestJSONEnv(t, dir, offlineEnv(), pkgs...)
}

// goTestJSONEnv is goTestJSONAll with the go command's environment env.
func goTestJSONEnv(t *testing.T, dir string, env []string, pkgs ...string) map[string]map[string]string {
	t.Helper()
	start := time.Now()
	out := goCommandEnv(t, dir, env, append([]string{"test", "-json", "-count=1"}, pkgs...)...)
	got := map[string]map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		var ev struct{ Action, Package, Test string }
		if json.Unmarshal([]byte(line), &ev) != nil || ev.Test == "" {
			continue
		}
		if got[ev.Package] == nil {
			got[ev.Package] = map[string]string{}
		}
		switch ev.Action {
		case "pass", "fail", "skip":
			got[ev.Package][ev.Test] = ev.Action
		case "run":
			got[ev.Package][ev.Test] = "fail"
		}
	}
	t.Logf("go test -json -count=1 %v: %s", pkgs, time.Since(start).Round(time.Second))
	return got
}

// offlineEnv is the go command's environment as the grader builds: offline.
func offlineEnv() []string {
	return append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOTOOLCHAIN=local")
}

// goCommand runs the go command in dir offline, as the grader builds (its exit status is not checked: failing tests
// exit 1).
func goCommand(t *testing.T, dir string, args ...string) []byte {
	t.Helper()
	return goCommandEnv(t, dir, offlineEnv(), args...)
}

// goCommandEnv runs the go command in dir with env; a build failure's output is on stderr, so an empty stdout
// stops the test only when the command could not run.
func goCommandEnv(t *testing.T, dir string, env []string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = env
	out, err := cmd.Output()
	if len(out) == 0 {
		t.Fatalf("go %v: %v", args, err)
	}
	return out
}

func goEnv(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		t.Fatalf("go env %s: %v", name, err)
	}
	return strings.TrimSpace(string(out))
}

// goLanguageVersion is the toolchain's language version (1.26 for go1.26.8), for the go directive of a module
// holding its standard library's code.
func goLanguageVersion(t *testing.T) string {
	v := strings.TrimPrefix(goEnv(t, "GOVERSION"), "go")
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		t.Fatalf("go version %q", v)
	}
	return parts[0] + "." + parts[1]
}

// git runs git in dir and returns its trimmed output.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t",
		"GIT_COMMITTER_EMAIL=t@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// cloneAt writes repo's tree at commit into dir (an empty folder), as the checkout step materializes it.
func cloneAt(t *testing.T, repo, commit, dir string) {
	t.Helper()
	git(t, dir, "clone", "-q", "--no-checkout", repo, ".")
	git(t, dir, "checkout", "-q", commit)
}

// gitPatch is the diff (git diff --binary) of what edit does to a clone of repo.
func gitPatch(t *testing.T, repo string, edit func(dir string)) string {
	t.Helper()
	dir := t.TempDir()
	cloneAt(t, repo, "HEAD", dir)
	edit(dir)
	git(t, dir, "add", "-A")
	return git(t, dir, "diff", "--cached", "--binary") + "\n"
}

func applyGit(t *testing.T, dir, patch string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "patch")
	if err := os.WriteFile(p, []byte(patch), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, dir, "apply", p)
}

// notePatch adds a note to the repository and changes no code: a grade of the base commit as it is.
func notePatch(t *testing.T, repo string) string {
	return gitPatch(t, repo, func(dir string) {
		filetree.Write(t, dir, map[string]string{".parity/NOTE": "no change to the code\n"})
	})
}

// moduleParity are modules ctxlab itself depends on, so already in the module cache, whose own test suites read
// os.Args (cobra: Execute parses os.Args[1:] unless the binary is cobra.test), run the go command (cobra builds a
// program and reads it with go tool nm; xxhash runs go test -gcflags=-m), or read testdata (go-gitdiff).
var moduleParity = []struct {
	path string
	pkgs []string // the module's package folders graded
}{
	{"github.com/spf13/cobra", []string{"."}},
	{"github.com/spf13/pflag", []string{"."}},
	{"github.com/cespare/xxhash/v2", []string{"."}},
	{"github.com/bluekeyes/go-gitdiff", []string{"gitdiff"}},
	{"github.com/dustin/go-humanize", []string{"."}},
	{"github.com/mattn/go-runewidth", []string{"."}},
}

// moduleSample is the part of moduleParity graded unless CTXLAB_PARITY=full (paritySample): cobra (os.Args, the go
// command run by its tests, the outcomes that differ as root), pflag (examples, and the bug patch graded in the
// sample), xxhash (go test run by a test) and go-gitdiff (testdata, a fuzz target). go-humanize's and go-runewidth's
// plain table tests are left to the full run, and so is cobra's bug patch.
var moduleSample = []string{"github.com/spf13/cobra", "github.com/spf13/pflag", "github.com/cespare/xxhash/v2",
	"github.com/bluekeyes/go-gitdiff"}

// moduleBugSample are the modules whose bug patch the sample grades.
var moduleBugSample = []string{"github.com/spf13/pflag"}

// moduleBugs break one function of cobra (NoArgs lets one argument through) and one of pflag (Lookup skips the
// name normalization).
var moduleBugs = []struct{ module, file, old, new string }{
	{"github.com/spf13/cobra", "args.go", "\tif len(args) > 0 {\n\t\treturn fmt.Errorf(\"unknown command %q for %q\"",
		"\tif len(args) > 1 {\n\t\treturn fmt.Errorf(\"unknown command %q for %q\""},
	{"github.com/spf13/pflag", "flag.go", "return f.lookup(f.normalizeFlagName(name))", "return f.lookup(NormalizedName(name))"},
}

// The test suites of modules in the module cache, each in a repository of its own at a base commit, graded by
// ctxlab, agree test by test with go test -json -count=1 on the same tree; then with a patch that breaks one
// function of two of them.
func TestGoParityModuleCache(t *testing.T) {
	t.Parallel()
	var total, bugTotal parityCount
	var paths []string
	for _, m := range moduleParity {
		paths = append(paths, m.path)
	}
	graded := paritySample(t, paths, moduleSample)
	bugGraded := moduleBugSample
	if parityFull() {
		bugGraded = nil
		for _, b := range moduleBugs {
			bugGraded = append(bugGraded, b.module)
		}
	}
	for _, m := range moduleParity {
		if !slices.Contains(graded, m.path) {
			continue
		}
		dir, version := cachedModule(t, m.path)
		files := map[string]string{}
		for _, pkg := range m.pkgs {
			copyPackage(t, filepath.Join(dir, filepath.FromSlash(pkg)), pkg, files, func(_ string, b []byte) []byte { return b })
		}
		gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err != nil {
			t.Fatal(err)
		}
		files["go.mod"] = string(gomod)
		repo := t.TempDir()
		filetree.Write(t, repo, files)
		pinRequirements(t, repo)
		repo, base := gitRepoOf(t, repo)
		id := strings.ReplaceAll(path.Base(strings.TrimSuffix(m.path, "/v2")), ".", "_")
		listed := goTestList(t, repo, "./...")
		if len(listed) != len(m.pkgs) {
			t.Fatalf("%s: go test -list found tests in %d packages, want %d", m.path, len(listed), len(m.pkgs))
		}
		ref := goTestJSONAll(t, repo, "./...")
		res := gradeParity(t, repo, base, id, listed, notePatch(t, repo))
		n := compareParity(t, m.path+"@"+version, ref, res, listed)
		t.Logf("%s@%s: %s", m.path, version, n)
		total = total.add(n)

		for _, b := range moduleBugs {
			if b.module != m.path || !slices.Contains(bugGraded, b.module) {
				continue
			}
			bug := gitPatch(t, repo, func(dir string) {
				p := filepath.Join(dir, b.file)
				src, err := os.ReadFile(p)
				if err != nil || !strings.Contains(string(src), b.old) {
					t.Fatalf("%s@%s %s no longer holds %q: %v", m.path, version, b.file, b.old, err)
				}
				if err := os.WriteFile(p, []byte(strings.Replace(string(src), b.old, b.new, 1)), 0o644); err != nil {
					t.Fatal(err)
				}
			})
			bugged := t.TempDir()
			cloneAt(t, repo, base, bugged)
			applyGit(t, bugged, bug)
			refBug := goTestJSONAll(t, bugged, "./...")
			resBug := gradeParity(t, repo, base, id+"-bug", listed, bug)
			nb := compareParity(t, m.path+" with the bug", refBug, resBug, listed)
			t.Logf("%s with the bug patch: %s", m.path, nb)
			if nb.failed == 0 {
				t.Errorf("%s: the bug patch failed no test", m.path)
			}
			bugTotal = bugTotal.add(nb)
		}
	}
	if bugTotal.failed == 0 {
		t.Errorf("no bug patch was graded, or none failed a test")
	}
	t.Logf("module cache: %d modules at base: %s; with bugs (%d): %s", len(graded), total, len(bugGraded), bugTotal)
}

// cachedModule is the folder and version of the module ctxlab's own build list selects, in the module cache.
func cachedModule(t *testing.T, mod string) (dir, version string) {
	t.Helper()
	dir, version = cachedModuleVersion(mod)
	if dir == "" {
		t.Fatalf("%s is not in the module cache (go mod download %s)", mod, mod)
	}
	return dir, version
}

// pinRequirements raises the module's requirements to the versions ctxlab's build list selects (those the module
// cache holds) and writes its go.sum from the module cache, offline.
func pinRequirements(t *testing.T, dir string) {
	t.Helper()
	cmd := exec.Command("go", "mod", "edit", "-json")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod edit -json: %v", err)
	}
	var mf struct{ Require []struct{ Path string } }
	if err := json.Unmarshal(out, &mf); err != nil {
		t.Fatal(err)
	}
	for _, r := range mf.Require {
		if _, v := cachedModuleVersion(r.Path); v != "" {
			run := exec.Command("go", "mod", "edit", "-require="+r.Path+"@"+v)
			run.Dir = dir
			if out, err := run.CombinedOutput(); err != nil {
				t.Fatalf("go mod edit: %v\n%s", err, out)
			}
		}
	}
	tidy := exec.Command("go", "mod", "tidy", "-e")
	tidy.Dir = dir
	tidy.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOSUMDB=off", "GOTOOLCHAIN=local",
		"GOPROXY=file://"+filepath.ToSlash(filepath.Join(goEnv(t, "GOMODCACHE"), "cache", "download")))
	if out, err := tidy.CombinedOutput(); err != nil {
		t.Fatalf("go mod tidy: %v\n%s", err, out)
	}
}

func cachedModuleVersion(mod string) (dir, version string) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}\t{{.Version}}", mod)
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOTOOLCHAIN=local")
	out, err := cmd.Output()
	if err != nil {
		return "", ""
	}
	dir, version, _ = strings.Cut(strings.TrimSpace(string(out)), "\t")
	return dir, version
}

// gitRepoOf commits the folder as it is into a fresh repository and returns it and the commit.
func gitRepoOf(t *testing.T, dir string) (string, string) {
	t.Helper()
	git(t, dir, "init", "-q")
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-qm", "base")
	return dir, git(t, dir, "rev-parse", "HEAD")
}
