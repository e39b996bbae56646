package testrun

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/mod/modfile"
)

// GoModule is one module of a repository.
type GoModule struct {
	// Dir is its folder, slash-separated, relative to the repository root ("." for the root).
	Dir string
	// Path is the module path its go.mod declares.
	Path string
	// Vendored: a vendor/modules.txt lies beside its go.mod, so go test builds its requirements from vendor/.
	Vendored bool
}

// GoLayout is how a repository's Go code is built: its modules (the root's and nested ones, each with its own
// go.mod, tested upstream as `cd sub && go test ./...`), which of them vendor their requirements, and whether a
// go.work at the root makes them one workspace. The local executor reads it from the repository at base_commit
// (and the modules the test patch adds), before the model patch applies, as it reads the language: a patch cannot
// change how the tests are built, by a go.mod that makes a test folder a module of its own, or a vendor/ or go.work
// that was not there (its edits to the go.mod, go.sum and go.work files that were there still count).
type GoLayout struct {
	// Modules, sorted by folder.
	Modules []GoModule
	// Workspace: a go.work at the root; every go command then runs in workspace mode, else with GOWORK=off.
	Workspace bool
}

// ReadGoLayout finds the modules under root: every go.mod that the go command would take for a module's (not in a
// vendor or testdata folder, nor in a folder whose name starts with "." or "_", which ./... skips too).
func ReadGoLayout(root string) (GoLayout, error) {
	var l GoLayout
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if rel != "." && skippedDir(d.Name()) {
			return filepath.SkipDir
		}
		b, err := readRegular(filepath.Join(p, "go.mod"))
		if err != nil {
			return nil
		}
		modPath := modfile.ModulePath(b)
		if modPath == "" {
			if rel == "." {
				return fmt.Errorf("%s names no module", filepath.Join(p, "go.mod"))
			}
			return nil // not a module the go command would build
		}
		l.Modules = append(l.Modules, GoModule{Dir: rel, Path: modPath,
			Vendored: fileExists(filepath.Join(p, "vendor", "modules.txt"))})
		return nil
	})
	if err != nil {
		return GoLayout{}, fmt.Errorf("testrun: reading the Go modules of %s: %w", root, err)
	}
	if len(l.Modules) == 0 {
		return GoLayout{}, fmt.Errorf("testrun: %s holds no go.mod", root)
	}
	slices.SortFunc(l.Modules, func(a, b GoModule) int { return strings.Compare(a.Dir, b.Dir) })
	_, err = readRegular(filepath.Join(root, "go.work"))
	l.Workspace = err == nil
	return l, nil
}

// WithModulesOf adds to l the modules of later (the layout read after the test patch) whose go.mod is one of
// paths (the test patch's files): a test patch may add a module; nothing else changes what l says.
func (l GoLayout) WithModulesOf(later GoLayout, paths []string) GoLayout {
	out := GoLayout{Modules: slices.Clone(l.Modules), Workspace: l.Workspace}
	for _, m := range later.Modules {
		if slices.Contains(paths, path.Join(m.Dir, "go.mod")) &&
			!slices.ContainsFunc(out.Modules, func(o GoModule) bool { return o.Dir == m.Dir }) {
			out.Modules = append(out.Modules, m)
		}
	}
	slices.SortFunc(out.Modules, func(a, b GoModule) int { return strings.Compare(a.Dir, b.Dir) })
	return out
}

// moduleOf is the innermost module of l holding the folder dir (slash-separated, relative to the root), nil for a
// folder outside every module.
func (l GoLayout) moduleOf(dir string) *GoModule {
	var best *GoModule
	depth := -1
	for i := range l.Modules {
		m := &l.Modules[i]
		d := -1
		switch {
		case m.Dir == ".":
			d = 0
		case dir == m.Dir || strings.HasPrefix(dir, m.Dir+"/"):
			d = len(m.Dir)
		}
		if d > depth {
			best, depth = m, d
		}
	}
	return best
}

// root is the module at the repository's root, else the first one (a repository of nested modules only).
func (l GoLayout) root() *GoModule {
	if m := l.moduleOf("."); m != nil {
		return m
	}
	return &l.Modules[0]
}

// rel is dir (slash-separated, relative to the repository root, inside m) relative to m's folder; "." for m's own.
func (m *GoModule) rel(dir string) string {
	switch {
	case dir == m.Dir:
		return "."
	case m.Dir == ".":
		return dir
	}
	return strings.TrimPrefix(dir, m.Dir+"/")
}

// skippedDir: folders the go command leaves out of ./... (and so of a module's packages).
func skippedDir(name string) bool {
	return strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "vendor"
}

// isModuleFile names the files that say what a build downloads: go.mod and go.sum of any module, go.work and
// go.work.sum of a workspace.
func isModuleFile(name string) bool {
	return name == "go.mod" || name == "go.sum" || name == "go.work" || name == "go.work.sum"
}

// moduleFilesKey is the sha256 of the module files (isModuleFile; paths slash-separated, relative to root) as they
// are now, for the download marker: any change to any of them (a go.mod a replacement names, a go.sum) downloads
// again.
func moduleFilesKey(root string, files []string) [32]byte {
	h := sha256.New()
	for _, f := range slices.Sorted(slices.Values(files)) {
		b, _ := readRegular(filepath.Join(root, filepath.FromSlash(f)))
		fmt.Fprintf(h, "%s\x00%d\x00", f, len(b))
		h.Write(b)
	}
	var key [32]byte
	h.Sum(key[:0])
	return key
}

// needsDownload says whether module m of the repository at root has anything to download: a non-empty go.sum, or a
// go.mod with requirements or replacements (an older module comes without go.sum; go test with a proxy still
// builds it, so the grader downloads what its go.mod needs before the offline build).
func needsDownload(root string, m GoModule) bool {
	dir := filepath.Join(root, filepath.FromSlash(m.Dir))
	if sum, err := readRegular(filepath.Join(dir, "go.sum")); err == nil && len(bytes.TrimSpace(sum)) > 0 {
		return true
	}
	b, err := readRegular(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	f, err := modfile.ParseLax("go.mod", b, nil)
	if err != nil {
		return true // the go command says what is wrong with it
	}
	return len(f.Require) > 0 || len(f.Replace) > 0
}

// readRegular reads a regular file, never through a symbolic link.
func readRegular(p string) ([]byte, error) {
	fi, err := os.Lstat(p)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", p)
	}
	return os.ReadFile(p)
}
