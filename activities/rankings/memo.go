package rankings

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"unsafe"

	"github.com/rs/zerolog"
	"golang.org/x/sync/singleflight"

	"ctxlab/activities/chunk"
	"ctxlab/internal/lru"
	"ctxlab/store/cas"
	"ctxlab/store/objects"
)

// Memo shares chunked snapshots and rankings. Within a process, steps asking for the same chunks or ranking at once
// wait for one computation; chunked snapshots stay in memory within a bound on their size, the least recently used
// out first. Rankings are stored in the folder each call names (a run's rankings folder, which every worker of the
// run shares), under their key's digest, each computed under a lock file of that digest, so that workers in other
// processes wait for it rather than compute it again. It is safe for concurrent use.
type Memo struct {
	chunks *lru.Cache[chunksKey, *Chunked] // nil: chunked snapshots are not kept
	flight singleflight.Group
	log    zerolog.Logger
	stats  struct{ chunkings, builds, stored, shared atomic.Int64 }
}

// chunksKey is what a chunked snapshot depends on: the snapshot and the unit. Package chunk's code is the same for
// the life of the process, so it needs no version here.
type chunksKey struct {
	snapshot cas.Ref
	unit     chunk.Unit
	window   int
}

// NewMemo returns a memo keeping chunked snapshots (their chunks' bounds, without the text) of at most maxBytes;
// none when maxBytes < 1, and then each chunked snapshot holds its text.
// Failures to store a ranking (the ranking is still returned) are logged to log.
func NewMemo(maxBytes int64, log zerolog.Logger) *Memo {
	m := &Memo{log: log}
	if maxBytes > 0 {
		m.chunks = lru.New[chunksKey, *Chunked](maxBytes)
	}
	return m
}

// Stats counts a memo's work since it was made.
type Stats struct {
	// Chunkings is how many times a snapshot was cut into a unit; Builds how many BM25 indexes were built (one per
	// ranking computed); Stored how many rankings were read from a rankings folder instead; Shared how many Rank
	// calls took the ranking another call of this process was building or reading at the time.
	Chunkings, Builds, Stored, Shared int64
}

// Stats returns the memo's counts.
func (m *Memo) Stats() Stats {
	return Stats{Chunkings: m.stats.chunkings.Load(), Builds: m.stats.builds.Load(), Stored: m.stats.stored.Load(),
		Shared: m.stats.shared.Load()}
}

// Chunks returns the snapshot cut into the unit (window: the window unit's size and other units' fallback's),
// cutting it only when the memo does not hold it. The memo holds chunks without their text, which Chunks reads
// again through the snapshot's reader (the worker's text cache), so that a snapshot's text is held once however
// many units it is cut into.
func (m *Memo) Chunks(ctx context.Context, s Snapshot, unit chunk.Unit, window int) (*Chunked, error) {
	if window < 1 {
		window = chunk.DefaultWindow
	}
	key := chunksKey{snapshot: s.Ref, unit: unit, window: window}
	if m.chunks != nil {
		if c, ok := m.chunks.Get(key); ok {
			return withText(ctx, s, c)
		}
	}
	v, _, err := m.once(ctx, "chunks\x00"+string(s.Ref)+"\x00"+string(unit)+"\x00"+strconv.Itoa(window), func() (any, error) {
		if m.chunks != nil {
			if c, ok := m.chunks.Get(key); ok {
				return c, nil
			}
		}
		c, err := chunkSnapshot(ctx, s, unit, window, m.chunks != nil)
		if err != nil {
			return nil, err
		}
		m.stats.chunkings.Add(1)
		if m.chunks != nil {
			m.chunks.Add(key, c, c.cost())
		}
		return c, nil
	})
	if err != nil {
		return nil, err
	}
	if m.chunks == nil {
		return v.(*Chunked), nil
	}
	return withText(ctx, s, v.(*Chunked))
}

// Per-entry overheads of a chunked snapshot: a chunk's struct, a file's map entry.
const (
	chunkOverhead = int64(unsafe.Sizeof(chunk.Chunk{}))
	spanOverhead  = int64(unsafe.Sizeof(span{}))
	fileOverhead  = 64
)

// cost is what a chunked snapshot kept bare holds in memory: its chunks and the texts it keeps (none, when package
// chunk cuts whole lines).
func (c *Chunked) cost() int64 {
	n := int64(len(c.Chunks))*(chunkOverhead+spanOverhead) + int64(len(c.FileLines))*2*fileOverhead
	for _, ch := range c.Chunks {
		n += int64(len(ch.Text))
	}
	return n
}

// Rank returns the order of c's chunks (c the snapshot of key.Snapshot cut into key's unit) for the query key was
// made with: the ranking stored in dir (a folder of the run's objects) when there is a valid one, else the BM25
// ranking, computed and stored.
// A stored ranking that does not decode, is of another key or of another number of chunks, or is not an order of
// them, is computed again, never trusted.
func (m *Memo) Rank(ctx context.Context, dir objects.Keyed, key Key, c *Chunked, query string) ([]int, error) {
	digest := key.Digest()
	store := memoDir{dir}
	v, shared, err := m.once(ctx, "rank\x00"+dir.S.String()+"\x00"+dir.Prefix+"\x00"+digest, func() (any, error) {
		if order, ok := store.get(ctx, digest, key, len(c.Chunks)); ok {
			m.stats.stored.Add(1)
			return order, nil
		}
		unlock, err := dir.Lock(ctx, digest)
		if err != nil {
			return nil, err
		}
		defer unlock()
		if order, ok := store.get(ctx, digest, key, len(c.Chunks)); ok {
			m.stats.stored.Add(1)
			return order, nil
		}
		order := key.Ranker.rank(c, query)
		m.stats.builds.Add(1)
		if err := store.put(ctx, digest, key, order); err != nil {
			m.log.Warn().Err(err).Str("ranking", digest).Msg("could not store a ranking for other steps")
		}
		return order, nil
	})
	if err != nil {
		return nil, err
	}
	if shared {
		m.stats.shared.Add(1)
	}
	return v.([]int), nil
}

// once runs fn for key unless a call for key is running, in which case it waits for that call's result (shared
// says so). A waiter whose own context is alive tries again when the call it waited for ended with its caller's
// context.
func (m *Memo) once(ctx context.Context, key string, fn func() (any, error)) (v any, shared bool, err error) {
	for {
		ran := false
		select {
		case r := <-m.flight.DoChan(key, func() (any, error) { ran = true; return fn() }):
			if r.Err != nil && !ran && ctx.Err() == nil &&
				(errors.Is(r.Err, context.Canceled) || errors.Is(r.Err, context.DeadlineExceeded)) {
				continue
			}
			return r.Val, !ran, r.Err
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
	}
}
