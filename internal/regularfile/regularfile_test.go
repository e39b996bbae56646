//go:build unix

package regularfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestOpenRefusesWhatIsNotARegularFile: a link (to a file, or dangling: O_CREATE must not create its target), a
// folder and a named pipe (without blocking on it) are refused with ErrNotAFile naming what they are; a regular
// file opens as os.OpenFile would open it.
func TestOpenRefusesWhatIsNotARegularFile(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	victim := filepath.Join(outside, "victim")
	if err := os.WriteFile(victim, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	link, dangling, fifo := filepath.Join(dir, "link"), filepath.Join(dir, "dangling"), filepath.Join(dir, "fifo")
	for _, err := range []error{os.Symlink(victim, link), os.Symlink(filepath.Join(outside, "new"), dangling),
		syscall.Mkfifo(fifo, 0o644)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	for path, what := range map[string]string{link: "a symbolic link", dangling: "a symbolic link", dir: "a folder",
		fifo: "a named pipe"} {
		done := make(chan error, 1)
		go func() {
			f, err := Open(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
			if err == nil {
				_, _ = f.WriteString("written through")
				f.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, ErrNotAFile) || !strings.Contains(err.Error(), what) {
				t.Errorf("%s: %v, want it refused as %s", path, err, what)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: Open blocked", path)
		}
		if err := CheckOrAbsent(path); !errors.Is(err, ErrNotAFile) || !strings.Contains(err.Error(), what) {
			t.Errorf("CheckOrAbsent(%s): %v, want %s", path, err, what)
		}
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Errorf("the linked file was written: %q", b)
	}
	if _, err := os.Lstat(filepath.Join(outside, "new")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the dangling link's target was created: %v", err)
	}
	if _, err := ReadFile(link); !errors.Is(err, ErrNotAFile) {
		t.Errorf("ReadFile through a link: %v", err)
	}

	plain := filepath.Join(dir, "plain")
	f, err := Open(plain, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("rows\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if b, err := ReadFile(plain); err != nil || string(b) != "rows\n" {
		t.Errorf("a regular file: %q, %v", b, err)
	}
	if err := CheckOrAbsent(plain); err != nil {
		t.Errorf("CheckOrAbsent of a regular file: %v", err)
	}
	if err := CheckOrAbsent(filepath.Join(dir, "absent")); err != nil {
		t.Errorf("CheckOrAbsent of nothing: %v", err)
	}
}
