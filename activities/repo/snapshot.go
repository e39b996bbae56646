package repo

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"unsafe"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"ctxlab/internal/lru"
	"ctxlab/store/cas"
)

// File modes of a manifest entry.
const (
	ModeFile    = "file"
	ModeExec    = "exec"
	ModeSymlink = "symlink"
)

// Entry is one file of a snapshot. For a symlink the blob holds the link target.
type Entry struct {
	Path string  `json:"path"`
	Mode string  `json:"mode"`
	Blob cas.Ref `json:"blob"`
	Size int64   `json:"size"`
}

// Manifest is the tree of a commit: every file (submodules excluded), sorted by path (byte order, slash-separated).
type Manifest struct {
	Commit string  `json:"commit"`
	Files  []Entry `json:"files"`
}

// ErrCommitNotFound matches (errors.Is) the error Snapshot returns for a commit the repository does not hold.
var ErrCommitNotFound = errors.New("commit not found")

// CommitNotFoundError names a commit the repository does not hold.
type CommitNotFoundError struct{ Commit string }

func (e *CommitNotFoundError) Error() string {
	return fmt.Sprintf("commit %s not found in the repository (fetch it, or check the commit id)", e.Commit)
}

// Is makes errors.Is(err, ErrCommitNotFound) true.
func (e *CommitNotFoundError) Is(target error) bool { return target == ErrCommitNotFound }

// rooted is implemented by stores that live in a local folder (cas.Dir); Snapshot keeps its commit index there.
type rooted interface{ Root() string }

// indexDir is the folder, inside a store's root, that maps commit ids to manifest references. Its name cannot clash
// with the store's two-hex-digit blob folders.
const indexDir = "snapshots"

// Snapshot stores the tree at commit: every file's bytes, then the manifest as JSON, whose reference it returns.
// commit is a full commit id (or any revision go-git resolves). Submodules are skipped. A repeated call for the same
// commit and a folder-backed store (one with a Root() method, like cas.Dir) is answered from a small index in the
// store's folder without reading the tree again; with other stores the call is idempotent.
func Snapshot(ctx context.Context, r *git.Repository, commit string, store cas.Store) (Manifest, cas.Ref, error) {
	c, err := commitOf(r, commit)
	if err != nil {
		return Manifest{}, "", err
	}
	id := c.Hash.String()

	if ref, ok := lookupIndex(ctx, store, id); ok {
		m, err := LoadManifest(ctx, store, ref)
		if err == nil && m.Commit == id {
			return m, ref, nil
		}
	}

	files, blobs, err := readTree(ctx, r, c, store)
	if err != nil {
		return Manifest{}, "", fmt.Errorf("repo: snapshot of %s: %w", id, err)
	}
	m := Manifest{Commit: id, Files: make([]Entry, len(files))}
	for i, f := range files {
		bi := blobs[f.hash]
		m.Files[i] = Entry{Path: f.path, Mode: f.mode, Blob: bi.ref, Size: bi.size}
	}
	sort.Slice(m.Files, func(i, j int) bool { return m.Files[i].Path < m.Files[j].Path })
	ref, err := cas.PutJSON(ctx, store, m)
	if err != nil {
		return Manifest{}, "", fmt.Errorf("repo: storing manifest of %s: %w", id, err)
	}
	saveIndex(store, id, ref) // best effort: a missing index only costs speed
	return m, ref, nil
}

func commitOf(r *git.Repository, commit string) (*object.Commit, error) {
	mu := repoLock(r)
	mu.Lock()
	defer mu.Unlock()
	h, err := resolveCommit(r, commit)
	if err != nil {
		return nil, err
	}
	c, err := r.CommitObject(h)
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return nil, &CommitNotFoundError{Commit: commit}
	}
	if err != nil {
		return nil, fmt.Errorf("repo: reading commit %s: %w", commit, err)
	}
	return c, nil
}

// FileAt returns a file of the tree at commit, without storing anything (ok is false when the tree has no such
// file); a commit the repository does not hold is an error matching ErrCommitNotFound.
func FileAt(r *git.Repository, commit, path string) (data []byte, ok bool, err error) {
	c, err := commitOf(r, commit)
	if err != nil {
		return nil, false, err
	}
	mu := repoLock(r)
	mu.Lock()
	defer mu.Unlock()
	f, err := c.File(path)
	if errors.Is(err, object.ErrFileNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("repo: reading %s at %s: %w", path, commit, err)
	}
	text, err := f.Contents()
	if err != nil {
		return nil, false, fmt.Errorf("repo: reading %s at %s: %w", path, commit, err)
	}
	return []byte(text), true, nil
}

