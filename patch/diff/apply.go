package diff

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/bluekeyes/go-gitdiff/gitdiff"
)

// Result reports what ApplyDir changed. All paths are slash-separated and relative to the folder.
type Result struct {
	// Files lists every path written or removed, sorted.
	Files []string
	// Created and Deleted are the subsets of Files that did not exist before, or no longer exist.
	Created []string
	Deleted []string
}

// fileState is the planned content of one path while a patch is applied.
type fileState struct {
	data    []byte
	exists  bool
	perm    fs.FileMode // permission bits to give a written file; 0 keeps what is on disk
	existed bool        // whether the path existed before the patch
	touched bool
}

// source reads the current content of a path that passed cleanPath. ok is false when there is no such file.
type source func(p string) (data []byte, ok bool, err error)

// plan applies a parsed patch to an in-memory view of the files, reading each path from src the first time it is
// needed. Nothing is written; the caller turns the plan into writes only when every file applied.
//
// How hunks are matched is set by mode: strict (git apply: exact lines, at their stated position or shifted), with
// rejects (git apply --reject: hunks and files that do not match are set aside and listed), or fuzzy (patch --fuzz).
type plan struct {
	src   source
	mode  mode
	files map[string]*fileState
	order []string
	// hunks lists the hunks that did not apply exactly where the patch put them; rejected those set aside (reject
	// mode only).
	hunks    []Hunk
	rejected []Hunk
}

func newPlan(src source, m mode) *plan {
	return &plan{src: src, mode: m, files: map[string]*fileState{}}
}

func (pl *plan) get(p string) (*fileState, error) {
	if st, ok := pl.files[p]; ok {
		return st, nil
	}
	data, ok, err := pl.src(p)
	if err != nil {
		return nil, err
	}
	st := &fileState{data: data, exists: ok, existed: ok}
	pl.files[p] = st
	pl.order = append(pl.order, p)
	return st, nil
}

