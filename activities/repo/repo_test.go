package repo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"ctxlab/dataset/swebench"
	"ctxlab/store/cas"
)

var sig = &object.Signature{Name: "ctxlab test", Email: "test@ctxlab.invalid", When: time.Unix(1700000000, 0)}

// historyRepo makes a work-tree repository with two commits and returns it with both commit ids.
//
//	c1: a.txt "version one", run.sh (executable), pkg/lib.go
//	c2: a.txt "version two", new.txt, link -> pkg/lib.go (symlink)
func historyRepo(t *testing.T) (dir string, r *git.Repository, c1, c2 string) {
	t.Helper()
	dir = t.TempDir()
	r, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	wt, err := r.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	write := func(p, content string, perm os.FileMode) {
		t.Helper()
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), perm); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(full, perm); err != nil {
			t.Fatal(err)
		}
	}
	commit := func(msg string) string {
		t.Helper()
		if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
			t.Fatal(err)
		}
		h, err := wt.Commit(msg, &git.CommitOptions{Author: sig, Committer: sig})
		if err != nil {
			t.Fatal(err)
		}
		return h.String()
	}
	write("a.txt", "version one\n", 0o644)
	write("run.sh", "#!/bin/sh\necho hi\n", 0o755)
	write("pkg/lib.go", "package pkg\n", 0o644)
	c1 = commit("first")
	write("a.txt", "version two\n", 0o644)
	write("new.txt", "added later\n", 0o644)
	if err := os.Symlink("pkg/lib.go", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	c2 = commit("second")
	return dir, r, c1, c2
}

