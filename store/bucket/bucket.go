package bucket

import (
	"context"
	"crypto/md5"
	"fmt"
	"net/url"
	"path"
	"path/filepath"
	"strings"

	"gocloud.dev/blob"
	_ "gocloud.dev/blob/fileblob" // file:// buckets: a folder on a shared file system
	_ "gocloud.dev/blob/s3blob"   // s3:// buckets: AWS S3 and S3-compatible stores
	"gocloud.dev/gcerrors"

	"ctxlab/store/cas"
)

// Bucket is a cas.Store in an object store (gocloud.dev/blob), so that workers on several machines share blobs. Keys
// are laid out as in cas.Dir: ab/cdef... under the bucket's prefix.
type Bucket struct {
	b    *blob.Bucket
	name string
}

var _ cas.Store = (*Bucket)(nil)

// OpenURL opens the object store at a URL: file:///shared/folder or s3://bucket?region=...&endpoint=... (the
// AWS credentials come from the environment, as for every AWS tool). prefix, when set, is a folder inside it. For
// file:// URLs the folder is created if missing, temporary files are written next to their final place (so the
// rename that publishes a blob stays on one file system) and no attribute side files are written; the URL's own
// parameters override these.
func OpenURL(ctx context.Context, rawURL, prefix string) (*Bucket, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("content store URL %q: %w", rawURL, err)
	}
	switch u.Scheme {
	case "file":
		q := u.Query()
		for k, v := range map[string]string{"create_dir": "1", "no_tmp_dir": "1", "metadata": "skip"} {
			if !q.Has(k) {
				q.Set(k, v)
			}
		}
		u.RawQuery = q.Encode()
	case "s3":
	default:
		return nil, fmt.Errorf("content store URL %q: unsupported scheme %q (want file:// or s3://)", rawURL, u.Scheme)
	}
	b, err := blob.OpenBucket(ctx, u.String())
	if err != nil {
		return nil, fmt.Errorf("content store %s: %w", redact(u), err)
	}
	name := redact(u)
	if prefix = strings.Trim(prefix, "/"); prefix != "" {
		b = blob.PrefixedBucket(b, prefix+"/")
		name += " (" + prefix + "/)"
	}
	return &Bucket{b: b, name: name}, nil
}

// redact drops a URL's query, which may hold settings that are nobody's business in an error message.
func redact(u *url.URL) string {
	c := *u
	c.RawQuery, c.User = "", nil
	return c.String()
}

func key(r cas.Ref) string {
	h := strings.TrimPrefix(string(r), "sha256:")
	return path.Join(h[:2], h[2:])
}

// Put stores data under its hash once: an existing blob is never rewritten.
func (s *Bucket) Put(ctx context.Context, data []byte) (cas.Ref, error) {
	r := cas.RefOf(data)
	k := key(r)
	ok, err := s.b.Exists(ctx, k)
	if err != nil {
		return "", fmt.Errorf("content store %s: %w", s.name, err)
	}
	if ok {
		return r, nil
	}
	sum := md5.Sum(data)
	// ContentMD5 makes the store check what arrived; both backends write a blob whole or not at all.
	err = s.b.WriteAll(ctx, k, data, &blob.WriterOptions{ContentType: "application/octet-stream", ContentMD5: sum[:]})
	if err != nil {
		return "", fmt.Errorf("content store %s: writing %s: %w", s.name, r, err)
	}
	return r, nil
}

// Get reads a blob and checks its hash.
func (s *Bucket) Get(ctx context.Context, r cas.Ref) ([]byte, error) {
	if !r.Valid() {
		return nil, fmt.Errorf("content store: malformed reference %q", r)
	}
	data, err := s.b.ReadAll(ctx, key(r))
	if gcerrors.Code(err) == gcerrors.NotFound {
		return nil, fmt.Errorf("content store %s: %s: %w", s.name, r, cas.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("content store %s: %w", s.name, err)
	}
	if cas.RefOf(data) != r {
		return nil, fmt.Errorf("content store %s: blob %s is corrupt (hash mismatch)", s.name, r)
	}
	return data, nil
}

// Has reports whether the blob is stored.
func (s *Bucket) Has(ctx context.Context, r cas.Ref) (bool, error) {
	if !r.Valid() {
		return false, fmt.Errorf("content store: malformed reference %q", r)
	}
	ok, err := s.b.Exists(ctx, key(r))
	if err != nil {
		return false, fmt.Errorf("content store %s: %w", s.name, err)
	}
	return ok, nil
}

// Close releases the bucket's connections.
func (s *Bucket) Close() error { return s.b.Close() }

// Shared reports whether a store setting is a URL (file:// or s3://): a store that workers on other machines share,
// while an empty setting or a folder is this machine's disk.
func Shared(setting string) bool { return strings.Contains(setting, "://") }

// Open returns the store a setting names: a file:// or s3:// URL opens an object store, with prefix as a folder in
// it; an empty setting (or a plain path) is a local folder, dir when empty.
func Open(ctx context.Context, setting, prefix, dir string) (cas.Store, error) {
	if setting == "" {
		return cas.NewDir(dir)
	}
	if !Shared(setting) {
		return cas.NewDir(filepath.Join(setting, prefix))
	}
	return OpenURL(ctx, setting, prefix)
}