func (pl *plan) apply(files []*gitdiff.File) error {
	for _, f := range files {
		err := pl.applyOne(f)
		var ce *ConflictError
		if err != nil && pl.mode.reject && errors.As(err, &ce) {
			// git apply --reject sets a file that cannot be patched at all aside and goes on.
			pl.rejected = append(pl.rejected, Hunk{Path: ce.Path, Hunk: ce.Hunk, Reason: ce.Error()})
			continue
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (pl *plan) applyOne(f *gitdiff.File) error {
	if isGitlink(f.OldMode) || isGitlink(f.NewMode) {
		return &PathError{Path: f.NewName + f.OldName, Reason: "submodule changes are not supported", Kind: ErrUnsupported}
	}
	var oldPath, newPath string
	var err error
	if !f.IsNew {
		if oldPath, err = cleanPath(f.OldName); err != nil {
			return err
		}
	}
	if !f.IsDelete {
		if newPath, err = cleanPath(f.NewName); err != nil {
			return err
		}
	}
	if isSymlink(f.NewMode) || (isSymlink(f.OldMode) && !f.IsDelete) {
		return &PathError{Path: newPath, Reason: "the patch makes or edits a symbolic link", Kind: ErrEscapes}
	}

	var src []byte
	if f.IsNew {
		st, err := pl.get(newPath)
		if err != nil {
			return err
		}
		if st.exists {
			return &ConflictError{Path: newPath, Reason: "the patch creates it but it already exists"}
		}
	} else {
		st, err := pl.get(oldPath)
		if err != nil {
			return err
		}
		if !st.exists {
			return &ConflictError{Path: oldPath, Reason: "no such file"}
		}
		src = st.data
	}

	name := newPath
	if name == "" {
		name = oldPath
	}
	out, hunks, rejected, err := applyFile(name, f, src, pl.mode)
	if err != nil {
		return err
	}
	pl.hunks = append(pl.hunks, hunks...)
	pl.rejected = append(pl.rejected, rejected...)

	if f.IsDelete {
		if len(out) != 0 {
			return &ConflictError{Path: oldPath, Reason: "the patch deletes it but it has content the patch does not show"}
		}
		st := pl.files[oldPath]
		st.data, st.exists, st.touched = nil, false, true
		return nil
	}
	if !f.IsNew && !f.IsCopy && newPath != oldPath {
		st := pl.files[oldPath]
		st.data, st.exists, st.touched = nil, false, true
	}
	st, err := pl.get(newPath)
	if err != nil {
		return err
	}
	if (f.IsRename || f.IsCopy) && st.exists && newPath != oldPath {
		return &ConflictError{Path: newPath, Reason: "the patch renames or copies onto an existing file"}
	}
	if out == nil {
		out = []byte{}
	}
	st.data, st.exists, st.touched = out, true, true
	if f.NewMode != 0 {
		st.perm = f.NewMode.Perm()
	}
	return nil
}

// applyFile applies the changes of one file entry to src (the current content; nil for a created file). It returns
// the hunks that needed an offset or fuzz and, in reject mode, the hunks it set aside.
func applyFile(name string, f *gitdiff.File, src []byte, m mode) ([]byte, []Hunk, []Hunk, error) {
	if f.IsBinary && f.BinaryFragment == nil {
		return nil, nil, nil, &PathError{Path: name, Reason: "binary change without its data (make the patch with git diff --binary)", Kind: ErrUnsupported}
	}
	if f.IsBinary || f.BinaryFragment != nil {
		var out bytes.Buffer
		if err := gitdiff.Apply(&out, bytes.NewReader(src), f); err != nil {
			return nil, nil, nil, &ConflictError{Path: name, Reason: "binary patch", Err: err}
		}
		return out.Bytes(), nil, nil, nil
	}
	// Hunks are applied in file order, as git requires; index keeps their number in the patch for messages.
	index := make(map[*gitdiff.TextFragment]int, len(f.TextFragments))
	frags := make([]*gitdiff.TextFragment, len(f.TextFragments))
	for i, fr := range f.TextFragments {
		index[fr] = i + 1
		frags[i] = fr
	}
	sort.SliceStable(frags, func(i, j int) bool { return frags[i].OldPosition < frags[j].OldPosition })

	// Text hunks go through ctxlab's matcher, which follows git apply (exact lines, nearest position, anchored at
	// the start or end of the file where git anchors them) and, in fuzz mode, GNU patch.
	return applyShifted(name, frags, index, src, m)
}

func isSymlink(m fs.FileMode) bool { return m&fs.ModeType == fs.ModeSymlink || m&0o170000 == 0o120000 }
func isGitlink(m fs.FileMode) bool { return m&0o170000 == 0o160000 }

// ApplyFiles applies a patch in memory, all or nothing. read returns the current content of a repository path and
// whether it exists. The result maps every path the patch changes to its new content; a nil value means the file is
// deleted (a created empty file maps to an empty, non-nil slice). Paths that leave the worktree by their spelling
// ("..", absolute, .git) are ErrEscapes; hunks that do not match are ErrConflict.
func ApplyFiles(read func(path string) ([]byte, bool), patch string) (map[string][]byte, error) {
	files, err := Parse(patch)
	if err != nil {
		return nil, err
	}
	pl := newPlan(func(p string) ([]byte, bool, error) {
		data, ok := read(p)
		return data, ok, nil
	}, mode{})
	if err := pl.apply(files); err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for _, p := range pl.order {
		st := pl.files[p]
		if !st.touched || (!st.exists && !st.existed) {
			continue
		}
		if st.exists {
			out[p] = st.data
		} else {
			out[p] = nil
		}
	}
	return out, nil
}

// ApplyDir applies a patch to the folder dir, all or nothing: every file is checked to apply before the first is
// written, and each file is replaced atomically. It refuses (ErrEscapes) any path that is absolute, has a ".."
// component, lies in .git, or passes through a symbolic link that is absolute or resolves outside dir; patches that
// create or edit symbolic links are refused too. All file access goes through an os.Root, so nothing outside dir is
// touched even if the folder changes while the patch is applied.
func ApplyDir(dir, patch string) (Result, error) {
	files, err := Parse(patch)
	if err != nil {
		return Result{}, err
	}
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return Result{}, fmt.Errorf("worktree %s: %w", dir, err)
	}
	root, err := os.OpenRoot(realDir)
	if err != nil {
		return Result{}, fmt.Errorf("worktree %s: %w", dir, err)
	}
	defer root.Close()

	pl := newPlan(func(p string) ([]byte, bool, error) { return readInside(root, realDir, p) }, mode{})
	if err := pl.apply(files); err != nil {
		return Result{}, err
	}
	return commit(root, pl)
}

// readInside checks that p, a cleaned relative path, stays inside realDir on disk, then reads it.
func readInside(root *os.Root, realDir, p string) ([]byte, bool, error) {
	if err := checkLinks(realDir, p); err != nil {
		return nil, false, err
	}
	fi, err := root.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		// The file is new; its deepest existing folder must be reachable through the root.
		return nil, false, checkParentReachable(root, p)
	}
	if err != nil {
		return nil, false, &PathError{Path: p, Reason: err.Error(), Kind: ErrEscapes}
	}
	if !fi.Mode().IsRegular() {
		return nil, false, &ConflictError{Path: p, Reason: "not a regular file"}
	}
	data, err := root.ReadFile(p)
	if err != nil {
		return nil, false, fmt.Errorf("read %s: %w", p, err)
	}
	return data, true, nil
}

// checkLinks walks p one component at a time below realDir and refuses it if a component is a symbolic link that
// is absolute or resolves (or, if dangling, points) outside realDir.
func checkLinks(realDir, p string) error {
	cur := realDir
	parts := strings.Split(p, "/")
	for i, part := range parts {
		next := filepath.Join(cur, part)
		fi, err := os.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("inspect %s: %w", p, err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			sub := strings.Join(parts[:i+1], "/")
			target, err := os.Readlink(next)
			if err != nil {
				return fmt.Errorf("inspect %s: %w", sub, err)
			}
			if filepath.IsAbs(target) {
				return &PathError{Path: p, Reason: fmt.Sprintf("%s is a symbolic link to an absolute path", sub), Kind: ErrEscapes}
			}
			resolved, err := filepath.EvalSymlinks(next)
			if err != nil {
				// Dangling: judge by where it points.
				resolved = filepath.Join(filepath.Dir(next), target)
			}
			if !within(realDir, resolved) {
				return &PathError{Path: p, Reason: fmt.Sprintf("%s is a symbolic link that leads outside the worktree", sub), Kind: ErrEscapes}
			}
			if i == len(parts)-1 {
				return &ConflictError{Path: p, Reason: "it is a symbolic link, not a regular file"}
			}
			next = resolved
		} else if i < len(parts)-1 && !fi.IsDir() {
			return &ConflictError{Path: p, Reason: strings.Join(parts[:i+1], "/") + " is a file, not a folder"}
		}
		cur = next
	}
	return nil
}

func within(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	if err != nil {
		return false
	}
	return rel == "." || (rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel))
}

