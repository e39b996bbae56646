package demobench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/format"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bluekeyes/go-gitdiff/gitdiff"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"ctxlab/dataset/swebench"
	"ctxlab/grading/executor"
	"ctxlab/grading/testlog"
	"ctxlab/patch/diff"
)

// testRoot holds everything the tests write; TestMain removes it.
var testRoot string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "demobench-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	testRoot = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var shared struct {
	once    sync.Once
	res     *Result
	err     error
	elapsed time.Duration
}

// generated returns the benchmark generated once into testRoot/shared.
func generated(t *testing.T) *Result {
	t.Helper()
	shared.once.Do(func() {
		start := time.Now()
		shared.res, shared.err = Generate(filepath.Join(testRoot, "shared"))
		shared.elapsed = time.Since(start)
	})
	if shared.err != nil {
		t.Fatalf("Generate: %v", shared.err)
	}
	return shared.res
}

func TestGenerateIsFastDeterministicAndReused(t *testing.T) {
	res := generated(t)
	t.Logf("first generation took %v", shared.elapsed)
	if shared.elapsed > 10*time.Second {
		t.Errorf("generation took %v; it should take a couple of seconds", shared.elapsed)
	}
	if res.File != filepath.Join(res.DatasetDir, DatasetFile) || !filepath.IsAbs(res.DatasetDir) {
		t.Errorf("File %s, DatasetDir %s", res.File, res.DatasetDir)
	}

	// Another folder gives the same bytes, so the commit hashes in it are the same too.
	other, err := Generate(filepath.Join(testRoot, "other", "dataset"))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(res.File)
	b, _ := os.ReadFile(other.File)
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Fatal("two generations wrote different demo.jsonl files")
	}
	if fi, err := os.Stat(other.DatasetDir); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("dataset folder mode %v, %v", fi.Mode(), err)
	}
	entries, _ := os.ReadDir(filepath.Dir(other.DatasetDir))
	if len(entries) != 1 {
		t.Errorf("temporary folders left next to the dataset: %v", entries)
	}

	// A second call on the same folder reuses it untouched.
	stamp := func() map[string]time.Time {
		out := map[string]time.Time{}
		for _, p := range []string{res.File, filepath.Join(res.DatasetDir, markerFile),
			filepath.Join(RepoDir(res.DatasetDir, "acme/humanize"), ".git", "HEAD"),
			filepath.Join(RepoDir(res.DatasetDir, "acme/humanize"), "README.md")} {
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			out[p] = fi.ModTime()
		}
		return out
	}
	before := stamp()
	time.Sleep(20 * time.Millisecond)
	start := time.Now()
	again, err := Generate(res.DatasetDir)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("reuse took %v", time.Since(start))
	if !reflectEqualTimes(before, stamp()) {
		t.Error("the second Generate rewrote files")
	}
	if len(again.Instances) != len(res.Instances) || again.Instances[0].BaseCommit != res.Instances[0].BaseCommit {
		t.Error("the second Generate returned other instances")
	}
}

func reflectEqualTimes(a, b map[string]time.Time) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !b[k].Equal(v) {
			return false
		}
	}
	return true
}

