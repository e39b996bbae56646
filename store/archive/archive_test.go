package archive

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func writeTree(t *testing.T, dir string) {
	t.Helper()
	for name, content := range map[string]string{"a.txt": "a", "sub/b.go": "package b", "sub/deep/c": "c",
		".git/HEAD": "ref: refs/heads/main\n"} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "run.sh"), []byte("#!/bin/sh\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub/b.go", filepath.Join(dir, "link.go")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "empty"), 0o700); err != nil {
		t.Fatal(err)
	}
}

// TestPackIsTheContentOnly: two copies of a folder made at other times with other permissions pack to the same
// bytes, and unpack to the same files, the executable bit and the links kept.
func TestPackIsTheContentOnly(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	writeTree(t, a)
	writeTree(t, b)
	if err := os.Chmod(filepath.Join(b, "a.txt"), 0o664); err != nil {
		t.Fatal(err)
	}
	pa, err := Pack(a)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := Pack(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(pa, pb) {
		t.Fatal("equal folders packed to different bytes")
	}
	out := filepath.Join(t.TempDir(), "out")
	if err := Unpack(pa, out); err != nil {
		t.Fatal(err)
	}
	again, err := Pack(out)
	if err != nil || !bytes.Equal(again, pa) {
		t.Errorf("the unpacked folder packs to other bytes: %v", err)
	}
	if st, err := os.Stat(filepath.Join(out, "run.sh")); err != nil || st.Mode()&0o111 == 0 {
		t.Errorf("run.sh lost its executable bit: %v %v", st, err)
	}
	if target, err := os.Readlink(filepath.Join(out, "link.go")); err != nil || target != "sub/b.go" {
		t.Errorf("link: %q %v", target, err)
	}
	if st, err := os.Stat(filepath.Join(out, "empty")); err != nil || !st.IsDir() {
		t.Errorf("the empty folder is not there: %v", err)
	}
}

// TestUnpackRefusesWhatLeavesTheFolder: a hostile archive (a crafted blob in a shared store) cannot write outside
// the folder it unpacks into: not by a path that climbs, an absolute one, a link out, or a file written through a
// link.
func TestUnpackRefusesWhatLeavesTheFolder(t *testing.T) {
	for name, entries := range map[string][]tar.Header{
		"climbing path":  {{Typeflag: tar.TypeReg, Name: "../escape", Size: 1}},
		"deep climb":     {{Typeflag: tar.TypeReg, Name: "a/../../escape", Size: 1}},
		"absolute path":  {{Typeflag: tar.TypeReg, Name: "/tmp/escape", Size: 1}},
		"link out":       {{Typeflag: tar.TypeSymlink, Name: "l", Linkname: "../.."}},
		"absolute link":  {{Typeflag: tar.TypeSymlink, Name: "l", Linkname: "/etc"}},
		"write via link": {{Typeflag: tar.TypeSymlink, Name: "l", Linkname: "."}, {Typeflag: tar.TypeReg, Name: "l/../../escape", Size: 1}},
		"device":         {{Typeflag: tar.TypeChar, Name: "dev"}},
	} {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		for _, h := range entries {
			if err := tw.WriteHeader(&h); err != nil {
				t.Fatal(err)
			}
			if h.Size > 0 {
				tw.Write(bytes.Repeat([]byte("x"), int(h.Size)))
			}
		}
		tw.Close()
		parent := t.TempDir()
		if err := Unpack(buf.Bytes(), filepath.Join(parent, "a", "b")); err == nil {
			t.Errorf("%s: unpacked without an error", name)
		}
		for _, p := range []string{filepath.Join(parent, "escape"), filepath.Join(parent, "a", "escape")} {
			if _, err := os.Lstat(p); err == nil {
				t.Errorf("%s: %s was written", name, p)
			}
		}
	}
}
