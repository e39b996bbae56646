package repo

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"testing"

	"ctxlab/store/cas"
)

// readCounter counts reads and can fail them.
type readCounter struct {
	cas.Store
	gets int
	fail bool
}

func (s *readCounter) Get(ctx context.Context, ref cas.Ref) ([]byte, error) {
	s.gets++
	if s.fail {
		return nil, errors.New("connection reset by peer")
	}
	return s.Store.Get(ctx, ref)
}

func TestTextCacheReadsAsTheStoreAndEvicts(t *testing.T) {
	ctx := context.Background()
	dir, err := cas.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var m Manifest
	for _, f := range []struct{ path, mode, text string }{
		{"a.py", ModeFile, strings.Repeat("a = 1\n", 200)},
		{"b.py", ModeFile, strings.Repeat("b = 2\n", 200)},
		{"c.py", ModeFile, strings.Repeat("c = 3\n", 200)},
		{"link", ModeSymlink, "a.py"},
	} {
		ref, err := dir.Put(ctx, []byte(f.text))
		if err != nil {
			t.Fatal(err)
		}
		m.Files = append(m.Files, Entry{Path: f.path, Mode: f.mode, Blob: ref, Size: int64(len(f.text))})
	}
	store := &readCounter{Store: dir}
	// Room for two of the three 1,200-byte files.
	c := NewTextCache(2*(1200+textEntryOverhead) + 100)
	read := func(path string) string {
		t.Helper()
		got, err := c.Read(ctx, store, m, path)
		if err != nil {
			t.Fatal(err)
		}
		want, err := m.Read(ctx, dir, path)
		if err != nil {
			t.Fatal(err)
		}
		if got != string(want) {
			t.Fatalf("%s: cached text differs from the store's", path)
		}
		return got
	}
	read("a.py")
	read("a.py")
	if store.gets != 1 {
		t.Errorf("two reads of a.py read the store %d times, want 1", store.gets)
	}
	if read("link") != "a.py" {
		t.Error("a symlink should read as its target, as Manifest.Read does")
	}
	read("b.py")
	read("c.py") // over the bound: the least recently used entries go
	if c.Bytes() > c.Max() {
		t.Errorf("cache holds %d bytes, over its bound %d", c.Bytes(), c.Max())
	}
	if c.Len() != 2 {
		t.Errorf("cache holds %d files, want the 2 that fit", c.Len())
	}
	before := store.gets
	read("c.py")
	if store.gets != before {
		t.Error("the most recent file was evicted")
	}
	read("a.py")
	if store.gets != before+1 {
		t.Errorf("a.py, evicted, read the store %d times, want once", store.gets-before)
	}

	if _, err := c.Read(ctx, store, m, "nope.py"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a path outside the manifest: %v, want fs.ErrNotExist", err)
	}
	// A failed read is not remembered: the next one reads the store again.
	store.fail = true
	if _, err := c.Read(ctx, store, m, "b.py"); err == nil {
		t.Fatal("a failing store read succeeded") // b.py was evicted by a.py
	}
	store.fail = false
	read("b.py")

	var none *TextCache // no cache: every read goes to the store
	before = store.gets
	for range 2 {
		if _, err := none.Read(ctx, store, m, "a.py"); err != nil {
			t.Fatal(err)
		}
	}
	if store.gets != before+2 {
		t.Errorf("a nil cache read the store %d times for 2 reads", store.gets-before)
	}
}
