package diff

import (
	"bytes"
	"ctxlab/testkit/filetree"
	"errors"
	"fmt"
	"io/fs"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

type change struct {
	name     string
	path     string
	old, new []byte // nil = absent
}

func lines(n int, f func(i int) string) []byte {
	var b strings.Builder
	for i := 0; i < n; i++ {
		b.WriteString(f(i))
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

var base = lines(40, func(i int) string { return fmt.Sprintf("line %d", i+1) })

func edited(src []byte, edit func(ls []string) []string) []byte {
	ls := strings.Split(strings.TrimSuffix(string(src), "\n"), "\n")
	ls = edit(append([]string(nil), ls...))
	return []byte(strings.Join(ls, "\n") + "\n")
}

func roundTripCases() []change {
	return []change{
		{"modify one line", "pkg/a.go", base, edited(base, func(ls []string) []string { ls[10] = "changed"; return ls })},
		{"two hunks", "pkg/b.go", base, edited(base, func(ls []string) []string {
			ls[1] = "first"
			ls[35] = "second"
			return ls
		})},
		{"nearby changes merge", "b2.go", base, edited(base, func(ls []string) []string {
			ls[10] = "x"
			ls[16] = "y"
			return ls
		})},
		{"insert at start and end", "c.txt", base, edited(base, func(ls []string) []string {
			return append(append([]string{"head"}, ls...), "tail")
		})},
		{"delete a block", "d.txt", base, edited(base, func(ls []string) []string { return append(ls[:5], ls[20:]...) })},
		{"create", "new/dir/file.go", nil, []byte("package x\n\nfunc X() {}\n")},
		{"create empty", "empty.txt", nil, []byte{}},
		{"delete", "gone.go", base, nil},
		{"delete empty", "gone-empty.txt", []byte{}, nil},
		{"old lacks final newline", "e.txt", []byte("a\nb\nc"), []byte("a\nb\nc\n")},
		{"new lacks final newline", "f.txt", []byte("a\nb\nc\n"), []byte("a\nb\nc")},
		{"both lack final newline", "g.txt", []byte("a\nb\nc"), []byte("a\nB\nc")},
		{"create without final newline", "h.txt", nil, []byte("one\ntwo")},
		{"delete without final newline", "i.txt", []byte("one\ntwo"), nil},
		{"empty to content", "j.txt", []byte{}, []byte("now\n")},
		{"content to empty", "k.txt", []byte("was\n"), []byte{}},
		{"path with space", "dir x/my file.txt", []byte("a\n"), []byte("b\n")},
	}
}

func TestUnifiedRoundTripApplyFiles(t *testing.T) {
	for _, c := range roundTripCases() {
		t.Run(c.name, func(t *testing.T) {
			patch := Unified(c.path, c.old, c.new)
			if patch == "" {
				t.Fatal("empty diff for different contents")
			}
			got, err := ApplyFiles(func(p string) ([]byte, bool) {
				if p == c.path && c.old != nil {
					return c.old, true
				}
				return nil, false
			}, patch)
			if err != nil {
				t.Fatalf("apply: %v\n%s", err, patch)
			}
			v, ok := got[c.path]
			if !ok || len(got) != 1 {
				t.Fatalf("result %v lacks exactly %s", keys(got), c.path)
			}
			if (v == nil) != (c.new == nil) || !bytes.Equal(v, c.new) {
				t.Fatalf("got %q, want %q\n%s", v, c.new, patch)
			}
		})
	}
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestUnifiedEqualIsEmpty(t *testing.T) {
	if d := Unified("a", []byte("x\n"), []byte("x\n")); d != "" {
		t.Fatalf("equal contents gave %q", d)
	}
	if d := Unified("a", nil, nil); d != "" {
		t.Fatalf("nil/nil gave %q", d)
	}
}

func TestUnifiedExactText(t *testing.T) {
	old := []byte("a\nb\nc\nd\ne\nf\ng\nh\n")
	new := []byte("a\nb\nc\nD\ne\nf\ng\nh\ni")
	want := "diff --git a/x.txt b/x.txt\n--- a/x.txt\n+++ b/x.txt\n" +
		"@@ -1,8 +1,9 @@\n a\n b\n c\n-d\n+D\n e\n f\n g\n h\n+i\n\\ No newline at end of file\n"
	if got := Unified("x.txt", old, new); got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
	want = "diff --git a/n.go b/n.go\nnew file mode 100644\n--- /dev/null\n+++ b/n.go\n@@ -0,0 +1,2 @@\n+p\n+q\n"
	if got := Unified("n.go", nil, []byte("p\nq\n")); got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
	want = "diff --git a/n.go b/n.go\ndeleted file mode 100644\n--- a/n.go\n+++ /dev/null\n@@ -1 +0,0 @@\n-p\n"
	if got := Unified("n.go", []byte("p\n"), nil); got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
}

// TestUnifiedMinimal checks that the line diff is a shortest one on cases with a known distance.
func TestUnifiedMinimal(t *testing.T) {
	a := []string{"a", "b", "c", "a", "b", "b", "a"}
	b := []string{"c", "b", "a", "b", "a", "c"}
	script := lineScript(a, b)
	d := 0
	for _, e := range script {
		if e.kind != opEqual {
			d++
		}
	}
	if d != 5 { // the example of Myers' paper: D = 5
		t.Fatalf("edit distance %d, want 5", d)
	}
}

func TestUnifiedRandomRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	vocab := []string{"a\n", "b\n", "c\n", "}\n", "\n", "return nil\n", "x := 1\n"}
	gen := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = vocab[rng.Intn(len(vocab))]
		}
		return out
	}
	olds, news := map[string][]byte{}, map[string][]byte{}
	var all strings.Builder
	for iter := 0; iter < 300; iter++ {
		a := gen(rng.Intn(60))
		b := append([]string(nil), a...)
		for k := rng.Intn(8); k > 0; k-- {
			switch i := rng.Intn(len(b) + 1); rng.Intn(3) {
			case 0:
				b = append(b[:i], append([]string{vocab[rng.Intn(len(vocab))]}, b[i:]...)...)
			case 1:
				if i < len(b) {
					b = append(b[:i], b[i+1:]...)
				}
			case 2:
				if i < len(b) {
					b[i] = vocab[rng.Intn(len(vocab))]
				}
			}
		}
		old, new := []byte(strings.Join(a, "")), []byte(strings.Join(b, ""))
		if rng.Intn(4) == 0 && len(new) > 0 {
			new = new[:len(new)-1] // drop the final newline
		}
		patch := Unified("r.txt", old, new)
		if bytes.Equal(old, new) {
			if patch != "" {
				t.Fatalf("iteration %d: diff of equal texts", iter)
			}
			continue
		}
		got, err := ApplyFiles(func(string) ([]byte, bool) { return old, true }, patch)
		if err != nil {
			t.Fatalf("iteration %d: %v\n%s", iter, err, patch)
		}
		if !bytes.Equal(got["r.txt"], new) {
			t.Fatalf("iteration %d: got %q want %q\n%s", iter, got["r.txt"], new, patch)
		}
		if iter%5 == 0 {
			name := fmt.Sprintf("r%03d.txt", iter)
			olds[name], news[name] = old, new
			all.WriteString(Unified(name, old, new))
		}
	}
	// git apply agrees on a sample of them, applied as one patch.
	git := requireGit(t)
	dir := t.TempDir()
	filetree.Write(t, dir, olds)
	pf := filepath.Join(t.TempDir(), "p.diff")
	if err := os.WriteFile(pf, []byte(all.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(git, "apply", pf)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git apply: %v\n%s", err, out)
	}
	for name, want := range news {
		if got, err := os.ReadFile(filepath.Join(dir, name)); err != nil || !bytes.Equal(got, want) {
			t.Errorf("git apply %s: got %q, want %q", name, got, want)
		}
	}
}

func requireGit(t *testing.T) string {
	t.Helper()
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git binary not installed")
	}
	return git
}

// TestGitApplyAcceptsUnified feeds every round-trip case, as one combined patch, to the real git apply and to
// ApplyDir, and checks both produce the expected tree.
func TestGitApplyAcceptsUnified(t *testing.T) {
	git := requireGit(t)
	cases := roundTripCases()
	start := map[string][]byte{}
	var patch strings.Builder
	for _, c := range cases {
		if c.old != nil {
			start[c.path] = c.old
		}
		patch.WriteString(Unified(c.path, c.old, c.new))
	}
	check := func(t *testing.T, dir string) {
		for _, c := range cases {
			data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(c.path)))
			if c.new == nil {
				if !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("%s: still exists (err %v)", c.path, err)
				}
				continue
			}
			if err != nil || !bytes.Equal(data, c.new) {
				t.Errorf("%s: got %q (err %v), want %q", c.path, data, err, c.new)
			}
		}
	}
	t.Run("git", func(t *testing.T) {
		dir := t.TempDir()
		filetree.Write(t, dir, start)
		pf := filepath.Join(t.TempDir(), "p.diff")
		if err := os.WriteFile(pf, []byte(patch.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(git, "apply", "--verbose", pf)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CEILING_DIRECTORIES="+filepath.Dir(dir))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git apply: %v\n%s\n%s", err, out, patch.String())
		}
		check(t, dir)
	})
	t.Run("ApplyDir", func(t *testing.T) {
		dir := t.TempDir()
		filetree.Write(t, dir, start)
		res, err := ApplyDir(dir, patch.String())
		if err != nil {
			t.Fatal(err)
		}
		check(t, dir)
		if len(res.Files) != len(cases) {
			t.Errorf("result lists %d files, want %d: %v", len(res.Files), len(cases), res.Files)
		}
		wantCreated := []string{"empty.txt", "h.txt", "new/dir/file.go"}
		wantDeleted := []string{"gone-empty.txt", "gone.go", "i.txt"}
		if !reflect.DeepEqual(res.Created, wantCreated) || !reflect.DeepEqual(res.Deleted, wantDeleted) {
			t.Errorf("created %v deleted %v, want %v %v", res.Created, res.Deleted, wantCreated, wantDeleted)
		}
	})
}

