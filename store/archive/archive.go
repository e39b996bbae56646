// Package archive packs a folder of the starter's machine (a generated repository, a Go module proxy folder) into
// one tar stream whose bytes depend on the folder's content alone, so that it is stored once in the content store
// under their hash, and unpacks it on a worker's machine, refusing anything that would land outside the folder it
// unpacks into.
package archive

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Pack returns the tar of dir's folders, regular files and symbolic links, sorted by path, with no times, owners or
// permissions but a file's executable bit: equal folders pack to equal bytes on any machine. Other kinds of files
// (sockets, devices) are refused.
func Pack(dir string) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	// WalkDir visits entries in lexical order.
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		name := filepath.ToSlash(rel)
		info, err := e.Info()
		if err != nil {
			return err
		}
		switch {
		case e.IsDir():
			return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: 0o755, Format: tar.FormatPAX})
		case e.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: filepath.ToSlash(target),
				Mode: 0o777, Format: tar.FormatPAX})
		case e.Type().IsRegular():
			return packFile(tw, p, name, info)
		}
		return fmt.Errorf("archive: %s is neither a folder, a file nor a link", p)
	})
	if err != nil {
		return nil, fmt.Errorf("archive: packing %s: %w", dir, err)
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func packFile(tw *tar.Writer, p, name string, info fs.FileInfo) error {
	mode := int64(0o644)
	if info.Mode()&0o111 != 0 {
		mode = 0o755
	}
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: info.Size(),
		Format: tar.FormatPAX}); err != nil {
		return err
	}
	n, err := io.Copy(tw, f)
	if err == nil && n != info.Size() {
		err = fmt.Errorf("%s changed while it was packed", p)
	}
	return err
}

// Unpack writes the archive's entries into dir (created; it must be empty or absent). Every write goes through an
// os.Root of dir, which refuses a path that leaves it, through ".." or through a link; a link whose target is
// absolute or climbs out of dir is refused before it is made. On an error dir may hold part of the archive: callers
// unpack into a temporary folder and rename it into place.
func Unpack(data []byte, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("archive: %w", err)
		}
		if err := unpackEntry(root, tr, h); err != nil {
			return fmt.Errorf("archive: %s: %w", h.Name, err)
		}
	}
}

func unpackEntry(root *os.Root, r io.Reader, h *tar.Header) error {
	name := strings.TrimSuffix(h.Name, "/")
	if name == "" || path.IsAbs(name) || path.Clean(name) != name || strings.HasPrefix(name, "../") || name == ".." {
		return errors.New("not a relative path inside the folder")
	}
	if dir := path.Dir(name); dir != "." {
		if err := root.MkdirAll(filepath.FromSlash(dir), 0o755); err != nil {
			return err
		}
	}
	switch h.Typeflag {
	case tar.TypeDir:
		return root.MkdirAll(filepath.FromSlash(name), 0o755)
	case tar.TypeSymlink:
		target := path.Clean(path.Join(path.Dir(name), h.Linkname))
		if path.IsAbs(h.Linkname) || target == ".." || strings.HasPrefix(target, "../") {
			return fmt.Errorf("a link to %s, outside the folder", h.Linkname)
		}
		return root.Symlink(filepath.FromSlash(h.Linkname), filepath.FromSlash(name))
	case tar.TypeReg:
		mode := fs.FileMode(0o644)
		if h.Mode&0o111 != 0 {
			mode = 0o755
		}
		f, err := root.OpenFile(filepath.FromSlash(name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
		if err != nil {
			return err
		}
		_, werr := io.Copy(f, r)
		return errors.Join(werr, f.Close())
	}
	return fmt.Errorf("entry type %q is not unpacked", h.Typeflag)
}
