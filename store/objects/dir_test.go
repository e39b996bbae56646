package objects_test

import (
	"os"
	"path/filepath"
	"testing"

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