// TestGitDiffOutputApplies checks the other direction: a patch written by git diff parses and applies.
func TestGitDiffOutputApplies(t *testing.T) {
	git := requireGit(t)
	dir := t.TempDir()
	run := func(args ...string) string {
		cmd := exec.Command(git, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
			"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	run("init", "-q")
	filetree.Write(t, dir, map[string][]byte{"a.txt": base, "b.txt": []byte("keep\n")})
	run("add", ".")
	run("commit", "-q", "-m", "base")
	newA := edited(base, func(ls []string) []string { ls[3] = "four"; ls[30] = "thirty-one"; return ls })
	filetree.Write(t, dir, map[string][]byte{"a.txt": newA, "c.txt": []byte("new")})
	if err := os.Remove(filepath.Join(dir, "b.txt")); err != nil {
		t.Fatal(err)
	}
	run("add", "-A")
	patch := run("diff", "--cached")
	run("reset", "-q", "--hard")

	files, err := ChangedFiles(patch)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a.txt", "b.txt", "c.txt"}; !reflect.DeepEqual(files, want) {
		t.Fatalf("changed %v, want %v", files, want)
	}
	if _, err := ApplyDir(dir, patch); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "a.txt")); !bytes.Equal(got, newA) {
		t.Errorf("a.txt = %q", got)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "c.txt")); string(got) != "new" {
		t.Errorf("c.txt = %q", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "b.txt")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("b.txt not deleted: %v", err)
	}
}

