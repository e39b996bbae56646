package jsonnet

import (
	"embed"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	gojsonnet "github.com/google/go-jsonnet"
)

//go:embed lib/*.libsonnet
var libFS embed.FS

// LibraryName is the import path that specs use for the embedded library.
const LibraryName = "ctxlab.libsonnet"

// libPrefix starts the name of every embedded file in error messages and traces, in the style of go-jsonnet's
// "<std>", so that it cannot be mistaken for a file on disk.
const libPrefix = "<ctxlab>/"

// Library returns the text of the embedded ctxlab.libsonnet, for `starter compile --lib`.
func Library() string {
	b, err := libFS.ReadFile("lib/" + LibraryName)
	if err != nil {
		return ""
	}
	return string(b)
}

var _ gojsonnet.Importer = (*importer)(nil)

// importer serves LibraryName from the embedded library and everything else from disk: relative to the importing
// file first, then from the library folders of jpath in order (go-jsonnet's FileImporter convention). The embedded
// library's own relative imports resolve inside the library. It returns the same Contents for the same file every
// time, as go-jsonnet requires.
type importer struct {
	jpath []string
	cache map[string]gojsonnet.Contents
}

func newImporter(jpath ...string) *importer {
	return &importer{jpath: jpath, cache: map[string]gojsonnet.Contents{}}
}

// SearchPath is the library folders the jsonnet tool searches, in search order, for its -J flags (in command-line
// order) and a JSONNET_PATH value: the right-most -J first, then JSONNET_PATH's folders left-most first. Empty
// entries are dropped.
func SearchPath(jflags []string, jsonnetPath string) []string {
	var dirs []string
	for i := len(jflags) - 1; i >= 0; i-- {
		if jflags[i] != "" {
			dirs = append(dirs, jflags[i])
		}
	}
	for _, d := range filepath.SplitList(jsonnetPath) {
		if d != "" {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// Import implements jsonnet.Importer.
func (im *importer) Import(importedFrom, importedPath string) (gojsonnet.Contents, string, error) {
	if importedPath == LibraryName || strings.HasPrefix(importedFrom, libPrefix) {
		name := importedPath
		if strings.HasPrefix(importedFrom, libPrefix) {
			name = path.Join(path.Dir(strings.TrimPrefix(importedFrom, libPrefix)), importedPath)
		}
		foundAt := libPrefix + name
		if c, ok := im.cache[foundAt]; ok {
			return c, foundAt, nil
		}
		b, err := libFS.ReadFile("lib/" + name)
		if err != nil {
			return gojsonnet.Contents{}, "", fmt.Errorf("couldn't open import %q: not in the ctxlab library", importedPath)
		}
		c := gojsonnet.MakeContentsRaw(b)
		im.cache[foundAt] = c
		return c, foundAt, nil
	}
	first := importedPath
	if importedFrom != "" && !filepath.IsAbs(importedPath) {
		first = filepath.Join(filepath.Dir(importedFrom), importedPath)
	}
	candidates := []string{first}
	// The spec itself (importedFrom == "") and absolute paths are never looked up in library folders, as in the
	// jsonnet tool.
	if importedFrom != "" && !filepath.IsAbs(importedPath) {
		for _, dir := range im.jpath {
			candidates = append(candidates, filepath.Join(dir, importedPath))
		}
	}
	for _, foundAt := range candidates {
		c, found, err := im.read(importedPath, foundAt)
		if err != nil {
			return gojsonnet.Contents{}, "", err
		}
		if found {
			return c, foundAt, nil
		}
	}
	if len(candidates) > 1 {
		return gojsonnet.Contents{}, "", fmt.Errorf("couldn't open import %q: no file %s, nor in the library folders %s",
			importedPath, first, strings.Join(im.jpath, ", "))
	}
	return gojsonnet.Contents{}, "", fmt.Errorf("couldn't open import %q: no file %s", importedPath, first)
}

// read returns the contents of the file at foundAt, found false when there is none (the search goes on).
func (im *importer) read(importedPath, foundAt string) (gojsonnet.Contents, bool, error) {
	if c, ok := im.cache[foundAt]; ok {
		return c, true, nil
	}
	// Only regular files: a device or a pipe could block or never end; and none larger than a spec's part can be.
	if fi, err := os.Stat(foundAt); err == nil && !fi.Mode().IsRegular() {
		return gojsonnet.Contents{}, false, fmt.Errorf("couldn't open import %q: %s is not a regular file",
			importedPath, foundAt)
	} else if err == nil && fi.Size() > MaxImportBytes {
		return gojsonnet.Contents{}, false, fmt.Errorf("couldn't open import %q: %s holds more than %d MiB",
			importedPath, foundAt, MaxImportBytes>>20)
	}
	b, err := os.ReadFile(foundAt)
	if err != nil {
		if os.IsNotExist(err) {
			return gojsonnet.Contents{}, false, nil
		}
		return gojsonnet.Contents{}, false, fmt.Errorf("couldn't open import %q: %w", importedPath, err)
	}
	c := gojsonnet.MakeContentsRaw(b)
	im.cache[foundAt] = c
	return c, true, nil
}

// isLibrary reports whether a file name from a location or trace is the embedded library or a go-jsonnet internal
// source ("<std>", "<extvar:x>"), that is, not a file the researcher wrote.
func isLibrary(name string) bool { return name == "" || strings.HasPrefix(name, "<") }
