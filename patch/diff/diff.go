// Package diff makes, parses and applies unified diffs.
//
// Unified writes a git-style diff of one file. Parse and ChangedFiles read patches (git's own format and plain
// "--- / +++" unified diffs) with github.com/bluekeyes/go-gitdiff. ApplyFiles applies a patch in memory and ApplyDir
// applies it to a folder on disk; both are strict as git apply is (every hunk's lines must match exactly, at their
// stated position or shifted) and all or nothing. Apply adds SWE-bench's fallbacks (the hunks git apply --reject would
// reject are recorded, then patch --fuzz style matching) and reports the outcome. All refuse any path that would
// leave the folder.
//
// Errors are classified with sentinel values for errors.Is: ErrEmpty (nothing to apply), ErrMalformed (not a patch),
// ErrEscapes (a path leaves the worktree), ErrConflict (the patch does not match the files; the error is a
// *ConflictError naming the file and hunk) and ErrUnsupported.
//
// It is infrastructure below activities (the executor, llm and the patch activity use it); it imports no other
// ctxlab package.
package diff

import (
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/bluekeyes/go-gitdiff/gitdiff"
)

// Sentinel errors; test with errors.Is.
var (
	// ErrEmpty: the patch holds nothing (empty or whitespace only).
	ErrEmpty = errors.New("empty patch")
	// ErrMalformed: the text is not a patch that can be read.
	ErrMalformed = errors.New("malformed patch")
	// ErrEscapes: a path in the patch leaves the worktree (absolute, "..", through a symlink pointing out, into .git).
	ErrEscapes = errors.New("path escapes the worktree")
	// ErrConflict: the patch does not apply to the files it names.
	ErrConflict = errors.New("patch does not apply")
	// ErrUnsupported: the patch asks for something this package does not do (submodules).
	ErrUnsupported = errors.New("unsupported patch")
)

// ConflictError says which file, and which hunk of it, did not apply. It matches ErrConflict with errors.Is and
// unwraps to the underlying cause (often a *gitdiff.ApplyError).
type ConflictError struct {
	Path string
	// Hunk is the one-based index of the hunk (in patch order) that failed; 0 when the file as a whole is at fault
	// (it is missing, already exists, ...).
	Hunk int
	// Line is the one-based line of the source file where the mismatch was found, when known.
	Line   int64
	Reason string
	Err    error
}

func (e *ConflictError) Error() string {
	var b strings.Builder
	b.WriteString(e.Path)
	if e.Hunk > 0 {
		fmt.Fprintf(&b, ": hunk #%d", e.Hunk)
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, " (line %d)", e.Line)
	}
	b.WriteString(": ")
	b.WriteString(ErrConflict.Error())
	if e.Reason != "" {
		b.WriteString(": ")
		b.WriteString(e.Reason)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Is makes errors.Is(err, ErrConflict) true.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// Unwrap returns the underlying cause.
func (e *ConflictError) Unwrap() error { return e.Err }

// PathError says which path was refused and why. It matches ErrEscapes (or ErrMalformed for an unusable name).
type PathError struct {
	Path   string
	Reason string
	Kind   error // ErrEscapes, ErrMalformed or ErrUnsupported
}

func (e *PathError) Error() string {
	return fmt.Sprintf("%q: %v: %s", e.Path, e.Kind, e.Reason)
}

// Is matches the error's kind.
func (e *PathError) Is(target error) bool { return target == e.Kind }

// Parse reads a patch. Text before the first file header (a commit message, a chat preamble) is ignored. A patch in
// plain unified format (no "diff --git" line) has the customary "a/" and "b/" prefixes removed from its names, as
// git apply does. An empty or whitespace-only patch is ErrEmpty; text holding no file header, or a broken one, is
// ErrMalformed with the reason.
func Parse(patch string) ([]*gitdiff.File, error) {
	if strings.TrimSpace(patch) == "" {
		return nil, ErrEmpty
	}
	if !strings.HasSuffix(patch, "\n") {
		// A patch cut off after its last line is common in model output; the last line is still whole.
		patch += "\n"
	}
	files, _, err := gitdiff.Parse(strings.NewReader(patch))
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrMalformed, strings.TrimPrefix(err.Error(), "gitdiff: "))
	}
	if len(files) == 0 {
		if strings.Contains(patch, "\n@@ ") || strings.HasPrefix(patch, "@@ ") {
			return nil, fmt.Errorf("%w: hunks (@@ lines) without a file header (diff --git, or --- and +++ lines)",
				ErrMalformed)
		}
		return nil, fmt.Errorf("%w: no file header found (want \"diff --git a/... b/...\" or \"--- a/...\" and "+
			"\"+++ b/...\" lines followed by @@ hunks)", ErrMalformed)
	}
	for _, f := range files {
		// A header line's CR is its line end (a patch written with CRLF), never part of a name: git apply reads
		// "+++ b/calc.go\r" as calc.go.
		f.OldName, f.NewName = strings.TrimSuffix(f.OldName, "\r"), strings.TrimSuffix(f.NewName, "\r")
	}
	if !strings.Contains(patch, "diff --git ") {
		for _, f := range files {
			f.OldName = stripPrefix(f.OldName, "a/")
			f.NewName = stripPrefix(f.NewName, "b/")
		}
	}
	for i, f := range files {
		if err := checkFileHeader(f); err != nil {
			return nil, fmt.Errorf("file %d of the patch: %w", i+1, err)
		}
	}
	return files, nil
}