func newStore(t *testing.T) *cas.Dir {
	t.Helper()
	s, err := cas.NewDir(filepath.Join(t.TempDir(), "cas"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSourceFor(t *testing.T) {
	inst := swebench.Instance{Repo: "acme/widgets"}
	got, err := SourceFor("{dataset_dir}/repos/{owner}__{name}|https://example.com/{repo}.git", inst, "/data")
	want := "/data/repos/acme__widgets|https://example.com/acme/widgets.git"
	if err != nil || got != want {
		t.Fatalf("SourceFor = %q, %v, want %q", got, err, want)
	}
}

// TestSourceForStaysInItsRoot is issue 39's seventh defect at the template: a repo of "../" parts resolved a
// template outside its folder (any git repository of the machine, snapshotted and sent to the model). A repo that is
// not owner/name is refused, and a filled template that leaves the folder its first placeholder sits in is too.
func TestSourceForStaysInItsRoot(t *testing.T) {
	for _, c := range []struct{ template, repo string }{
		{"{dataset_dir}/repos/{repo}", "../../victim"},
		{"{dataset_dir}/repos/{repo}", "acme/../../.."},
		{"{dataset_dir}/repos/{owner}__{name}", "../x"},
		{"{dataset_dir}/repos/{name}", "acme/.."},
		{"https://github.com/{repo}.git", "../../evil.example/x"},
		{"{owner}/{name}", "solo"},
	} {
		got, err := SourceFor(c.template, swebench.Instance{Repo: c.repo}, "/data")
		if err == nil || !strings.Contains(err.Error(), "owner/name") {
			t.Errorf("template %s, repo %q: %q, %v; want it refused", c.template, c.repo, got, err)
		}
	}
	for _, template := range []string{"{dataset_dir}/repos/{name}/../../../srv", "{name}/../../x", "x/{owner}/../../../y"} {
		got, err := SourceFor(template, swebench.Instance{Repo: "acme/widgets"}, "/data")
		if err == nil || !strings.Contains(err.Error(), "leaves") {
			t.Errorf("template %s: %q, %v; want it refused for leaving its folder", template, got, err)
		}
	}
	if got, err := SourceFor("{dataset_dir}/repos/{repo}", swebench.Instance{Repo: "octo-org/.github"}, "/data"); err != nil ||
		got != "/data/repos/octo-org/.github" {
		t.Errorf("a name starting with a dot: %q, %v", got, err)
	}
}

func TestSnapshotOldCommitHasOldContent(t *testing.T) {
	ctx := context.Background()
	_, r, c1, c2 := historyRepo(t)
	store := newStore(t)

	m1, ref1, err := Snapshot(ctx, r, c1, store)
	if err != nil {
		t.Fatal(err)
	}
	if m1.Commit != c1 {
		t.Fatalf("manifest commit %s, want %s", m1.Commit, c1)
	}
	if got := strings.Join(m1.Paths(), ","); got != "a.txt,pkg/lib.go,run.sh" {
		t.Fatalf("paths at c1: %s", got)
	}
	b, err := m1.Read(ctx, store, "a.txt")
	if err != nil || string(b) != "version one\n" {
		t.Fatalf("a.txt at c1 = %q, %v", b, err)
	}
	if e, _ := m1.Lookup("run.sh"); e.Mode != ModeExec || e.Size != int64(len("#!/bin/sh\necho hi\n")) {
		t.Fatalf("run.sh entry %+v", e)
	}
	if _, err := m1.Read(ctx, store, "new.txt"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("new.txt at c1: want not-exist error, got %v", err)
	}

	m2, ref2, err := Snapshot(ctx, r, c2, store)
	if err != nil {
		t.Fatal(err)
	}
	if ref1 == ref2 {
		t.Fatal("different commits gave the same manifest ref")
	}
	b, _ = m2.Read(ctx, store, "a.txt")
	if string(b) != "version two\n" {
		t.Fatalf("a.txt at c2 = %q", b)
	}
	if e, ok := m2.Lookup("link"); !ok || e.Mode != ModeSymlink {
		t.Fatalf("link entry %+v %v", e, ok)
	}
	if !sort.StringsAreSorted(m2.Paths()) {
		t.Fatalf("paths not sorted: %v", m2.Paths())
	}

	loaded, err := LoadManifest(ctx, store, ref1)
	if err != nil {
		t.Fatal(err)
	}
	if loaded.Commit != c1 || len(loaded.Files) != len(m1.Files) || loaded.Files[0] != m1.Files[0] {
		t.Fatalf("LoadManifest = %+v, want %+v", loaded, m1)
	}
	// A branch name resolves too.
	if m, _, err := Snapshot(ctx, r, "master", store); err != nil || m.Commit != c2 {
		t.Fatalf("snapshot of master: %v %v", m.Commit, err)
	}
}

func TestSnapshotUnknownCommit(t *testing.T) {
	_, r, _, _ := historyRepo(t)
	missing := strings.Repeat("ab", 20)
	_, _, err := Snapshot(context.Background(), r, missing, newStore(t))
	if err == nil {
		t.Fatal("snapshot of a missing commit succeeded")
	}
	if !errors.Is(err, ErrCommitNotFound) || !strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("error %q should match ErrCommitNotFound and name the commit", err)
	}
	_, _, err = Snapshot(context.Background(), r, "no-such-branch", newStore(t))
	if !errors.Is(err, ErrCommitNotFound) {
		t.Fatalf("unknown revision: %v", err)
	}
}

func TestMaterializeRoundTrip(t *testing.T) {
	ctx := context.Background()
	_, r, _, c2 := historyRepo(t)
	store := newStore(t)
	m, _, err := Snapshot(ctx, r, c2, store)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "wt")
	if err := Materialize(ctx, store, m, out); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{"a.txt": "version two\n", "new.txt": "added later\n", "pkg/lib.go": "package pkg\n", "link": "package pkg\n"} {
		b, err := os.ReadFile(filepath.Join(out, p))
		if err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q", p, b, err, want)
		}
	}
	fi, err := os.Stat(filepath.Join(out, "run.sh"))
	if err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("run.sh mode %v, %v", fi.Mode(), err)
	}
	fi, _ = os.Stat(filepath.Join(out, "a.txt"))
	if fi.Mode().Perm() != 0o644 {
		t.Fatalf("a.txt mode %v", fi.Mode())
	}
	if target, err := os.Readlink(filepath.Join(out, "link")); err != nil || target != "pkg/lib.go" {
		t.Fatalf("link target %q, %v", target, err)
	}
	if _, err := os.Stat(filepath.Join(out, ".git")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("materialized tree has a .git folder")
	}
	// A second materialize into the now non-empty folder is refused.
	if err := Materialize(ctx, store, m, out); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("materialize into non-empty folder: %v", err)
	}
}

func putManifest(t *testing.T, store cas.Store, files map[string]string, links map[string]string) Manifest {
	t.Helper()
	ctx := context.Background()
	m := Manifest{Commit: "handmade"}
	for p, c := range files {
		ref, err := store.Put(ctx, []byte(c))
		if err != nil {
			t.Fatal(err)
		}
		m.Files = append(m.Files, Entry{Path: p, Mode: ModeFile, Blob: ref, Size: int64(len(c))})
	}
	for p, target := range links {
		ref, err := store.Put(ctx, []byte(target))
		if err != nil {
			t.Fatal(err)
		}
		m.Files = append(m.Files, Entry{Path: p, Mode: ModeSymlink, Blob: ref, Size: int64(len(target))})
	}
	sort.Slice(m.Files, func(i, j int) bool { return m.Files[i].Path < m.Files[j].Path })
	return m
}

