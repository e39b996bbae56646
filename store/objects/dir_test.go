package objects_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"ctxlab/internal/regularfile"
	"ctxlab/store/objects"
	"ctxlab/store/objects/objectstest"
)

func TestDir(t *testing.T) {
	root := t.TempDir()
	objectstest.Exercise(t, objects.Dir{Root: root})
	// Nothing is left beside the objects: temporary files are removed whoever won.
	filepath.WalkDir(root, func(p string, e os.DirEntry, err error) error {
		if err == nil && e.Type().IsRegular() && filepath.Ext(p) == ".tmp" {
			t.Errorf("temporary file left: %s", p)
		}
		return nil
	})
}

// TestDirRefusesLinks: an object's file is never read through a symbolic link (a received run folder whose memo
// links to another file of the machine would hand that file's bytes to a step, or to the model).
func TestDirRefusesLinks(t *testing.T) {
	root := t.TempDir()
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("not the run's"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "nodes"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(root, "nodes", "k.json")); err != nil {
		t.Fatal(err)
	}
	d := objects.Dir{Root: root}
	ctx := context.Background()
	if b, err := d.Get(ctx, "nodes/k.json"); !errors.Is(err, regularfile.ErrNotAFile) {
		t.Errorf("Get through a link: %q, %v", b, err)
	}
	if b, err := d.Create(ctx, "nodes/k.json", []byte("mine"), false); err == nil && string(b) == "not the run's" {
		t.Errorf("Create answered the linked file's bytes")
	}
}
