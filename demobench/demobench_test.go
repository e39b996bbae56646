package demobench

import (
	"bytes"
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
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"ctxlab/activities/diff"
	"ctxlab/activities/swebench"
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
	if len(rows) < 7 || len(rows) > 8 {
		t.Errorf("%d instances, want 7 or 8", len(rows))
	}
	byRepo := map[string][]swebench.Instance{}
	for _, in := range rows {
		m := idRE.FindStringSubmatch(in.InstanceID)
		if m == nil || in.Repo != "acme/"+m[1] {
			t.Errorf("instance %s of repo %s: bad id or repo", in.InstanceID, in.Repo)
		}
		byRepo[in.Repo] = append(byRepo[in.Repo], in)
	}
	if len(byRepo) < 6 {
		t.Errorf("%d repositories, want at least 6", len(byRepo))
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
	if want := "module example.com/" + rs.name + "\n\ngo 1.21\n"; string(base["go.mod"]) != want {
		t.Errorf("go.mod = %q", base["go.mod"])
	}
	pkgs := map[string]bool{}
	docs := 0
	for p := range base {
		if strings.HasSuffix(p, ".go") {
			pkgs[path.Dir(p)] = true
		}
		if strings.HasPrefix(p, "docs/") {
			docs++
		}
	}
	if len(pkgs) < 4 {
		t.Errorf("Go files in %d folders, want several packages", len(pkgs))
	}
	if docs == 0 || base["README.md"] == nil {
		t.Error("no README.md or docs/")
	}
	if base[".github/ISSUE_TEMPLATE/bug_report.md"] == nil {
		t.Error("no bug report template")
	}
	// Every .go file parses, is gofmt-clean and imports only the standard library and its own module.
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
			if strings.Contains(first, ".") && ip != "example.com/"+rs.name && !strings.HasPrefix(ip, "example.com/"+rs.name+"/") {
				t.Errorf("%s imports %s, outside the standard library", p, ip)
			}
		}
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
	// Test names are unique across the repository, before and after the test patch.
	withTests := map[string][]byte{}
	for p, d := range base {
		withTests[p] = d
	}
	for p, d := range tests {
		withTests[p] = d
	}
	for name, n := range testFuncs(withTests) {
		if n != 1 {
			t.Errorf("test %s is declared %d times", name, n)
		}
	}
	declared := testFuncs(base)
	for _, name := range in.FailToPass {
		if declared[name] != 0 || testFuncs(withTests)[name] != 1 {
			t.Errorf("FAIL_TO_PASS %s is not added by the test patch", name)
		}
	}
	if len(in.PassToPass) < 2 {
		t.Error("fewer than two PASS_TO_PASS tests")
	}
	for _, name := range in.PassToPass {
		if declared[name] != 1 {
			t.Errorf("PASS_TO_PASS %s does not exist at the base commit", name)
		}
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
	checkTraps(t, spec, in, base, gold)
}

func checkTraps(t *testing.T, spec instanceSpec, in swebench.Instance, base map[string][]byte, gold []string) {
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
		trapTwoFiles, trapLongFile, trapSharedRepo} {
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
// (pass, fail, skip).
func goTest(t *testing.T, dir string, names []string) map[string]string {
	t.Helper()
	tool, err := goTool()
	if err != nil {
		t.Skipf("go tool not found: %v", err)
	}
	cmd := exec.Command(tool.Path, "test", "-json", "-count=1", "-vet=off", "-run", "^("+strings.Join(names, "|")+")$", "./...")
	cmd.Dir = dir
	cmd.Env = tool.Env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	_ = cmd.Run() // failing tests make it exit 1; the events tell the story
	out := map[string]string{}
	dec := json.NewDecoder(&stdout)
	for {
		var ev struct{ Action, Test string }
		if err := dec.Decode(&ev); err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatalf("reading go test -json: %v\nstderr: %s", err, stderr.String())
			}
			break
		}
		if ev.Test != "" && !strings.Contains(ev.Test, "/") {
			switch ev.Action {
			case "pass", "fail", "skip":
				out[ev.Test] = ev.Action
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("go test ran no test\nstdout: %.2000s\nstderr: %.2000s", stdout.String(), stderr.String())
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
			start := time.Now()
			dir := checkout(t, RepoDir(res.DatasetDir, in.Repo), in.BaseCommit)
			if _, err := diff.ApplyDir(dir, in.TestPatch); err != nil {
				t.Fatalf("test patch: %v", err)
			}
			names := append(append([]string(nil), in.FailToPass...), in.PassToPass...)
			got := goTest(t, dir, names)
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
			got = goTest(t, dir, names)
			for _, name := range names {
				if got[name] != "pass" {
					t.Errorf("with the gold patch, %s: %q, want pass", name, got[name])
				}
			}
			t.Logf("graded in %v", time.Since(start))
		})
	}
}