func TestChangedFiles(t *testing.T) {
	patch := Unified("z/mod.go", []byte("a\n"), []byte("b\n")) +
		Unified("a/created.go", nil, []byte("x\n")) +
		Unified("m/deleted.go", []byte("x\n"), nil) +
		Unified("z/mod.go", []byte("b\n"), []byte("c\n")) +
		"diff --git a/old/name.go b/new/name.go\nsimilarity index 100%\nrename from old/name.go\nrename to new/name.go\n"
	got, err := ChangedFiles(patch)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a/created.go", "m/deleted.go", "new/name.go", "old/name.go", "z/mod.go"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestPlainUnifiedPatch(t *testing.T) {
	// No "diff --git" line, as models and GNU diff write them.
	patch := "Here is the fix:\n\n--- a/pkg/x.go\n+++ b/pkg/x.go\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n"
	got, err := ChangedFiles(patch)
	if err != nil || !reflect.DeepEqual(got, []string{"pkg/x.go"}) {
		t.Fatalf("changed %v, %v", got, err)
	}
	out, err := ApplyFiles(func(p string) ([]byte, bool) {
		if p == "pkg/x.go" {
			return []byte("one\ntwo\nthree\n"), true
		}
		return nil, false
	}, patch)
	if err != nil {
		t.Fatal(err)
	}
	if string(out["pkg/x.go"]) != "one\nTWO\nthree\n" {
		t.Fatalf("got %q", out["pkg/x.go"])
	}
}

