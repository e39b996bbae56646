package demobench

import (
	"fmt"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// mainBranch is the only branch of every demo repository.
const mainBranch = plumbing.ReferenceName("refs/heads/main")

// buildRepo creates a non-bare git repository at dir whose history is one commit per snapshot, with fixed authors
// and dates so that the hashes are the same everywhere, checks out the last commit and returns the hashes.
func buildRepo(dir string, r repoSpec, snaps []map[string][]byte) ([]plumbing.Hash, error) {
	repo, err := git.PlainInitWithOptions(dir, &git.PlainInitOptions{
		InitOptions: git.InitOptions{DefaultBranch: mainBranch},
	})
	if err != nil {
		return nil, fmt.Errorf("init %s: %w", r.name, err)
	}
	st := repo.Storer
	blobs := map[string]plumbing.Hash{}
	var hashes []plumbing.Hash
	for i, c := range r.commits {
		tree, err := writeTree(st, snaps[i], blobs)
		if err != nil {
			return nil, fmt.Errorf("%s commit %s: %w", r.name, c.dir, err)
		}
		a := authors[c.author]
		sig := object.Signature{Name: a.name, Email: a.email, When: c.when}
		commit := &object.Commit{
			Author:    sig,
			Committer: sig,
			Message:   c.message + "\n",
			TreeHash:  tree,
		}
		if i > 0 {
			commit.ParentHashes = []plumbing.Hash{hashes[i-1]}
		}
		h, err := storeObject(st, commit)
		if err != nil {
			return nil, fmt.Errorf("%s commit %s: %w", r.name, c.dir, err)
		}
		hashes = append(hashes, h)
	}
	head := hashes[len(hashes)-1]
	if err := st.SetReference(plumbing.NewHashReference(mainBranch, head)); err != nil {
		return nil, fmt.Errorf("%s: %w", r.name, err)
	}
	if err := st.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, mainBranch)); err != nil {
		return nil, fmt.Errorf("%s: %w", r.name, err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.name, err)
	}
	if err := wt.Reset(&git.ResetOptions{Commit: head, Mode: git.HardReset}); err != nil {
		return nil, fmt.Errorf("%s: checking out %s: %w", r.name, head, err)
	}
	return hashes, nil
}

type encoder interface {
	Encode(plumbing.EncodedObject) error
}

func storeObject(st storer.EncodedObjectStorer, o encoder) (plumbing.Hash, error) {
	obj := st.NewEncodedObject()
	if err := o.Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return st.SetEncodedObject(obj)
}

func storeBlob(st storer.EncodedObjectStorer, data []byte) (plumbing.Hash, error) {
	obj := st.NewEncodedObject()
	obj.SetType(plumbing.BlobObject)
	obj.SetSize(int64(len(data)))
	w, err := obj.Writer()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if _, err := w.Write(data); err != nil {
		return plumbing.ZeroHash, err
	}
	if err := w.Close(); err != nil {
		return plumbing.ZeroHash, err
	}
	return st.SetEncodedObject(obj)
}

// writeTree stores the files (slash-separated paths) as blobs and trees and returns the root tree's hash. blobs
// caches stored contents across commits.
func writeTree(st storer.EncodedObjectStorer, files map[string][]byte, blobs map[string]plumbing.Hash) (plumbing.Hash, error) {
	type entry struct {
		name  string
		isDir bool
	}
	here := map[string]plumbing.Hash{}
	sub := map[string]map[string][]byte{}
	for p, data := range files {
		dir, rest, nested := strings.Cut(p, "/")
		if nested {
			if sub[dir] == nil {
				sub[dir] = map[string][]byte{}
			}
			sub[dir][rest] = data
			continue
		}
		h, ok := blobs[string(data)]
		if !ok {
			var err error
			if h, err = storeBlob(st, data); err != nil {
				return plumbing.ZeroHash, err
			}
			blobs[string(data)] = h
		}
		here[p] = h
	}
	var entries []entry
	for name := range here {
		entries = append(entries, entry{name, false})
	}
	subHashes := map[string]plumbing.Hash{}
	for name, children := range sub {
		if _, clash := here[name]; clash {
			return plumbing.ZeroHash, fmt.Errorf("%s is both a file and a folder", name)
		}
		h, err := writeTree(st, children, blobs)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		subHashes[name] = h
		entries = append(entries, entry{name, true})
	}
	// Git orders tree entries by name, comparing a folder's name as if it ended in "/".
	key := func(e entry) string {
		if e.isDir {
			return e.name + "/"
		}
		return e.name
	}
	sort.Slice(entries, func(i, j int) bool { return key(entries[i]) < key(entries[j]) })
	tree := &object.Tree{}
	for _, e := range entries {
		if e.isDir {
			tree.Entries = append(tree.Entries, object.TreeEntry{Name: e.name, Mode: filemode.Dir, Hash: subHashes[e.name]})
		} else {
			tree.Entries = append(tree.Entries, object.TreeEntry{Name: e.name, Mode: filemode.Regular, Hash: here[e.name]})
		}
	}
	return storeObject(st, tree)
}
