// Package cas is ctxlab's content-addressed store: large values (file snapshots, contexts, patches, test logs) are
// written once under the hash of their bytes, and only the short reference travels through Temporal.
//
// It is infrastructure: activities, workflows and results build on it, and it imports none of them.
package cas

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/renameio/v2"
)

// Ref names a blob: "sha256:" and the hex digest of its bytes.
type Ref string

// ErrNotFound is returned for a reference the store does not hold.
var ErrNotFound = errors.New("blob not found")

// Store reads and writes blobs. Implementations verify the hash of what they read.
type Store interface {
	Put(ctx context.Context, data []byte) (Ref, error)
	Get(ctx context.Context, ref Ref) ([]byte, error)
	Has(ctx context.Context, ref Ref) (bool, error)
}

// RefOf computes the reference of data without storing it.
func RefOf(data []byte) Ref {
	sum := sha256.Sum256(data)
	return Ref("sha256:" + hex.EncodeToString(sum[:]))
}

// Valid reports whether r has the shape of a reference.
func (r Ref) Valid() bool {
	h, ok := strings.CutPrefix(string(r), "sha256:")
	if !ok || len(h) != 64 {
		return false
	}
	_, err := hex.DecodeString(h)
	return err == nil
}

func (r Ref) hex() string { return strings.TrimPrefix(string(r), "sha256:") }

// Dir is a Store in a local folder: blobs live at dir/ab/cdef..., written atomically.
type Dir struct {
	root string
}

var _ Store = (*Dir)(nil)

// NewDir opens (creating if needed) a store in root.
func NewDir(root string) (*Dir, error) {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("content store %s: %w", root, err)
	}
	return &Dir{root: root}, nil
}

// Root is the store's folder.
func (d *Dir) Root() string { return d.root }

func (d *Dir) path(r Ref) string {
	h := r.hex()
	return filepath.Join(d.root, h[:2], h[2:])
}

// Put stores data and returns its reference; storing the same bytes twice is a no-op.
func (d *Dir) Put(_ context.Context, data []byte) (Ref, error) {
	r := RefOf(data)
	p := d.path(r)
	if _, err := os.Stat(p); err == nil {
		return r, nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return "", fmt.Errorf("content store: %w", err)
	}
	if err := renameio.WriteFile(p, data, 0o600, renameio.WithTempDir(filepath.Dir(p))); err != nil {
		return "", fmt.Errorf("content store: writing %s: %w", r, err)
	}
	return r, nil
}

// Get reads a blob and checks its hash.
func (d *Dir) Get(_ context.Context, r Ref) ([]byte, error) {
	if !r.Valid() {
		return nil, fmt.Errorf("content store: malformed reference %q", r)
	}
	data, err := os.ReadFile(d.path(r))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("content store %s: %s: %w", d.root, r, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("content store: %w", err)
	}
	if RefOf(data) != r {
		return nil, fmt.Errorf("content store: blob %s is corrupt (hash mismatch)", r)
	}
	return data, nil
}

// Has reports whether the blob is stored.
func (d *Dir) Has(_ context.Context, r Ref) (bool, error) {
	if !r.Valid() {
		return false, fmt.Errorf("content store: malformed reference %q", r)
	}
	_, err := os.Stat(d.path(r))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// PutJSON stores v encoded as JSON.
func PutJSON(ctx context.Context, s Store, v any) (Ref, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("content store: encoding: %w", err)
	}
	return s.Put(ctx, b)
}

// GetJSON reads a blob into v.
func GetJSON(ctx context.Context, s Store, r Ref, v any) error {
	b, err := s.Get(ctx, r)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("content store: decoding %s: %w", r, err)
	}
	return nil
}