// checkParentReachable stats the deepest existing ancestor of p through the root, so that a later MkdirAll or write
// cannot fail for a reason the plan could have seen.
func checkParentReachable(root *os.Root, p string) error {
	for d := path.Dir(p); d != "."; d = path.Dir(d) {
		fi, err := root.Stat(d)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return &PathError{Path: p, Reason: err.Error(), Kind: ErrEscapes}
		}
		if !fi.IsDir() {
			return &ConflictError{Path: p, Reason: d + " is a file, not a folder"}
		}
		return nil
	}
	return nil
}

// commit writes a plan that applied completely: removals first, then each new content via a temporary file renamed
// over the old one.
func commit(root *os.Root, pl *plan) (Result, error) {
	var res Result
	var writes []string
	for _, p := range pl.order {
		st := pl.files[p]
		if !st.touched || (!st.exists && !st.existed) {
			continue
		}
		res.Files = append(res.Files, p)
		switch {
		case !st.exists:
			res.Deleted = append(res.Deleted, p)
			if err := root.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return res, fmt.Errorf("delete %s: %w", p, err)
			}
			removeEmptyParents(root, p)
		default:
			if !st.existed {
				res.Created = append(res.Created, p)
			}
			writes = append(writes, p)
		}
	}
	for _, p := range writes {
		if err := writeFile(root, p, pl.files[p]); err != nil {
			return res, err
		}
	}
	sort.Strings(res.Files)
	sort.Strings(res.Created)
	sort.Strings(res.Deleted)
	return res, nil
}

func writeFile(root *os.Root, p string, st *fileState) error {
	perm := st.perm
	if perm == 0 {
		perm = 0o644
		if st.existed {
			if fi, err := root.Stat(p); err == nil {
				perm = fi.Mode().Perm()
			}
		}
	}
	if d := path.Dir(p); d != "." {
		if err := root.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("create folder for %s: %w", p, err)
		}
	}
	tmp := path.Join(path.Dir(p), "."+path.Base(p)+".ctxlab-apply")
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	_, werr := io.Copy(f, bytes.NewReader(st.data))
	cerr := f.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = root.Chmod(tmp, perm)
	}
	if werr == nil {
		werr = root.Rename(tmp, p)
	}
	if werr != nil {
		_ = root.Remove(tmp)
		return fmt.Errorf("write %s: %w", p, werr)
	}
	return nil
}

func removeEmptyParents(root *os.Root, p string) {
	for d := path.Dir(p); d != "."; d = path.Dir(d) {
		if root.Remove(d) != nil {
			return
		}
	}
}
