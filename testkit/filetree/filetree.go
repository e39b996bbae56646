// Package filetree writes the trees of files tests build their repositories, worktrees and modules from.
package filetree

import (
	"os"
	"path/filepath"
	"testing"
)

// Write writes every file of files (slash-separated paths relative to dir, with their contents) below dir, making
// the folders they need; a failure ends the test.
func Write[Body string | []byte](t testing.TB, dir string, files map[string]Body) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
