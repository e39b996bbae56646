package objects

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"ctxlab/internal/flock"
	"ctxlab/internal/regularfile"
)

// Dir is a Store in a local folder: the object of key "a/b.json" is the file Root/a/b.json, written through a
// temporary file beside it so no reader sees half of one. The run folder of a single machine is one (its memos keep
// the paths they always had), and so is a file:// store on a file system several machines mount.
type Dir struct{ Root string }

var _ Store = Dir{}

func (d Dir) String() string { return d.Root }

func (d Dir) path(key string) (string, error) {
	if err := CheckKey(key); err != nil {
		return "", err
	}
	return filepath.Join(d.Root, filepath.FromSlash(key)), nil
}

// Get reads the object's file.
func (d Dir) Get(_ context.Context, key string) ([]byte, error) {
	p, err := d.path(key)
	if err != nil {
		return nil, err
	}
	b, err := regularfile.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %s: %w", d.Root, key, ErrNotFound)
	}
	return b, err
}

// Create publishes a temporary file under the key's name with link(2), which fails when the name exists: atomic
// across every process sharing the folder, NFS's included, where a check before a rename is not. The loser reads the
// winner's file.
func (d Dir) Create(ctx context.Context, key string, data []byte, durable bool) ([]byte, error) {
	p, err := d.path(key)
	if err != nil {
		return nil, err
	}
	if b, err := regularfile.ReadFile(p); err == nil {
		return b, nil
	}
	tmp, err := writeTemp(p, data, durable)
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp)
	err = os.Link(tmp, p)
	if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EOPNOTSUPP) {
		// A file system without hard links: a rename of a name checked absent, which another writer may race.
		if b, rerr := regularfile.ReadFile(p); rerr == nil {
			return b, nil
		}
		err = os.Rename(tmp, p)
	}
	if errors.Is(err, fs.ErrExist) {
		return regularfile.ReadFile(p)
	}
	return nil, err
}

// Put replaces the object's file through a rename.
func (d Dir) Put(_ context.Context, key string, data []byte) error {
	p, err := d.path(key)
	if err != nil {
		return err
	}
	tmp, err := writeTemp(p, data, false)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, p); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// writeTemp writes data to a new temporary file beside p (making p's folder), created 0644 under the umask as
// os.WriteFile would, synced first when durable, and returns its name.
func writeTemp(p string, data []byte, durable bool) (string, error) {
	dir := filepath.Dir(p)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp := filepath.Join(dir, fmt.Sprintf(".%s.%016x.tmp", filepath.Base(p), rand.Uint64()))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return "", err
	}
	_, werr := f.Write(data)
	var serr error
	if durable && werr == nil {
		serr = f.Sync()
	}
	if err := errors.Join(werr, serr, f.Close()); err != nil {
		os.Remove(tmp)
		return "", err
	}
	return tmp, nil
}

// Delete removes the object's file.
func (d Dir) Delete(_ context.Context, key string) error {
	p, err := d.path(key)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// List walks the prefix's folder; temporary files (a leading dot) are not objects.
func (d Dir) List(_ context.Context, prefix, after string) ([]string, error) {
	folder := strings.TrimSuffix(prefix, "/")
	if err := CheckKey(folder); err != nil {
		return nil, err
	}
	var keys []string
	root := filepath.Join(d.Root, filepath.FromSlash(folder))
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil || !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") {
			return err
		}
		rel, err := filepath.Rel(d.Root, p)
		if key := filepath.ToSlash(rel); err == nil && key > after {
			keys = append(keys, key)
		}
		return err
	})
	slices.Sort(keys)
	return keys, err
}

// Lock takes a file lock on Root/key, which the kernel releases when the holder dies.
func (d Dir) Lock(ctx context.Context, key string) (func(), error) {
	p, err := d.path(key)
	if err != nil {
		return nil, err
	}
	return flock.Lock(ctx, p, 50*time.Millisecond)
}