func TestEmptyPatch(t *testing.T) {
	for _, p := range []string{"", "  \n\t\n"} {
		if _, err := Parse(p); !errors.Is(err, ErrEmpty) {
			t.Errorf("Parse(%q) = %v, want ErrEmpty", p, err)
		}
		if _, err := ChangedFiles(p); !errors.Is(err, ErrEmpty) {
			t.Errorf("ChangedFiles(%q) = %v, want ErrEmpty", p, err)
		}
		if _, err := ApplyFiles(func(string) ([]byte, bool) { return nil, false }, p); !errors.Is(err, ErrEmpty) {
			t.Errorf("ApplyFiles(%q) = %v, want ErrEmpty", p, err)
		}
		if _, err := ApplyDir(t.TempDir(), p); !errors.Is(err, ErrEmpty) {
			t.Errorf("ApplyDir(%q) = %v, want ErrEmpty", p, err)
		}
	}
}

func TestMalformedPatch(t *testing.T) {
	cases := map[string]string{
		"prose":             "I changed the loop so it stops early.\n",
		"hunk without file": "@@ -1,2 +1,2 @@\n a\n-b\n+c\n",
		"miscounted hunk":   "--- a/x\n+++ b/x\n@@ -1,5 +1,5 @@\n a\n-b\n+c\n",
		"bad hunk header":   "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -one +two @@\n-a\n+b\n",
	}
	want := map[string]string{
		"prose":             "no file header",
		"hunk without file": "without file header",
		"miscounted hunk":   "miscounts lines",
		"bad hunk header":   "fragment header",
	}
	for name, p := range cases {
		_, err := Parse(p)
		if !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err %v, want ErrMalformed", name, err)
			continue
		}
		if !strings.Contains(err.Error(), want[name]) {
			t.Errorf("%s: error %q does not say %q", name, err, want[name])
		}
		if errors.Is(err, ErrEmpty) || errors.Is(err, ErrConflict) || errors.Is(err, ErrEscapes) {
			t.Errorf("%s: error %v matches another class", name, err)
		}
	}
}