func stripPrefix(name, prefix string) string {
	if rest, ok := strings.CutPrefix(name, prefix); ok && rest != "" {
		return rest
	}
	// A plain diff may use "b/" on both sides or "a/" on both sides.
	if rest, ok := strings.CutPrefix(name, "a/"); ok && rest != "" {
		return rest
	}
	if rest, ok := strings.CutPrefix(name, "b/"); ok && rest != "" {
		return rest
	}
	return name
}

// checkFileHeader rejects headers the appliers cannot act on.
func checkFileHeader(f *gitdiff.File) error {
	switch {
	case f.IsNew && f.NewName == "":
		return &PathError{Path: "", Reason: "created file has no name", Kind: ErrMalformed}
	case f.IsDelete && f.OldName == "":
		return &PathError{Path: "", Reason: "deleted file has no name", Kind: ErrMalformed}
	case !f.IsNew && !f.IsDelete && (f.OldName == "" || f.NewName == ""):
		return &PathError{Path: f.OldName + f.NewName, Reason: "file header lacks a name", Kind: ErrMalformed}
	}
	return nil
}

// targets lists the repository paths a file entry touches: the old name unless the file is created, and the new
// name when it differs (renames, copies, creations).
func targets(f *gitdiff.File) []string {
	var out []string
	if !f.IsNew {
		out = append(out, f.OldName)
	}
	if !f.IsDelete && (f.IsNew || f.NewName != f.OldName) {
		out = append(out, f.NewName)
	}
	return out
}

// ChangedFiles lists the repository paths a patch edits, sorted and without repeats: the old name of modified and
// deleted files, the new name of created files, and both names of renamed or copied files. Paths are cleaned but not
// checked for safety (the appliers do that).
func ChangedFiles(patch string) ([]string, error) {
	files, err := Parse(patch)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []string
	for _, f := range files {
		for _, p := range targets(f) {
			p = path.Clean(p)
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// cleanPath checks that a patch path stays inside the worktree by its spelling alone and returns it cleaned.
func cleanPath(p string) (string, error) {
	refuse := func(reason string) error { return &PathError{Path: p, Reason: reason, Kind: ErrEscapes} }
	switch {
	case p == "":
		return "", &PathError{Path: p, Reason: "empty path", Kind: ErrMalformed}
	case strings.ContainsRune(p, 0):
		return "", refuse("contains a NUL byte")
	case strings.HasPrefix(p, "/"):
		return "", refuse("absolute path")
	case strings.ContainsRune(p, '\\'):
		return "", refuse("contains a backslash")
	case len(p) >= 2 && p[1] == ':':
		return "", refuse("drive-letter path")
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return "", refuse("has a .. component")
		}
		if strings.EqualFold(part, ".git") {
			return "", refuse("inside a .git folder")
		}
	}
	c := path.Clean(p)
	if c == "." {
		return "", &PathError{Path: p, Reason: "names the worktree itself", Kind: ErrMalformed}
	}
	return c, nil
}

// SafePaths lists the repository paths a patch touches, like ChangedFiles, but refuses (ErrEscapes) any path that
// leaves the worktree by its spelling, so a caller may copy those paths in and out of a sandbox before applying.
func SafePaths(patch string) ([]string, error) {
	files, err := Parse(patch)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []string
	for _, f := range files {
		for _, p := range targets(f) {
			c, err := cleanPath(p)
			if err != nil {
				return nil, err
			}
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
			}
		}
	}
	sort.Strings(out)
	return out, nil
}