func resolveCommit(r *git.Repository, commit string) (plumbing.Hash, error) {
	commit = strings.TrimSpace(commit)
	if commit == "" {
		return plumbing.ZeroHash, errors.New("repo: empty commit id")
	}
	if len(commit) == 40 {
		if _, err := hex.DecodeString(commit); err == nil {
			return plumbing.NewHash(commit), nil
		}
	}
	h, err := r.ResolveRevision(plumbing.Revision(commit))
	if err != nil {
		return plumbing.ZeroHash, &CommitNotFoundError{Commit: commit}
	}
	return *h, nil
}

// repoLocks serialises reads of one *git.Repository: go-git's storage is not safe for concurrent use, and callers
// may share the repository Open returned between activities. Striped by pointer, so nothing accumulates.
var repoLocks [64]sync.Mutex

func repoLock(r *git.Repository) *sync.Mutex {
	return &repoLocks[(uintptr(unsafe.Pointer(r))>>4)%uintptr(len(repoLocks))]
}

// readTree lists the commit's files and stores their blobs, holding the repository's lock.
func readTree(ctx context.Context, r *git.Repository, c *object.Commit, store cas.Store) ([]pending, map[plumbing.Hash]blobInfo, error) {
	mu := repoLock(r)
	mu.Lock()
	defer mu.Unlock()
	tree, err := c.Tree()
	if err != nil {
		return nil, nil, fmt.Errorf("tree: %w", err)
	}
	w := walker{ctx: ctx, r: r}
	if err := w.walk(tree, ""); err != nil {
		return nil, nil, err
	}
	blobs, err := storeBlobs(ctx, r, store, w.files)
	if err != nil {
		return nil, nil, err
	}
	return w.files, blobs, nil
}

type blobInfo struct {
	ref  cas.Ref
	size int64
}

type pending struct {
	path string
	mode string
	hash plumbing.Hash
}

type walker struct {
	ctx   context.Context
	r     *git.Repository
	files []pending
}

// walk lists the files of t (recursively) without reading them.
func (w *walker) walk(t *object.Tree, prefix string) error {
	for _, e := range t.Entries {
		if err := w.ctx.Err(); err != nil {
			return err
		}
		if e.Name == "" || e.Name == "." || e.Name == ".." || strings.ContainsAny(e.Name, "/\x00") {
			return fmt.Errorf("tree entry %q under %q has an unusable name", e.Name, prefix)
		}
		p := e.Name
		if prefix != "" {
			p = prefix + "/" + e.Name
		}
		var mode string
		switch e.Mode {
		case filemode.Dir:
			sub, err := w.r.TreeObject(e.Hash)
			if err != nil {
				return fmt.Errorf("tree %s (%s): %w", p, e.Hash, err)
			}
			if err := w.walk(sub, p); err != nil {
				return err
			}
			continue
		case filemode.Submodule:
			continue
		case filemode.Regular, filemode.Deprecated:
			mode = ModeFile
		case filemode.Executable:
			mode = ModeExec
		case filemode.Symlink:
			mode = ModeSymlink
		default:
			return fmt.Errorf("%s has unsupported mode %s", p, e.Mode)
		}
		w.files = append(w.files, pending{path: p, mode: mode, hash: e.Hash})
	}
	return nil
}

// putWorkers is how many blobs are written to the store at once. Reading from go-git stays on one goroutine
// (its storage is not meant for concurrent use); writing (a file create and fsync per new blob in cas.Dir) is what
// overlaps well.
const putWorkers = 8

// storeBlobs reads every distinct blob once and puts it in the store.
func storeBlobs(ctx context.Context, r *git.Repository, store cas.Store, files []pending) (map[plumbing.Hash]blobInfo, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	type job struct {
		hash plumbing.Hash
		path string
		data []byte
	}
	jobs := make(chan job, putWorkers*2)
	var (
		mu  sync.Mutex
		out = make(map[plumbing.Hash]blobInfo, len(files))
		wg  sync.WaitGroup
	)
	for range putWorkers {
		wg.Go(func() {
			for j := range jobs {
				ref, err := store.Put(ctx, j.data)
				if err != nil {
					cancel(fmt.Errorf("%s: %w", j.path, err))
					continue
				}
				mu.Lock()
				out[j.hash] = blobInfo{ref: ref, size: int64(len(j.data))}
				mu.Unlock()
			}
		})
	}
	seen := make(map[plumbing.Hash]bool, len(files))
	for _, f := range files {
		if ctx.Err() != nil {
			break
		}
		if seen[f.hash] {
			continue
		}
		seen[f.hash] = true
		data, err := readBlob(r, f.hash)
		if err != nil {
			cancel(fmt.Errorf("%s: %w", f.path, err))
			break
		}
		select {
		case jobs <- job{hash: f.hash, path: f.path, data: data}:
		case <-ctx.Done():
		}
	}
	close(jobs)
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	return out, nil
}