// snapshot records every file below dir with its content, to prove a refused patch changed nothing.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out[rel] = "link:" + target
		case d.IsDir():
			out[rel] = "dir"
		default:
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = string(data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestApplyDirRefusesEscapes(t *testing.T) {
	// Layout: top/outside.txt and top/secret/ lie outside the worktree top/wt.
	top := t.TempDir()
	wt := filepath.Join(top, "wt")
	filetree.Write(t, top, map[string][]byte{
		"outside.txt":    []byte("outside\n"),
		"secret/key":     []byte("key\n"),
		"wt/ok.txt":      []byte("ok\n"),
		"wt/inside/f.go": []byte("package inside\n"),
	})
	if err := os.Symlink(filepath.Join(top, "secret"), filepath.Join(wt, "abs-link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../secret", filepath.Join(wt, "rel-link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../nowhere", filepath.Join(wt, "dangling")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("inside", filepath.Join(wt, "good-link")); err != nil {
		t.Fatal(err)
	}
	okEdit := Unified("ok.txt", []byte("ok\n"), []byte("changed\n"))
	abs := filepath.ToSlash(filepath.Join(top, "outside.txt"))
	bad := map[string]string{
		"dotdot":           Unified("../outside.txt", []byte("outside\n"), []byte("pwned\n")),
		"dotdot create":    Unified("inside/../../new.txt", nil, []byte("pwned\n")),
		"absolute":         "--- /dev/null\n+++ /etc/x\n@@ -0,0 +1 @@\n+pwned\n",
		"absolute outside": "--- " + abs + "\n+++ " + abs + "\n@@ -1 +1 @@\n-outside\n+pwned\n",
		"abs symlink":      Unified("abs-link/key", []byte("key\n"), []byte("pwned\n")),
		"rel symlink":      Unified("rel-link/key", []byte("key\n"), []byte("pwned\n")),
		"symlink create":   Unified("rel-link/new", nil, []byte("pwned\n")),
		"dangling symlink": Unified("dangling/new", nil, []byte("pwned\n")),
		"git folder":       Unified(".git/hooks/pre-commit", nil, []byte("#!/bin/sh\n")),
		"plain dotdot":     "--- a/../outside.txt\n+++ b/../outside.txt\n@@ -1 +1 @@\n-outside\n+pwned\n",
		"new link mode":    "diff --git a/l b/l\nnew file mode 120000\n--- /dev/null\n+++ b/l\n@@ -0,0 +1 @@\n+/etc/passwd\n\\ No newline at end of file\n",
	}
	before := snapshot(t, top)
	for name, p := range bad {
		// The good edit comes first, so a half-applied patch would show.
		res, err := ApplyDir(wt, okEdit+p)
		if !errors.Is(err, ErrEscapes) {
			t.Errorf("%s: err = %v, want ErrEscapes", name, err)
		}
		if errors.Is(err, ErrConflict) {
			t.Errorf("%s: escape also reported as a conflict: %v", name, err)
		}
		if len(res.Files) != 0 {
			t.Errorf("%s: result lists %v", name, res.Files)
		}
		if strings.Contains(name, "symlink") {
			continue // only the folder on disk has symlinks
		}
		if _, err := ApplyFiles(func(string) ([]byte, bool) { return []byte("outside\n"), true }, p); !errors.Is(err, ErrEscapes) {
			t.Errorf("%s: ApplyFiles err = %v, want ErrEscapes", name, err)
		}
	}
	if after := snapshot(t, top); !reflect.DeepEqual(before, after) {
		t.Fatalf("files changed:\nbefore %v\nafter  %v", before, after)
	}
	// A symlink that stays inside is fine.
	res, err := ApplyDir(wt, Unified("good-link/f.go", []byte("package inside\n"), []byte("package inside // ok\n")))
	if err != nil {
		t.Fatalf("inside symlink: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(wt, "inside", "f.go")); string(got) != "package inside // ok\n" {
		t.Fatalf("inside/f.go = %q (result %v)", got, res)
	}
}

func TestApplyDirConflictChangesNothing(t *testing.T) {
	dir := t.TempDir()
	filetree.Write(t, dir, map[string][]byte{"a.txt": base, "b.txt": base})
	wrongB := edited(base, func(ls []string) []string { ls[20] = "not what b has"; return ls })
	patch := Unified("a.txt", base, edited(base, func(ls []string) []string { ls[0] = "A"; return ls })) +
		Unified("new.txt", nil, []byte("new\n")) +
		Unified("b.txt", wrongB, edited(wrongB, func(ls []string) []string {
			ls[0] = "B0"
			ls[20] = "B20"
			return ls
		}))
	before := snapshot(t, dir)
	_, err := ApplyDir(dir, patch)
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("err = %v, want ErrConflict", err)
	}
	var ce *ConflictError
	if !errors.As(err, &ce) {
		t.Fatalf("err %T is not a *ConflictError", err)
	}
	if ce.Path != "b.txt" || ce.Hunk != 2 {
		t.Errorf("conflict at %s hunk %d, want b.txt hunk 2 (%v)", ce.Path, ce.Hunk, err)
	}
	if errors.Is(err, ErrEscapes) || errors.Is(err, ErrMalformed) {
		t.Errorf("conflict matches another class: %v", err)
	}
	if after := snapshot(t, dir); !reflect.DeepEqual(before, after) {
		t.Fatalf("a failed apply changed files:\nbefore %v\nafter  %v", before, after)
	}
}

func TestApplyFileLevelConflicts(t *testing.T) {
	dir := t.TempDir()
	filetree.Write(t, dir, map[string][]byte{"exists.txt": []byte("x\n"), "long.txt": []byte("a\nb\n")})
	cases := map[string]string{
		"create existing":   Unified("exists.txt", nil, []byte("y\n")),
		"modify missing":    Unified("missing.txt", []byte("x\n"), []byte("y\n")),
		"delete with extra": Unified("long.txt", []byte("a\n"), nil),
	}
	for name, p := range cases {
		_, err := ApplyDir(dir, p)
		var ce *ConflictError
		if !errors.As(err, &ce) || !errors.Is(err, ErrConflict) {
			t.Errorf("%s: err = %v, want a ConflictError", name, err)
		}
	}
}

func TestApplySequentialEditsOfOneFile(t *testing.T) {
	v1 := []byte("a\nb\nc\n")
	v2 := []byte("a\nB\nc\n")
	v3 := []byte("a\nB\nC\n")
	patch := Unified("f", v1, v2) + Unified("f", v2, v3)
	out, err := ApplyFiles(func(string) ([]byte, bool) { return v1, true }, patch)
	if err != nil || !bytes.Equal(out["f"], v3) {
		t.Fatalf("got %q, %v", out["f"], err)
	}
}

func TestApplyDirKeepsMode(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "run.sh")
	if err := os.WriteFile(p, []byte("echo a\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := ApplyDir(dir, Unified("run.sh", []byte("echo a\n"), []byte("echo b\n"))); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o755 {
		t.Fatalf("mode %v, want 0755", fi.Mode())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("stray files left: %v", entries)
	}
}

func TestBinaryPatches(t *testing.T) {
	// A binary change without data, as plain git diff writes it, cannot be applied.
	patch := "diff --git a/logo.png b/logo.png\nindex 1111111..2222222 100644\nBinary files a/logo.png and b/logo.png differ\n"
	_, err := ApplyFiles(func(string) ([]byte, bool) { return []byte{0x89, 'P', 'N', 'G'}, true }, patch)
	if !errors.Is(err, ErrUnsupported) {
		t.Fatalf("err = %v, want ErrUnsupported", err)
	}
	// git diff --binary output applies.
	git := requireGit(t)
	dir := t.TempDir()
	run := func(args ...string) string {
		cmd := exec.Command(git, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
			"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	run("init", "-q")
	old := []byte{0, 1, 2, 3, 0xff, 0xfe, 0}
	filetree.Write(t, dir, map[string][]byte{"blob.bin": old})
	run("add", ".")
	run("commit", "-q", "-m", "base")
	new := []byte{0, 1, 2, 4, 0xff, 0xfe, 0, 9}
	filetree.Write(t, dir, map[string][]byte{"blob.bin": new})
	patch = run("diff", "--binary")
	out, err := ApplyFiles(func(string) ([]byte, bool) { return old, true }, patch)
	if err != nil || !bytes.Equal(out["blob.bin"], new) {
		t.Fatalf("binary apply: %q, %v", out["blob.bin"], err)
	}
}

// TestUnifiedIsShortest checks on random edits that the diff changes no more lines than it must: its - and + lines
// number len(a) + len(b) - 2 LCS(a, b), from a dynamic program independent of the writer.
func TestUnifiedIsShortest(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	vocab := []string{"a\n", "b\n", "c\n", "}\n", "\n", "return nil\n"}
	gen := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = vocab[rng.Intn(len(vocab))]
		}
		return out
	}
	for iter := 0; iter < 500; iter++ {
		a, b := gen(rng.Intn(40)), gen(rng.Intn(40))
		if rng.Intn(2) == 0 && len(a) > 0 { // a small edit of a, as well as unrelated texts
			b = append(append(append([]string(nil), a[:len(a)/2]...), gen(rng.Intn(4))...), a[len(a)/2:]...)
		}
		lcs := make([][]int, len(a)+1)
		for i := range lcs {
			lcs[i] = make([]int, len(b)+1)
		}
		for i := len(a) - 1; i >= 0; i-- {
			for j := len(b) - 1; j >= 0; j-- {
				if a[i] == b[j] {
					lcs[i][j] = lcs[i+1][j+1] + 1
				} else {
					lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
				}
			}
		}
		patch := Unified("r.txt", []byte(strings.Join(a, "")), []byte(strings.Join(b, "")))
		changed := 0
		for _, line := range strings.Split(patch, "\n") {
			if (strings.HasPrefix(line, "-") && !strings.HasPrefix(line, "--- ")) ||
				(strings.HasPrefix(line, "+") && !strings.HasPrefix(line, "+++ ")) {
				changed++
			}
		}
		if want := len(a) + len(b) - 2*lcs[0][0]; changed != want {
			t.Fatalf("iteration %d: %d changed lines, the shortest diff has %d\n%s", iter, changed, want, patch)
		}
	}
}
