package runfolder_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"ctxlab/activities/api"
	"ctxlab/runfolder"
)

// TestMemoFilesOfEarlierBuildsStillHit: the node memos an earlier build wrote (testdata: a checkout's and a grade's,
// written by activities' own memo type before runfolder held the format) read back with their keys, and writing
// what was read gives the very same bytes: run folders keep hitting their memos across the move.
func TestMemoFilesOfEarlierBuildsStillHit(t *testing.T) {
	for _, name := range []string{"node-memo-checkout.json", "node-memo-grade.json"} {
		old, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		var was struct {
			Key string `json:"key"`
			api.NodeOutput
		}
		if err := json.Unmarshal(old, &was); err != nil || len(was.Key) != 64 || was.Ref == "" || len(was.Row) == 0 {
			t.Fatalf("%s: %+v, %v", name, was, err)
		}
		var out api.NodeOutput
		key, ok := runfolder.ReadMemo(filepath.Join("testdata", name), &out)
		if !ok || key != was.Key || out.Ref != was.Ref || len(out.Row) != len(was.Row) {
			t.Errorf("%s: ReadMemo = %q, %+v, %v; want key %s and %+v", name, key, out, ok, was.Key, was.NodeOutput)
		}
		path := filepath.Join(t.TempDir(), "nodes", "i", name)
		if err := runfolder.WriteMemo(path, key, out); err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(path); !bytes.Equal(got, old) {
			t.Errorf("%s: WriteMemo wrote\n%s\nthe earlier build wrote\n%s", name, got, old)
		}
		if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
			t.Errorf("%s: the temporary file is left: %v", name, err)
		}
	}
}

// TestMemoOfAnEmptyOutputAndMissingMemos: an output with no fields is a memo of its key alone; a missing or
// undecodable memo is none.
func TestMemoOfAnEmptyOutputAndMissingMemos(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.json")
	if err := runfolder.WriteMemo(path, "k1", api.NodeOutput{}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != `{"key":"k1"}` {
		t.Errorf("empty output's memo %s", b)
	}
	var out api.NodeOutput
	if key, ok := runfolder.ReadMemo(path, &out); !ok || key != "k1" {
		t.Errorf("ReadMemo = %q, %v", key, ok)
	}
	if _, ok := runfolder.ReadMemo(filepath.Join(dir, "none.json"), &out); ok {
		t.Error("a missing memo read")
	}
	if err := os.WriteFile(path, []byte(`{"key":"k1","ref":`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok := runfolder.ReadMemo(path, &out); ok {
		t.Error("a torn memo read")
	}
	if err := runfolder.WriteMemo(path, "k", []string{"not an object"}); err == nil {
		t.Error("a memo of a list written")
	}
}

// TestWriteAtomicConcurrently: writers of one path at once (two workers finishing the same node) each succeed, and
// a reader only ever sees one writer's whole file, never a mix or a part: a shared temporary name let one writer
// rename another's half-written file into place.
func TestWriteAtomicConcurrently(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "memo.json")
	const writers, size = 8, 1 << 16
	errs := make(chan error, writers)
	for w := range writers {
		go func() {
			var err error
			for range 20 {
				if err = runfolder.WriteAtomic(path, bytes.Repeat([]byte{byte('a' + w)}, size)); err != nil {
					break
				}
			}
			errs <- err
		}()
	}
	for range writers {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != size || strings.Count(string(b), string(b[:1])) != size {
		t.Errorf("the file holds %d bytes, not one writer's %d", len(b), size)
	}
	// Readable as os.WriteFile would leave it (0644 under the usual umask), by a UI or report run as another user.
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := 0o644 &^ umask(); fi.Mode().Perm() != want {
		t.Errorf("mode %v, want %v", fi.Mode().Perm(), want)
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "*"))
	if len(left) != 1 {
		t.Errorf("files beside the memo: %v", left)
	}
}

// umask is the process's file mode creation mask.
func umask() os.FileMode {
	m := syscall.Umask(0)
	syscall.Umask(m)
	return os.FileMode(m)
}
