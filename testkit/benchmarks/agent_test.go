package benchmarks

import (
	"context"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"testing"

	"ctxlab/activities/agent"
	snap "ctxlab/activities/repo"
	"ctxlab/internal/offlinetask"
	"ctxlab/store/cas"
	"ctxlab/testkit/synthrepo"
)

// agentCalls is a trajectory's tool calls as the offline stand-in and real agents make them: searches for the
// issue's names (fixed strings, one regex, one under a folder) and a definition lookup, each over the whole snapshot.
var agentCalls = []offlinetask.AgentCall{
	{Tool: offlinetask.ToolSearch, Args: map[string]any{"pattern": "parse_header"}},
	{Tool: offlinetask.ToolSearch, Args: map[string]any{"pattern": "reloadConfig"}},
	{Tool: offlinetask.ToolSearch, Args: map[string]any{"pattern": "TimeoutError"}},
	{Tool: offlinetask.ToolSearch, Args: map[string]any{"pattern": "def retry"}},
	{Tool: offlinetask.ToolSearch, Args: map[string]any{"pattern": `class Session\w*`, "regex": true}},
	{Tool: offlinetask.ToolSearch, Args: map[string]any{"pattern": "session_cache", "path": "src"}},
	{Tool: offlinetask.ToolDefinition, Args: map[string]any{"name": "tokenReader"}},
	{Tool: offlinetask.ToolSearch, Args: map[string]any{"pattern": "stale"}},
}

type storedSnapshot struct {
	store cas.Store
	m     snap.Manifest
}

var (
	storedOnce sync.Once
	stored     storedSnapshot
)

// storeSnapshot puts the synthetic repository into a content store folder, as checkout does.
func storeSnapshot(b *testing.B) storedSnapshot {
	setup(b)
	storedOnce.Do(func() {
		dir, err := os.MkdirTemp("", "synthrepo-cas-")
		if err != nil {
			b.Fatal(err)
		}
		cleanup = append(cleanup, dir)
		s, err := cas.NewDir(dir)
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		for _, f := range synthrepo.Generate(1) {
			ref, err := s.Put(ctx, f.Content)
			if err != nil {
				b.Fatal(err)
			}
			stored.m.Files = append(stored.m.Files, snap.Entry{Path: f.Path, Mode: snap.ModeFile, Blob: ref,
				Size: int64(len(f.Content))})
		}
		sort.Slice(stored.m.Files, func(i, j int) bool { return stored.m.Files[i].Path < stored.m.Files[j].Path })
		stored.store = s
	})
	return stored
}

// countGets counts the content store's reads.
type countGets struct {
	cas.Store
	n atomic.Int64
}

func (c *countGets) Get(ctx context.Context, ref cas.Ref) ([]byte, error) {
	c.n.Add(1)
	return c.Store.Get(ctx, ref)
}

// toolTurn runs one tool call as a tool turn activity does: a snapshot whose reader remembers files for this call
// only, in front of the worker's text cache (nil: none, every turn reads the store).
func toolTurn(b *testing.B, s cas.Store, m snap.Manifest, text *snap.TextCache, call offlinetask.AgentCall) {
	ctx := context.Background()
	seen := map[string]string{}
	sn := agent.Snapshot{Paths: m.Paths(), Links: map[string]string{}, Read: func(p string) (string, bool) {
		if t, ok := seen[p]; ok {
			return t, true
		}
		t, err := text.Read(ctx, s, m, p)
		if err != nil {
			b.Fatal(err)
		}
		seen[p] = t
		return t, true
	}}
	res, err := sn.Run(call, agent.Limits{})
	if err != nil || len(res.Lines) == 0 {
		b.Fatalf("%+v: %v", call, err)
	}
}

// BenchmarkAgentSearch runs a trajectory's tool calls (agentCalls, each its own turn) over the stored synthetic
// repository: before, with no cache shared by turns (each reads every file from the store); cold, with the worker's
// text cache empty when the trajectory starts (its first search fills it); warm, with the snapshot already cached
// (another agent, or a later method, over the same snapshot).
func BenchmarkAgentSearch(b *testing.B) {
	r := setup(b)
	st := storeSnapshot(b)
	for _, c := range []struct {
		name  string
		cache func() *snap.TextCache
	}{
		{"before", func() *snap.TextCache { return nil }},
		{"cold", func() *snap.TextCache { return snap.NewTextCache(snap.DefaultTextCacheBytes) }},
		{"warm", nil},
	} {
		b.Run(c.name, func(b *testing.B) {
			s := &countGets{Store: st.store}
			warm := snap.NewTextCache(snap.DefaultTextCacheBytes)
			if c.cache == nil {
				for _, call := range agentCalls {
					toolTurn(b, s, st.m, warm, call)
				}
			}
			s.n.Store(0)
			b.ResetTimer()
			for b.Loop() {
				text := warm
				if c.cache != nil {
					text = c.cache()
				}
				for _, call := range agentCalls {
					toolTurn(b, s, st.m, text, call)
				}
			}
			report(b, r)
			b.ReportMetric(float64(s.n.Load())/float64(b.N), "store_reads/op")
		})
	}
}

// BenchmarkSnapshotRead reads every file of the stored synthetic repository through a step's reader, as the
// evidence step (and the offline stand-in's localization) does once per activity: before, from the content store
// (read and hash-checked); warm, from the worker's text cache, after an earlier step over the same snapshot.
func BenchmarkSnapshotRead(b *testing.B) {
	r := setup(b)
	st := storeSnapshot(b)
	ctx := context.Background()
	readAll := func(text *snap.TextCache) {
		n := 0
		for _, e := range st.m.Files {
			t, err := text.Read(ctx, st.store, st.m, e.Path)
			if err != nil {
				b.Fatal(err)
			}
			n += len(t)
		}
		if int64(n) != r.bytes {
			b.Fatalf("read %d bytes of %d", n, r.bytes)
		}
	}
	for _, name := range []string{"before", "warm"} {
		b.Run(name, func(b *testing.B) {
			var text *snap.TextCache
			if name == "warm" {
				text = snap.NewTextCache(snap.DefaultTextCacheBytes)
				readAll(text)
			}
			b.ResetTimer()
			for b.Loop() {
				readAll(text)
			}
			report(b, r)
		})
	}
}