func TestMaterializeRefusesEscapingSymlinks(t *testing.T) {
	ctx := context.Background()
	store := newStore(t)
	files := map[string]string{"d/f.txt": "x"}
	cases := []struct {
		name  string
		links map[string]string
	}{
		{"dotdot", map[string]string{"d/evil": "../../outside"}},
		{"absolute", map[string]string{"evil": "/etc/passwd"}},
		{"through another link", map[string]string{"d/up": "..", "evil": "d/up/../x"}},
		{"loop", map[string]string{"a": "b", "b": "a"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := putManifest(t, store, files, tc.links)
			out := filepath.Join(t.TempDir(), "wt")
			err := Materialize(ctx, store, m, out)
			if err == nil || !strings.Contains(err.Error(), "refusing symlink") {
				t.Fatalf("want a refusal, got %v", err)
			}
			if ents, _ := os.ReadDir(out); len(ents) != 0 {
				t.Fatalf("refused manifest still wrote %d entries", len(ents))
			}
		})
	}
	// Links that stay inside are fine, including ones through other links and to the root itself.
	m := putManifest(t, store, files, map[string]string{"d/up": "..", "ok": "d/up/d/f.txt", "root": "."})
	out := filepath.Join(t.TempDir(), "wt")
	if err := Materialize(ctx, store, m, out); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(out, "ok")); err != nil || string(b) != "x" {
		t.Fatalf("ok link reads %q, %v", b, err)
	}
	// Unsafe paths are refused too.
	for _, p := range []string{"../x", "/abs", ".git/config", "a/../../b"} {
		m := Manifest{Files: []Entry{{Path: p, Mode: ModeFile, Blob: cas.RefOf(nil)}}}
		if err := Materialize(ctx, store, m, t.TempDir()); err == nil {
			t.Errorf("path %q accepted", p)
		}
	}
}

func TestOpenLocalAndCloneFileURL(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("go-git clones file:// URLs with git-upload-pack, which is not installed")
	}
	ctx := context.Background()
	src, _, c1, c2 := historyRepo(t)

	// A local work tree is opened in place.
	r, err := Open(ctx, src, "")
	if err != nil {
		t.Fatal(err)
	}
	if h, err := r.Head(); err != nil || h.Hash().String() != c2 {
		t.Fatalf("head of local repo: %v %v", h, err)
	}

	cache := t.TempDir()
	url := "file://" + src
	var wg sync.WaitGroup
	repos := make([]*git.Repository, 4)
	errs := make([]error, 4)
	for i := range repos {
		wg.Go(func() { repos[i], errs[i] = Open(ctx, url, cache) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
	}
	ents, _ := os.ReadDir(cache)
	var clones []string
	for _, e := range ents {
		if e.IsDir() {
			clones = append(clones, e.Name())
		}
	}
	if len(clones) != 1 || clones[0] != CacheName(url) {
		t.Fatalf("cache holds %v, want one clone %s", clones, CacheName(url))
	}
	clone := filepath.Join(cache, clones[0])
	if _, err := os.Stat(filepath.Join(clone, "HEAD")); err != nil {
		t.Fatalf("clone is not bare: %v", err)
	}
	// The old commit is in the clone and snapshots to the same content as the source.
	store := newStore(t)
	m, _, err := Snapshot(ctx, repos[0], c1, store)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := m.Read(ctx, store, "a.txt"); string(b) != "version one\n" {
		t.Fatalf("a.txt from clone = %q", b)
	}
	// A later Open reuses the clone (no new clone folder, same objects).
	marker := filepath.Join(clone, "ctxlab-marker")
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, url, cache); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatal("second Open replaced the cached clone")
	}
	if err := Fetch(ctx, repos[0]); err != nil {
		t.Fatalf("fetch when up to date: %v", err)
	}
	// A source that is neither a folder nor a reachable repository fails with its name.
	if _, err := Open(ctx, "file://"+filepath.Join(t.TempDir(), "nope"), cache); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("open of a missing source: %v", err)
	}
}

// countingStore counts Puts and keeps the folder of the store it wraps, so Snapshot's index applies.
type countingStore struct {
	*cas.Dir
	puts atomic.Int64
}

func (c *countingStore) Put(ctx context.Context, b []byte) (cas.Ref, error) {
	c.puts.Add(1)
	return c.Dir.Put(ctx, b)
}