func readBlob(r *git.Repository, h plumbing.Hash) ([]byte, error) {
	b, err := r.BlobObject(h)
	if err != nil {
		return nil, fmt.Errorf("blob %s: %w", h, err)
	}
	rd, err := b.Reader()
	if err != nil {
		return nil, fmt.Errorf("blob %s: %w", h, err)
	}
	defer rd.Close()
	data := make([]byte, 0, b.Size)
	buf := bytes.NewBuffer(data)
	if _, err := buf.ReadFrom(rd); err != nil {
		return nil, fmt.Errorf("blob %s: %w", h, err)
	}
	return buf.Bytes(), nil
}

func indexPath(store cas.Store, commit string) (string, bool) {
	rs, ok := store.(rooted)
	if !ok || rs.Root() == "" {
		return "", false
	}
	return filepath.Join(rs.Root(), indexDir, commit), true
}

func lookupIndex(ctx context.Context, store cas.Store, commit string) (cas.Ref, bool) {
	p, ok := indexPath(store, commit)
	if !ok {
		return "", false
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return "", false
	}
	ref := cas.Ref(strings.TrimSpace(string(b)))
	if !ref.Valid() {
		return "", false
	}
	if has, err := store.Has(ctx, ref); err != nil || !has {
		return "", false
	}
	return ref, true
}

func saveIndex(store cas.Store, commit string, ref cas.Ref) {
	p, ok := indexPath(store, commit)
	if !ok {
		return
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".idx-*")
	if err != nil {
		return
	}
	_, werr := tmp.WriteString(string(ref) + "\n")
	cerr := tmp.Close()
	if werr != nil || cerr != nil || os.Rename(tmp.Name(), p) != nil {
		_ = os.Remove(tmp.Name())
	}
}

// LoadManifest reads a manifest stored by Snapshot.
func LoadManifest(ctx context.Context, store cas.Store, ref cas.Ref) (Manifest, error) {
	if m, ok := manifests.Get(ref); ok {
		return m, nil
	}
	var m Manifest
	if err := cas.GetJSON(ctx, store, ref, &m); err != nil {
		return Manifest{}, fmt.Errorf("repo: manifest %s: %w", ref, err)
	}
	if !sort.SliceIsSorted(m.Files, func(i, j int) bool { return m.Files[i].Path < m.Files[j].Path }) {
		sort.Slice(m.Files, func(i, j int) bool { return m.Files[i].Path < m.Files[j].Path })
	}
	cost := int64(len(m.Commit)) + manifestEntryOverhead
	for _, e := range m.Files {
		cost += int64(len(e.Path)+len(e.Blob)) + manifestEntryOverhead
	}
	manifests.Add(ref, m, cost)
	return m, nil
}

// manifests keeps the manifests this process decoded, by their content address (so an entry is never stale), for
// the steps of a snapshot that load it one after the other: a 3,010-file manifest takes a few milliseconds to
// decode, every step of every method. Callers read a manifest and never change it.
var manifests = lru.New[cas.Ref, Manifest](manifestCacheBytes)

// manifestCacheBytes bounds the decoded manifests kept (a 3,010-file snapshot's is about 0.5 MB).
const manifestCacheBytes = 32 << 20

// manifestEntryOverhead is what an Entry costs beyond its strings.
const manifestEntryOverhead = int64(unsafe.Sizeof(Entry{}))

// Lookup finds the entry for a slash-separated path.
func (m Manifest) Lookup(path string) (Entry, bool) {
	i := sort.Search(len(m.Files), func(i int) bool { return m.Files[i].Path >= path })
	if i < len(m.Files) && m.Files[i].Path == path {
		return m.Files[i], true
	}
	return Entry{}, false
}

// Read returns the bytes of a file (for a symlink: its target). A path not in the manifest is an error matching
// fs.ErrNotExist.
func (m Manifest) Read(ctx context.Context, store cas.Store, path string) ([]byte, error) {
	e, ok := m.Lookup(path)
	if !ok {
		return nil, fmt.Errorf("repo: %s is not in the snapshot of %s: %w", path, m.Commit, fs.ErrNotExist)
	}
	b, err := store.Get(ctx, e.Blob)
	if err != nil {
		return nil, fmt.Errorf("repo: reading %s at %s: %w", path, m.Commit, err)
	}
	return b, nil
}

// Paths lists every file path, sorted.
func (m Manifest) Paths() []string {
	out := make([]string, len(m.Files))
	for i, e := range m.Files {
		out[i] = e.Path
	}
	return out
}
