package repo

import (
	"context"

	"ctxlab/internal/lru"
	"ctxlab/store/cas"
)

// DefaultTextCacheBytes bounds a worker's TextCache: about 11 snapshots of SWE-bench's average size (23 MB of text
// for testkit/synthrepo's 3,010 files), so the issues a worker has in flight keep theirs.
const DefaultTextCacheBytes = 256 << 20

// textEntryOverhead is what an entry costs beyond its text: the key, the list element and the map slot.
const textEntryOverhead = 160

// TextCache keeps snapshot files' text by blob reference, so that the steps and agent turns a worker runs over the
// same snapshot read each file from the content store once, not once per activity. Blobs are content-addressed, so
// an entry never goes stale, whichever run's store it came from. It is safe for concurrent use; a nil *TextCache
// caches nothing.
type TextCache struct {
	c *lru.Cache[cas.Ref, string]
}

// NewTextCache returns an empty cache holding at most maxBytes of text.
func NewTextCache(maxBytes int64) *TextCache {
	return &TextCache{c: lru.New[cas.Ref, string](maxBytes)}
}

// Read returns a file's text (for a symlink: its target), as m.Read does. Errors are not cached: a path the
// manifest lacks matches fs.ErrNotExist, and a failed store read is tried again by the next call.
func (c *TextCache) Read(ctx context.Context, store cas.Store, m Manifest, path string) (string, error) {
	e, ok := m.Lookup(path)
	if ok && c != nil {
		if t, hit := c.c.Get(e.Blob); hit {
			return t, nil
		}
	}
	b, err := m.Read(ctx, store, path)
	if err != nil {
		return "", err
	}
	t := string(b)
	if c != nil {
		c.c.Add(e.Blob, t, int64(len(t))+textEntryOverhead)
	}
	return t, nil
}

// Bytes is what the cache holds (text and per-entry overhead), at most its bound.
func (c *TextCache) Bytes() int64 { return c.c.Cost() }

// Max is the cache's bound in bytes.
func (c *TextCache) Max() int64 { return c.c.Max() }

// Len is the number of files held.
func (c *TextCache) Len() int { return c.c.Len() }