// bigRepo writes a commit with n files (and a submodule entry) straight into the object store.
func bigRepo(t testing.TB, n int) (r *git.Repository, commit, dir string) {
	t.Helper()
	dir = t.TempDir()
	r, err := git.PlainInit(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	store := func(o interface {
		Encode(plumbing.EncodedObject) error
	}) plumbing.Hash {
		obj := r.Storer.NewEncodedObject()
		if err := o.Encode(obj); err != nil {
			t.Fatal(err)
		}
		h, err := r.Storer.SetEncodedObject(obj)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	blob := func(content string) plumbing.Hash {
		obj := r.Storer.NewEncodedObject()
		obj.SetType(plumbing.BlobObject)
		w, _ := obj.Writer()
		_, _ = w.Write([]byte(content))
		_ = w.Close()
		h, err := r.Storer.SetEncodedObject(obj)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	var dirs []object.TreeEntry
	for d := 0; d < n/100; d++ {
		var entries []object.TreeEntry
		for f := 0; f < 100; f++ {
			content := fmt.Sprintf("package p%d\n\n// file %d of dir %d\nfunc F%d() int { return %d }\n%s", d, f, d, f, f*d, strings.Repeat("// padding line\n", 40))
			entries = append(entries, object.TreeEntry{Name: fmt.Sprintf("f%03d.go", f), Mode: filemode.Regular, Hash: blob(content)})
		}
		dirs = append(dirs, object.TreeEntry{Name: fmt.Sprintf("d%03d", d), Mode: filemode.Dir, Hash: store(&object.Tree{Entries: entries})})
	}
	dirs = append(dirs, object.TreeEntry{Name: "vendored", Mode: filemode.Submodule, Hash: plumbing.NewHash(strings.Repeat("12", 20))})
	sort.Sort(object.TreeEntrySorter(dirs))
	root := store(&object.Tree{Entries: dirs})
	c := store(&object.Commit{Author: *sig, Committer: *sig, Message: "big", TreeHash: root})
	if err := r.Storer.SetReference(plumbing.NewHashReference("refs/heads/master", c)); err != nil {
		t.Fatal(err)
	}
	return r, c.String(), dir
}

func TestSnapshotLargeRepeatIsCheapAndSkipsSubmodules(t *testing.T) {
	ctx := context.Background()
	r, commit, _ := bigRepo(t, 3000)
	dir := newStore(t)
	store := &countingStore{Dir: dir}

	start := time.Now()
	m, ref, err := Snapshot(ctx, r, commit, store)
	if err != nil {
		t.Fatal(err)
	}
	first := time.Since(start)
	if len(m.Files) != 3000 {
		t.Fatalf("%d files, want 3000 (submodule skipped)", len(m.Files))
	}
	if _, ok := m.Lookup("vendored"); ok {
		t.Fatal("submodule entry in manifest")
	}
	putsFirst := store.puts.Load()

	start = time.Now()
	m2, ref2, err := Snapshot(ctx, r, commit, store)
	if err != nil {
		t.Fatal(err)
	}
	repeat := time.Since(start)
	if ref2 != ref || len(m2.Files) != len(m.Files) {
		t.Fatalf("repeat gave %s (%d files), want %s", ref2, len(m2.Files), ref)
	}
	if got := store.puts.Load() - putsFirst; got != 0 {
		t.Fatalf("repeat snapshot stored %d blobs, want 0 (index hit)", got)
	}
	t.Logf("3000-file snapshot: first %v (%d puts), repeat %v", first, putsFirst, repeat)

	// Without the index (a store with no folder) the result is the same.
	_, ref3, err := Snapshot(ctx, r, commit, plainStore{dir})
	if err != nil || ref3 != ref {
		t.Fatalf("snapshot through a folder-less store: %s, %v", ref3, err)
	}
}

// plainStore hides cas.Dir's Root method.
type plainStore struct{ s cas.Store }

func (p plainStore) Put(ctx context.Context, b []byte) (cas.Ref, error) { return p.s.Put(ctx, b) }
func (p plainStore) Get(ctx context.Context, r cas.Ref) ([]byte, error) { return p.s.Get(ctx, r) }
func (p plainStore) Has(ctx context.Context, r cas.Ref) (bool, error)   { return p.s.Has(ctx, r) }

func BenchmarkSnapshotRepeat3000(b *testing.B) {
	ctx := context.Background()
	r, commit, _ := bigRepo(b, 3000)
	store, err := cas.NewDir(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	if _, _, err := Snapshot(ctx, r, commit, store); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, _, err := Snapshot(ctx, r, commit, store); err != nil {
			b.Fatal(err)
		}
	}
}

func TestConcurrentSnapshotsShareARepository(t *testing.T) {
	ctx := context.Background()
	_, r, c1, c2 := historyRepo(t)
	store := newStore(t)
	var wg sync.WaitGroup
	refs := make([]cas.Ref, 8)
	errs := make([]error, 8)
	for i := range refs {
		commit := c1
		if i%2 == 1 {
			commit = c2
		}
		wg.Go(func() { _, refs[i], errs[i] = Snapshot(ctx, r, commit, plainStore{store}) })
	}
	wg.Wait()
	for i := range refs {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if refs[i] != refs[i%2] {
			t.Fatalf("snapshot %d gave %s, want %s", i, refs[i], refs[i%2])
		}
	}
	if refs[0] == refs[1] {
		t.Fatal("two commits, one manifest")
	}
}
