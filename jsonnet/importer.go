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

// Library returns the text of the embedded ctxlab.libsonnet, for `starter compile --lib` and documentation.
func Library() string {
	b, err := libFS.ReadFile("lib/" + LibraryName)
	if err != nil {
		return ""
	}
	return string(b)
}

var _ gojsonnet.Importer = (*importer)(nil)

// importer serves LibraryName from the embedded library and everything else from disk, relative to the importing
// file. The embedded library's own relative imports resolve inside the library. It returns the same Contents for
// the same file every time, as go-jsonnet requires.
type importer struct {
	cache map[string]gojsonnet.Contents
}

func newImporter() *importer { return &importer{cache: map[string]gojsonnet.Contents{}} }

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
	foundAt := importedPath
	if importedFrom != "" && !filepath.IsAbs(importedPath) {
		foundAt = filepath.Join(filepath.Dir(importedFrom), importedPath)
	}
	if c, ok := im.cache[foundAt]; ok {
		return c, foundAt, nil
	}
	// Only regular files: a device or a pipe could block or never end.
	if fi, err := os.Stat(foundAt); err == nil && !fi.Mode().IsRegular() {
		return gojsonnet.Contents{}, "", fmt.Errorf("couldn't open import %q: %s is not a regular file", importedPath,
			foundAt)
	}
	b, err := os.ReadFile(foundAt)
	if err != nil {
		if os.IsNotExist(err) {
			return gojsonnet.Contents{}, "", fmt.Errorf("couldn't open import %q: no file %s", importedPath, foundAt)
		}
		return gojsonnet.Contents{}, "", fmt.Errorf("couldn't open import %q: %w", importedPath, err)
	}
	c := gojsonnet.MakeContentsRaw(b)
	im.cache[foundAt] = c
	return c, foundAt, nil
}

// isLibrary reports whether a file name from a location or trace is the embedded library or a go-jsonnet internal
// source ("<std>", "<extvar:x>"), that is, not a file the researcher wrote.
func isLibrary(name string) bool { return name == "" || strings.HasPrefix(name, "<") }
