package e2e

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"ctxlab/testkit/fakeopenai"
)

// RepoRoot is the module root (the nearest folder above the test's package holding go.mod), where specs/ lives.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's folder")
		}
		dir = parent
	}
}

// DemoVariant writes the demo spec (specs/demo.jsonnet) with overrides (a Jsonnet object) applied to path, and
// returns path.
func DemoVariant(t testing.TB, path, overrides string) string {
	t.Helper()
	src := "(import '" + filepath.Join(RepoRoot(t), "specs", "demo.jsonnet") + "') + " + overrides + "\n"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// RequestKey names a model request by what decides its answer (task, model, seed, temperature and prompt), so two
// runs' calls can be matched.
func RequestKey(r fakeopenai.ChatRequest) string {
	return fmt.Sprintf("%s\x00%s\x00%v\x00%v\x00%s", r.Task(), r.Model, deref(r.Seed), deref(r.Temperature), r.Prompt())
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// EachFile calls visit with the path and the contents of every file under root: a search of a run folder for what
// must not be there (an API key, say). A file that cannot be read fails the test.
func EachFile(t testing.TB, root string, visit func(path string, content []byte)) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		visit(path, b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