func TestGenerateReplacesIncompleteAndRefusesForeignFolders(t *testing.T) {
	want, _ := os.ReadFile(generated(t).File)

	// A crash after the repositories but before the marker: rebuilt.
	partial := filepath.Join(testRoot, "partial")
	if err := os.MkdirAll(filepath.Join(partial, ReposDir, "acme", "humanize"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(partial, DatasetFile), []byte("{truncated"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := Generate(partial)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(res.File); !bytes.Equal(got, want) {
		t.Error("the rebuilt dataset differs")
	}

	// A marker of another version: rebuilt.
	if err := os.WriteFile(filepath.Join(partial, markerFile), []byte("demobench v0-old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Generate(partial); err != nil {
		t.Fatal(err)
	}
	if m, _ := os.ReadFile(filepath.Join(partial, markerFile)); !strings.Contains(string(m), Version()) {
		t.Errorf("marker not rewritten: %q", m)
	}

	// A folder with someone else's files: refused, and the files are kept.
	foreign := filepath.Join(testRoot, "foreign")
	if err := os.MkdirAll(foreign, 0o755); err != nil {
		t.Fatal(err)
	}
	notes := filepath.Join(foreign, "notes.txt")
	if err := os.WriteFile(notes, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Generate(foreign); err == nil || !strings.Contains(err.Error(), "refusing") {
		t.Fatalf("err = %v, want a refusal", err)
	}
	if got, _ := os.ReadFile(notes); string(got) != "keep me" {
		t.Fatal("a foreign file was changed")
	}
}

// repoFiles returns the files of commit in the repository at dir.
func repoFiles(t *testing.T, r *git.Repository, commit string) map[string][]byte {
	t.Helper()
	c, err := r.CommitObject(plumbing.NewHash(commit))
	if err != nil {
		t.Fatalf("commit %s: %v", commit, err)
	}
	tree, err := c.Tree()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	err = tree.Files().ForEach(func(f *object.File) error {
		rd, err := f.Reader()
		if err != nil {
			return err
		}
		defer rd.Close()
		data, err := io.ReadAll(rd)
		out[f.Name] = data
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func specOf(t *testing.T, id string) (repoSpec, instanceSpec) {
	t.Helper()
	for _, r := range repos {
		for _, in := range r.instances {
			if fmt.Sprintf("%s__%s-%d", Owner, r.name, in.n) == id {
				return r, in
			}
		}
	}
	t.Fatalf("no spec for %s", id)
	return repoSpec{}, instanceSpec{}
}

var idRE = regexp.MustCompile(`^acme__([a-z]+)-([0-9]+)$`)

func TestDatasetShape(t *testing.T) {
	res := generated(t)
	rows, err := swebench.ReadFile(res.File)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 11 {
		t.Errorf("%d instances, want 11", len(rows))
	}
	byRepo := map[string][]swebench.Instance{}
	for _, in := range rows {
		m := idRE.FindStringSubmatch(in.InstanceID)
		if m == nil || in.Repo != "acme/"+m[1] {
			t.Errorf("instance %s of repo %s: bad id or repo", in.InstanceID, in.Repo)
		}
		byRepo[in.Repo] = append(byRepo[in.Repo], in)
	}
	if len(byRepo) < 10 {
		t.Errorf("%d repositories, want at least 10", len(byRepo))
	}
	multi := 0
	for name, insts := range byRepo {
		t.Run(strings.ReplaceAll(name, "/", "_"), func(t *testing.T) {
			if len(insts) > 1 {
				multi++
			}
			checkRepo(t, res.DatasetDir, name, insts)
		})
	}
	if multi == 0 {
		t.Error("no repository carries two instances")
	}
}

func checkRepo(t *testing.T, datasetDir, name string, insts []swebench.Instance) {
	r, err := git.PlainOpen(RepoDir(datasetDir, name))
	if err != nil {
		t.Fatal(err)
	}
	// The worktree is checked out and clean.
	wt, err := r.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	if st, err := wt.Status(); err != nil || !st.IsClean() {
		t.Fatalf("worktree not clean: %v %v", st, err)
	}
	// One branch, main; its history is the repository's whole history.
	refs, _ := r.References()
	var names []string
	_ = refs.ForEach(func(ref *plumbing.Reference) error {
		names = append(names, ref.Name().String())
		return nil
	})
	sort.Strings(names)
	if strings.Join(names, " ") != "HEAD refs/heads/main" {
		t.Errorf("references %v, want HEAD and refs/heads/main only", names)
	}
	head, err := r.Head()
	if err != nil {
		t.Fatal(err)
	}
	log, err := r.Log(&git.LogOptions{From: head.Hash()})
	if err != nil {
		t.Fatal(err)
	}
	var history []string // newest first
	_ = log.ForEach(func(c *object.Commit) error {
		history = append(history, c.Hash.String())
		return nil
	})
	position := map[string]int{}
	for i, h := range history {
		position[h] = len(history) - 1 - i // number of commits before h
	}
	latest := -1
	bases := map[string]bool{}
	for _, in := range insts {
		before, ok := position[in.BaseCommit]
		if !ok {
			t.Fatalf("%s: base commit %s is not in the history", in.InstanceID, in.BaseCommit)
		}
		if before < 2 || before > 3 {
			t.Errorf("%s: %d commits before the base commit, want 2 or 3", in.InstanceID, before)
		}
		latest = max(latest, before)
		bases[in.BaseCommit] = true
	}
	if latest != len(history)-1 {
		t.Errorf("history goes past the latest base commit (%d commits, latest base has %d before it)", len(history), latest)
	}
	if len(bases) != len(insts) {
		t.Error("two instances share a base commit")
	}

	for _, in := range insts {
		t.Run(in.InstanceID, func(t *testing.T) {
			rs, spec := specOf(t, in.InstanceID)
			base := repoFiles(t, r, in.BaseCommit)
			checkContent(t, rs, base)
			checkInstanceRow(t, r, rs, spec, in, base)
		})
	}
}

func checkContent(t *testing.T, rs repoSpec, base map[string][]byte) {
	if len(base) < 30 {
		t.Errorf("%d files at the base commit, want at least 30", len(base))
	}
	docs := 0
	for p := range base {
		if strings.HasPrefix(p, "docs/") {
			docs++
		}
	}
	if docs == 0 || base["README.md"] == nil {
		t.Error("no README.md or docs/")
	}
	if base[".github/ISSUE_TEMPLATE/bug_report.md"] == nil {
		t.Error("no bug report template")
	}
	if langOf(rs) == langPython {
		checkPythonContent(t, base)
		return
	}
	want := "module example.com/" + rs.name + "\n\ngo 1.21\n"
	if len(rs.requires) > 0 {
		want += "\nrequire (\n"
		for _, r := range rs.requires {
			m, _ := moduleByPath(r)
			want += "\t" + m.path + " " + m.version + "\n"
		}
		want += ")\n"
		if n := bytes.Count(base["go.sum"], []byte("\n")); n != 2*len(rs.requires) {
			t.Errorf("go.sum has %d lines, want two per required module:\n%s", n, base["go.sum"])
		}
	} else if base["go.sum"] != nil {
		t.Error("a go.sum without requirements")
	}
	if string(base["go.mod"]) != want {
		t.Errorf("go.mod = %q, want %q", base["go.mod"], want)
	}
	pkgs := map[string]bool{}
	for p := range base {
		if strings.HasSuffix(p, ".go") {
			pkgs[path.Dir(p)] = true
		}
	}
	if len(pkgs) < 4 {
		t.Errorf("Go files in %d folders, want several packages", len(pkgs))
	}
	// Every .go file parses, is gofmt-clean and imports only the standard library, its own module and the
	// modules its go.mod requires.
	for p, data := range base {
		if !strings.HasSuffix(p, ".go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, data, parser.ParseComments)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if formatted, err := format.Source(data); err != nil || !bytes.Equal(formatted, data) {
			t.Errorf("%s is not gofmt-clean", p)
		}
		for _, imp := range f.Imports {
			ip, _ := strconv.Unquote(imp.Path.Value)
			first, _, _ := strings.Cut(ip, "/")
			own := ip == "example.com/"+rs.name || strings.HasPrefix(ip, "example.com/"+rs.name+"/")
			if strings.Contains(first, ".") && !own && !slices.Contains(rs.requires, ip) {
				t.Errorf("%s imports %s, outside the standard library and the required modules", p, ip)
			}
		}
	}
}

// checkPythonContent checks a Python repository: no go.mod, a package and its tests in several folders, a
// pyproject.toml, and no Go files.
func checkPythonContent(t *testing.T, base map[string][]byte) {
	if base["go.mod"] != nil || base["pyproject.toml"] == nil {
		t.Error("a Python repository has a go.mod or no pyproject.toml")
	}
	pkgs := map[string]bool{}
	tests := 0
	for p := range base {
		switch {
		case strings.HasSuffix(p, ".go"):
			t.Errorf("Go file %s in a Python repository", p)
		case strings.HasSuffix(p, ".py"):
			pkgs[path.Dir(p)] = true
			if isTestFile(langPython, p) {
				tests++
			}
		}
	}
	if len(pkgs) < 2 || tests < 4 {
		t.Errorf("Python files in %d folders with %d test files, want a package and its tests", len(pkgs), tests)
	}
}

var templateHeadings = []string{"**Describe the bug**", "**To Reproduce**", "**Expected behavior**", "**Environment**"}

func checkInstanceRow(t *testing.T, r *git.Repository, rs repoSpec, spec instanceSpec, in swebench.Instance, base map[string][]byte) {
	read := func(p string) ([]byte, bool) { d, ok := base[p]; return d, ok }
	gold, err := diff.ChangedFiles(in.Patch)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range gold {
		if base[p] == nil {
			t.Errorf("gold file %s does not exist at the base commit", p)
		}
	}
	after, err := diff.ApplyFiles(read, in.Patch)
	if err != nil {
		t.Fatalf("gold patch: %v", err)
	}
	tests, err := diff.ApplyFiles(read, in.TestPatch)
	if err != nil {
		t.Fatalf("test patch: %v", err)
	}
	// Neither the fixed files nor the new tests are anywhere in the repository's object store.
	for _, m := range []map[string][]byte{after, tests} {
		for p, data := range m {
			h := plumbing.ComputeHash(plumbing.BlobObject, data)
			if err := r.Storer.HasEncodedObject(h); !errors.Is(err, plumbing.ErrObjectNotFound) {
				t.Errorf("the patched %s (blob %s) is in the repository", p, h)
			}
		}
	}
	// A test is declared once in its package (or file), before and after the test patch; each FAIL_TO_PASS test is
	// added or changed by the test patch; each PASS_TO_PASS test exists at base and the test patch leaves it alone.
	lang := langOf(rs)
	withTests := map[string][]byte{}
	for p, d := range base {
		withTests[p] = d
	}
	for p, d := range tests {
		withTests[p] = d
	}
	declared, all := testFuncs(lang, base), testFuncs(lang, withTests)
	for id, n := range all {
		if n != 1 {
			t.Errorf("test %s is declared %d times", id, n)
		}
	}
	bodyChanged := func(id string) bool {
		_, fn, _ := strings.Cut(id, "::")
		file := fileOfID(lang, id, withTests)
		return file != "" && funcBody(lang, "\n"+string(base[file]), fn) != funcBody(lang, "\n"+string(withTests[file]), fn)
	}
	for _, name := range in.FailToPass {
		ids := testIDs(rs, name, all)
		changed := 0
		for _, id := range ids {
			if bodyChanged(id) {
				changed++
			}
		}
		if changed == 0 {
			t.Errorf("FAIL_TO_PASS %s (%v) is not added or changed by the test patch", name, ids)
		}
	}
	if len(in.PassToPass) < 2 {
		t.Error("fewer than two PASS_TO_PASS tests")
	}
	for _, name := range in.PassToPass {
		ids := testIDs(rs, name, declared)
		if len(ids) == 0 {
			t.Errorf("PASS_TO_PASS %s does not exist at the base commit", name)
		}
		for _, id := range ids {
			if bodyChanged(id) {
				t.Errorf("PASS_TO_PASS %s: the test patch changes %s", name, id)
			}
		}
	}
	if slices.ContainsFunc(in.PassToPass, func(n string) bool { return slices.Contains(in.FailToPass, n) }) {
		t.Error("a test is in both FAIL_TO_PASS and PASS_TO_PASS")
	}
	// The problem statement has the shape of the template, which has the same headings.
	template := string(base[".github/ISSUE_TEMPLATE/bug_report.md"])
	for _, h := range templateHeadings {
		if !strings.Contains(in.ProblemStatement, h) || !strings.Contains(template, h) {
			t.Errorf("heading %s missing from the issue or the template", h)
		}
	}
	if n := len(strings.Fields(in.ProblemStatement)); n < 120 {
		t.Errorf("problem statement has %d words; want a few paragraphs", n)
	}
	checkTraps(t, rs, spec, in, base, withTests, gold)
}

func checkTraps(t *testing.T, rs repoSpec, spec instanceSpec, in swebench.Instance, base, withTests map[string][]byte, gold []string) {
	isGold := map[string]bool{}
	for _, g := range gold {
		isGold[g] = true
	}
	for _, trap := range spec.traps {
		switch trap {
		case trapTemplate, trapSharedRepo: // checked above
		case trapOneChar:
			var minus, plus []string
			for _, l := range strings.Split(in.Patch, "\n") {
				switch {
				case strings.HasPrefix(l, "-") && !strings.HasPrefix(l, "---"):
					minus = append(minus, l[1:])
				case strings.HasPrefix(l, "+") && !strings.HasPrefix(l, "+++"):
					plus = append(plus, l[1:])
				}
			}
			if len(minus) != 1 || len(plus) != 1 || editDistance(minus[0], plus[0]) != 1 {
				t.Errorf("one-character fix: patch changes %q into %q", minus, plus)
			}
		case trapTwoFiles:
			if len(gold) != 2 {
				t.Errorf("two-file fix: the gold patch edits %v", gold)
			}
		case trapLongFile:
			long := false
			for _, g := range gold {
				long = long || bytes.Count(base[g], []byte("\n")) >= 300
			}
			if !long {
				t.Error("long gold file: no gold file has 300 lines")
			}
		case trapNamesFunction:
			declared := false
			for _, g := range gold {
				declared = declared || regexp.MustCompile(`(?m)^func (\([^)]*\) )?`+spec.function+`\(`).Match(base[g])
			}
			if !declared || !strings.Contains(in.ProblemStatement, spec.function) {
				t.Errorf("names-function: %s not named by the issue or not declared in a gold file", spec.function)
			}
		case trapSymptom:
			definedElsewhere := false
			for p, data := range base {
				if strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") && !isGold[p] &&
					bytes.Contains(data, []byte(spec.symptom)) {
					definedElsewhere = true
				}
			}
			for _, g := range gold {
				if bytes.Contains(base[g], []byte(spec.symptom)) {
					t.Errorf("symptom %q appears in the gold file %s", spec.symptom, g)
				}
			}
			if !definedElsewhere || !strings.Contains(in.ProblemStatement, spec.symptom) {
				t.Errorf("symptom %q is not in the issue or not defined outside the gold files", spec.symptom)
			}
		case trapEchoTests:
			if len(spec.echo) == 0 {
				t.Error("echo-tests: no files listed")
			}
			issueWords := words(in.ProblemStatement)
			for _, e := range spec.echo {
				if !strings.HasSuffix(e, "_test.go") || base[e] == nil || strings.Contains(in.TestPatch, "b/"+e+"\n") || isGold[e] {
					t.Errorf("echo file %s must be an existing test file that no patch touches", e)
					continue
				}
				shared := 0
				for w := range words(string(base[e])) {
					if issueWords[w] {
						shared++
					}
				}
				t.Logf("echo file %s shares %d words with the issue", e, shared)
				if shared < 12 {
					t.Errorf("echo file %s shares only %d words with the issue", e, shared)
				}
			}
		case trapBlankTail:
			checkBlankTail(t, in.Patch)
		case trapSameTestName:
			all := testFuncs(langOf(rs), withTests)
			shared := false
			for _, name := range append(append([]string{}, spec.failToPass...), spec.passToPass...) {
				_, fn, _ := strings.Cut(name, "::")
				if len(testIDs(rs, fn, all)) >= 2 {
					shared = true
				}
			}
			if !shared {
				t.Error("same-test-name: no listed test name is declared in two packages")
			}
		case trapDependency:
			imported := false
			for p, data := range base {
				for _, dep := range rs.requires {
					if strings.HasSuffix(p, ".go") && bytes.Contains(data, []byte(strconv.Quote(dep))) {
						imported = true
					}
				}
			}
			if len(rs.requires) == 0 || !imported || base["go.sum"] == nil {
				t.Errorf("module-dependency: requires %v, imported %v, go.sum %d bytes", rs.requires, imported, len(base["go.sum"]))
			}
		case trapListedTests:
			if langOf(rs) != langPython {
				t.Error("listed-tests: not a Python repository")
			}
			elsewhere := false
			for _, id := range in.PassToPass {
				file, _, _ := strings.Cut(pythonTestID(id), "::")
				if !strings.Contains(in.TestPatch, "+++ b/"+file+"\n") {
					elsewhere = true
				}
			}
			if !elsewhere {
				t.Error("listed-tests: every PASS_TO_PASS id lies in a file of the test patch")
			}
		default:
			t.Errorf("unknown trap %q", trap)
		}
	}
}

// words returns the distinct lower-case words of at least four letters in s.
func words(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range regexp.MustCompile(`[A-Za-z]{4,}`).FindAllString(s, -1) {
		out[strings.ToLower(w)] = true
	}
	return out
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

func TestVarietyOfTraps(t *testing.T) {
	seen := map[string]int{}
	for _, r := range repos {
		for _, in := range r.instances {
			for _, trap := range in.traps {
				seen[trap]++
			}
		}
	}
	for _, trap := range []string{trapTemplate, trapOneChar, trapEchoTests, trapSymptom, trapNamesFunction,
		trapTwoFiles, trapLongFile, trapSharedRepo, trapBlankTail, trapSameTestName, trapDependency, trapListedTests} {
		if seen[trap] == 0 {
			t.Errorf("no instance exercises %s", trap)
		}
	}
}

// goTool is the go command the grading tests run and its environment: no network, no toolchain switch, one
// build cache shared by all instances.
var goTool = sync.OnceValues(func() (*exec.Cmd, error) {
	bin, err := exec.LookPath("go")
	if err != nil {
		return nil, err
	}
	env := append(os.Environ(), "GOTOOLCHAIN=local", "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off", "GO111MODULE=on")
	cache := os.Getenv("GOCACHE")
	if cache == "" {
		if out, err := exec.Command(bin, "env", "GOCACHE").Output(); err == nil {
			cache = strings.TrimSpace(string(out))
		}
	}
	if cache == "" || cache == "off" {
		cache = filepath.Join(testRoot, "gocache")
	}
	env = append(env, "GOCACHE="+cache)
	if os.Getenv("HOME") == "" && os.Getenv("GOPATH") == "" {
		env = append(env, "GOPATH="+filepath.Join(testRoot, "gopath"))
	}
	return &exec.Cmd{Path: bin, Env: env}, nil
})

// goTest runs the named tests in every package of dir, as the grader does, and returns each test's final action
// (pass, fail, skip), keyed by the bare name (a failure in any package wins, then a skip) and by
// "<import path>::<name>". extraEnv is added to the go tool's environment.
func goTest(t *testing.T, dir string, names []string, extraEnv ...string) map[string]string {
	t.Helper()
	tool, err := goTool()
	if err != nil {
		t.Skipf("go tool not found: %v", err)
	}
	var funcs []string
	for _, n := range names {
		if _, fn, ok := strings.Cut(n, "::"); ok {
			n = fn
		}
		funcs = append(funcs, regexp.QuoteMeta(n))
	}
	cmd := exec.Command(tool.Path, "test", "-json", "-count=1", "-vet=off", "-run", "^("+strings.Join(funcs, "|")+")$", "./...")
	cmd.Dir = dir
	cmd.Env = append(append([]string{}, tool.Env...), extraEnv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	_ = cmd.Run() // failing tests make it exit 1; the events tell the story
	out := map[string]string{}
	rank := map[string]int{"pass": 1, "skip": 2, "fail": 3}
	dec := json.NewDecoder(&stdout)
	for {
		var ev struct{ Action, Package, Test string }
		if err := dec.Decode(&ev); err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatalf("reading go test -json: %v\nstderr: %s", err, stderr.String())
			}
			break
		}
		if ev.Test != "" && !strings.Contains(ev.Test, "/") && rank[ev.Action] > 0 {
			if rank[ev.Action] > rank[out[ev.Test]] {
				out[ev.Test] = ev.Action
			}
			out[ev.Package+"::"+ev.Test] = ev.Action
		}
	}
	if len(out) == 0 {
		t.Fatalf("go test ran no test\nstdout: %.2000s\nstderr: %.2000s", stdout.String(), stderr.String())
	}
	return out
}

// goResult returns the outcome of a listed Go test name in goTest's results: a bare name as is, a qualified one
// ("./pkg::TestX", "example.com/<repo>/pkg::TestX") through its import path.
func goResult(rs repoSpec, name string, got map[string]string) string {
	pkg, fn, ok := strings.Cut(name, "::")
	if !ok {
		return got[name]
	}
	module := "example.com/" + rs.name
	switch {
	case pkg == "." || pkg == "./":
		pkg = module
	case strings.HasPrefix(pkg, "./"):
		pkg = module + "/" + strings.TrimPrefix(pkg, "./")
	}
	return got[pkg+"::"+fn]
}

// unittest runs the listed test ids in dir with python3's unittest, as the grader does for listed ids (any python3
// will do: the demo's Python tests need nothing beyond the standard library), and returns each id's outcome (pass,
// fail, skip).
func unittest(t *testing.T, dir string, ids []string) map[string]string {
	t.Helper()
	py, err := executor.FindPython("", "")
	if err != nil {
		t.Fatalf("no python3: %v", err)
	}
	cmd := exec.Command(py, append([]string{"-m", "unittest", "-v"}, ids...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1", "PYTHONPATH="+dir)
	outBytes, _ := cmd.CombinedOutput() // failing tests make it exit 1; the summary tells the story
	rep, err := testlog.Parse(testlog.ParserUnittest, bytes.NewReader(outBytes))
	if err != nil {
		t.Fatalf("reading unittest's output: %v\n%s", err, outBytes)
	}
	out := map[string]string{}
	for name, results := range rep.Tests {
		for _, r := range results {
			out[name] = string(r.Status)
		}
	}
	if len(out) == 0 {
		t.Fatalf("unittest ran no test:\n%.3000s", outBytes)
	}
	return out
}

// runListed runs an instance's FAIL_TO_PASS and PASS_TO_PASS tests in dir and returns the outcome of each listed
// name. Go repositories with requirements download them from the dataset's module proxy into an empty module cache.
func runListed(t *testing.T, res *Result, rs repoSpec, in swebench.Instance, dir string) map[string]string {
	t.Helper()
	names := append(append([]string(nil), in.FailToPass...), in.PassToPass...)
	if langOf(rs) == langPython {
		return unittest(t, dir, names)
	}
	var env []string
	if len(rs.requires) > 0 {
		env = []string{"GOPROXY=" + GoproxyURL(res.DatasetDir), "GOMODCACHE=" + t.TempDir(), "GOFLAGS=-mod=mod -modcacherw"}
	}
	got := goTest(t, dir, names, env...)
	out := map[string]string{}
	for _, n := range names {
		out[n] = goResult(rs, n, got)
	}
	return out
}

// checkout writes the tree of commit into a new folder.
func checkout(t *testing.T, repoDir, commit string) string {
	t.Helper()
	r, err := git.PlainOpen(repoDir)
	if err != nil {
		t.Fatal(err)
	}
	dest := t.TempDir()
	for p, data := range repoFiles(t, r, commit) {
		full := filepath.Join(dest, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dest
}

// TestInstancesGrade grades every instance as ctxlab will: at base_commit with the test patch the FAIL_TO_PASS
// tests fail and the PASS_TO_PASS tests pass; with the gold patch too, all pass.
func TestInstancesGrade(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go tool on every instance")
	}
	res := generated(t)
	for _, in := range res.Instances {
		in := in
		t.Run(in.InstanceID, func(t *testing.T) {
			t.Parallel()
			rs, _ := specOf(t, in.InstanceID)
			start := time.Now()
			dir := checkout(t, RepoDir(res.DatasetDir, in.Repo), in.BaseCommit)
			if _, err := diff.ApplyDir(dir, in.TestPatch); err != nil {
				t.Fatalf("test patch: %v", err)
			}
			got := runListed(t, res, rs, in, dir)
			for _, name := range in.FailToPass {
				if got[name] != "fail" {
					t.Errorf("before the fix, FAIL_TO_PASS %s: %q, want fail", name, got[name])
				}
			}
			for _, name := range in.PassToPass {
				if got[name] != "pass" {
					t.Errorf("before the fix, PASS_TO_PASS %s: %q, want pass", name, got[name])
				}
			}
			if _, err := diff.ApplyDir(dir, in.Patch); err != nil {
				t.Fatalf("gold patch: %v", err)
			}
			got = runListed(t, res, rs, in, dir)
			for _, name := range append(append([]string(nil), in.FailToPass...), in.PassToPass...) {
				if got[name] != "pass" {
					t.Errorf("with the gold patch, %s: %q, want pass", name, got[name])
				}
			}
			t.Logf("graded in %v", time.Since(start))
		})
	}
}

// checkBlankTail checks the shape that trips answer parsers which trim trailing blank lines: the patch ends with a
// hunk whose last line is a blank context line (" " and a newline), and without that line the patch is malformed.
func checkBlankTail(t *testing.T, patch string) {
	t.Helper()
	if !strings.HasSuffix(patch, "\n \n") {
		t.Fatalf("blank-context-tail: the patch does not end with a blank context line:\n%s", patch)
	}
	files, _, err := gitdiff.Parse(strings.NewReader(patch))
	if err != nil || len(files) == 0 {
		t.Fatalf("blank-context-tail: %v", err)
	}
	frags := files[len(files)-1].TextFragments
	last := frags[len(frags)-1]
	tail := last.Lines[len(last.Lines)-1]
	if tail.Op != gitdiff.OpContext || tail.Line != "\n" || last.TrailingContext != 3 {
		t.Errorf("blank-context-tail: the last hunk ends with %v %q after %d context lines", tail.Op, tail.Line, last.TrailingContext)
	}
	// The hunk stops just before more of the file: the blank line is not the file's end.
	if last.OldPosition+last.OldLines-1 <= 0 {
		t.Errorf("blank-context-tail: hunk at %d+%d", last.OldPosition, last.OldLines)
	}
	trimmed := strings.TrimRight(patch, " \n") + "\n"
	if _, _, err := gitdiff.Parse(strings.NewReader(trimmed)); err == nil {
		t.Error("blank-context-tail: the patch still parses without its trailing blank context line")
	}
}

// The gold patch of acme__dotenv-1 has the blank-context-tail shape, and the trap check notices a patch without it.
func TestBlankTailShape(t *testing.T) {
	res := generated(t)
	found := false
	for _, in := range res.Instances {
		if _, spec := specOf(t, in.InstanceID); slices.Contains(spec.traps, trapBlankTail) {
			found = true
			checkBlankTail(t, in.Patch)
		}
	}
	if !found {
		t.Fatal("no instance has the blank-context-tail trap")
	}
	for _, in := range res.Instances {
		if in.InstanceID == "acme__humanize-1" && strings.HasSuffix(in.Patch, "\n \n") {
			t.Errorf("%s ends with a blank context line too; the check would not tell the shapes apart", in.InstanceID)
		}
	}
}

// Rows name Go tests bare or package-qualified as packageQualifiedNames says; bare, a test name declared in two
// packages stays in FAIL_TO_PASS only.
func TestSameTestNameRows(t *testing.T) {
	res := generated(t)
	for _, in := range res.Instances {
		rs, spec := specOf(t, in.InstanceID)
		if !slices.Contains(spec.traps, trapSameTestName) {
			continue
		}
		qualified := 0
		for _, n := range append(append([]string{}, in.FailToPass...), in.PassToPass...) {
			if strings.Contains(n, "::") {
				qualified++
			}
		}
		if packageQualifiedNames != (qualified > 0) {
			t.Errorf("%s: %d qualified names with packageQualifiedNames %v", in.InstanceID, qualified, packageQualifiedNames)
		}
		if !packageQualifiedNames {
			for _, n := range in.FailToPass {
				if slices.Contains(in.PassToPass, n) {
					t.Errorf("%s: %s is in both lists", in.InstanceID, n)
				}
			}
			if got := len(testIDs(rs, in.FailToPass[0], testFuncs(langGo, repoFiles(t, mustOpen(t, RepoDir(res.DatasetDir, in.Repo)), in.BaseCommit)))); got < 2 {
				t.Errorf("%s: bare FAIL_TO_PASS %s is declared in %d packages, want several", in.InstanceID, in.FailToPass[0], got)
			}
		}
	}
}

func mustOpen(t *testing.T, dir string) *git.Repository {
	t.Helper()
	r, err := git.PlainOpen(dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// The dataset's module proxy serves the required modules to a cold machine: in the repository with the gold and
// test patches applied, go test ./... with GOPROXY at the proxy folder and an empty module cache downloads them
// (checking go.sum's hashes) and passes, with no network; with GOPROXY=off and an empty cache the same build fails.
func TestGoproxyServesDependencies(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go tool")
	}
	tool, err := goTool()
	if err != nil {
		t.Skipf("go tool not found: %v", err)
	}
	res := generated(t)
	ran := 0
	for _, in := range res.Instances {
		rs, _ := specOf(t, in.InstanceID)
		if len(rs.requires) == 0 {
			continue
		}
		ran++
		dir := checkout(t, RepoDir(res.DatasetDir, in.Repo), in.BaseCommit)
		for _, p := range []string{in.TestPatch, in.Patch} {
			if _, err := diff.ApplyDir(dir, p); err != nil {
				t.Fatal(err)
			}
		}
		run := func(env ...string) (string, error) {
			cmd := exec.Command(tool.Path, "test", "-count=1", "./...")
			cmd.Dir = dir
			cmd.Env = append(append(append([]string{}, tool.Env...), "GOMODCACHE="+t.TempDir()), env...)
			out, err := cmd.CombinedOutput()
			return string(out), err
		}
		if out, err := run("GOPROXY="+GoproxyURL(res.DatasetDir), "GOFLAGS=-mod=mod -modcacherw"); err != nil {
			t.Errorf("%s: go test with the dataset's proxy: %v\n%s", in.InstanceID, err, out)
		}
		if out, err := run("GOPROXY=off", "GOFLAGS=-mod=mod -modcacherw"); err == nil {
			t.Errorf("%s: go test passed with GOPROXY=off and an empty module cache:\n%s", in.InstanceID, out)
		}
		// A go.sum whose hash is wrong is refused, so the test above did check the hashes.
		sum, _ := os.ReadFile(filepath.Join(dir, "go.sum"))
		bad := regexp.MustCompile(`h1:[A-Za-z0-9+/]`).ReplaceAllString(string(sum), "h1:A")
		if err := os.WriteFile(filepath.Join(dir, "go.sum"), []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := run("GOPROXY="+GoproxyURL(res.DatasetDir), "GOFLAGS=-mod=mod -modcacherw"); err == nil || !strings.Contains(out, "checksum mismatch") {
			t.Errorf("%s: a wrong go.sum hash was not refused: %v\n%s", in.InstanceID, err, out)
		}
	}
	if ran == 0 {
		t.Fatal("no repository requires a module")
	}
}

// The module proxy folder has the file:// GOPROXY layout, and escapes capitals in module paths.
func TestGoproxyLayout(t *testing.T) {
	res := generated(t)
	for _, m := range modules {
		vdir := filepath.Join(res.DatasetDir, GoproxyDir, filepath.FromSlash(m.path), "@v")
		list, err := os.ReadFile(filepath.Join(vdir, "list"))
		if err != nil || string(list) != m.version+"\n" {
			t.Errorf("%s: list %q, %v", m.path, list, err)
		}
		for _, ext := range []string{".info", ".mod", ".zip"} {
			if _, err := os.Stat(filepath.Join(vdir, m.version+ext)); err != nil {
				t.Errorf("%s: %v", m.path, err)
			}
		}
	}
	if got := escapeModulePath("github.com/Azure/SDK"); got != "github.com/!azure/!s!d!k" {
		t.Errorf("escapeModulePath = %q", got)
	}
}

// TestLocalGraderGoldAndEmpty grades every instance with ctxlab's local executor: the gold patch resolves and an
// empty patch does not, with the grading options specs/demo.jsonnet sets (the dataset's goproxy folder, Python
// tests run by listed ids with unittest).
func TestLocalGraderGoldAndEmpty(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the tests of every instance")
	}
	res := generated(t)
	for _, in := range res.Instances {
		in := in
		t.Run(in.InstanceID, func(t *testing.T) {
			t.Parallel()
			for _, c := range []struct {
				name     string
				patch    string
				resolved bool
			}{{"gold", in.Patch, true}, {"empty", "", false}} {
				r, err := executor.Local{}.Run(context.Background(), executor.Request{
					Instance: in,
					Patch:    c.patch,
					Materialize: func(_ context.Context, dir string) error {
						src := checkout(t, RepoDir(res.DatasetDir, in.Repo), in.BaseCommit)
						return os.CopyFS(dir, os.DirFS(src))
					},
					Timeout: 5 * time.Minute,
					Config: executor.Config{GoProxy: GoproxyURL(res.DatasetDir), Tests: "listed",
						TestCmds: map[string]string{executor.LangPython: PythonTestCmd}},
				})
				if err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				// As the grade step decides: a patch that did not apply (an empty one) never resolves.
				v := testlog.Decide(in.FailToPass, in.PassToPass, r.Report)
				if resolved := r.Ran && v.Resolved; resolved != c.resolved {
					t.Errorf("%s patch: resolved %v, want %v (ran %v, %s): %+v\n%.2000s", c.name, resolved, c.resolved,
						r.Ran, r.ApplyErr, v, r.Output)
				}
			}
		})
	}
}
