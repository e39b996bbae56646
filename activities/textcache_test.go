package activities

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"ctxlab/activities/api"
	"ctxlab/activities/repo"
	"ctxlab/activities/steps"
	"ctxlab/internal/offlinetask"
	"ctxlab/store/cas"
	"ctxlab/testkit/demorun"
)

// countingStore counts the reads of each blob.
type countingStore struct {
	cas.Store
	mu   sync.Mutex
	gets map[cas.Ref]int
}

func (s *countingStore) Get(ctx context.Context, ref cas.Ref) ([]byte, error) {
	s.mu.Lock()
	s.gets[ref]++
	s.mu.Unlock()
	return s.Store.Get(ctx, ref)
}

// TestToolTurnsShareSnapshotText: a search reads every file of the snapshot; the next tool turn of the same agent,
// and a turn of another agent over the same snapshot, read none from the store again (the worker's text cache
// serves them), and see the same text.
func TestToolTurnsShareSnapshotText(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	co := f.Must(f.Node("checkout", demorun.Instance, nil, nil))
	store := mustStore(t, f.a)
	m := f.Manifest(co)
	counting := &countingStore{Store: store, gets: map[cas.Ref]int{}}
	f.a.FileCacheBytes = 0 // the default bound, whatever the environment says (no file has been read yet)
	f.useStore(counting)
	fileReads := func() (n int) {
		counting.mu.Lock()
		defer counting.mu.Unlock()
		for _, e := range m.Files {
			n += counting.gets[e.Blob]
		}
		return n
	}
	search := func(node string, turn int, pattern string) string {
		t.Helper()
		call := &offlinetask.AgentCall{Tool: offlinetask.ToolSearch, Args: map[string]any{"pattern": pattern}}
		state, err := cas.PutJSON(ctx, store, steps.AgentTrajectory{Turns: []steps.AgentTurn{{N: turn, Call: call}}})
		if err != nil {
			t.Fatal(err)
		}
		out, err := f.a.AgentToolTurn(ctx, api.AgentTurnInput{Turn: turn, State: state, Node: api.NodeInput{Run: "t",
			Instance: f.Refs[demorun.Instance], Node: node, Step: node + ".agent", Dataset: f.Dataset,
			Inputs: map[string]api.NodeOutput{"checkout": co}}})
		if err != nil {
			t.Fatal(err)
		}
		var after steps.AgentTrajectory
		f.Load(out.State, &after)
		return after.Turns[len(after.Turns)-1].Result
	}

	first := search("agent_a", 0, "def ")
	if n := fileReads(); n < len(m.Files) {
		t.Fatalf("the first search read %d files of %d: it should read them all", n, len(m.Files))
	}
	cold := fileReads()
	if !strings.Contains(first, "matches for") {
		t.Fatalf("first search: %q", first)
	}
	again := search("agent_a", 1, "def ")
	if n := fileReads(); n != cold {
		t.Errorf("the second tool turn read %d files from the store again", n-cold)
	}
	if again != first {
		t.Errorf("the same search over cached text shows\n%s\nwant, as over the store's\n%s", again, first)
	}
	before := fileReads()
	search("agent_b", 0, "return")
	if n := fileReads(); n != before {
		t.Errorf("another agent's turn over the same snapshot read %d files from the store again", n-before)
	}
}

// TestFileCacheEnv: CTXLAB_FILE_CACHE_MB sets the bound in MiB, 0 turns the cache off, and a bad value keeps the
// default.
func TestFileCacheEnv(t *testing.T) {
	for _, c := range []struct {
		env  string
		want int64 // bound of the cache; 0 for none
	}{
		{"", repo.DefaultTextCacheBytes},
		{"64", 64 << 20},
		{"0", 0},
		{"lots", repo.DefaultTextCacheBytes},
	} {
		t.Setenv(FileCacheEnv, c.env)
		text := New(t.TempDir(), zerolog.Nop()).textCache()
		switch {
		case c.want == 0 && text != nil:
			t.Errorf("%s=%q: a cache of %d bytes, want none", FileCacheEnv, c.env, text.Max())
		case c.want != 0 && (text == nil || text.Max() != c.want):
			t.Errorf("%s=%q: cache %v, want a bound of %d bytes", FileCacheEnv, c.env, text, c.want)
		}
	}
}

// TestRankingsFollowTheTextCache: a worker's rankings memo keeps chunked snapshots beside its text cache only
// (package steps' TestRetrieveStepsShareOneIndexPerUnit runs the steps over such a memo): with the cache, two
// retrieve steps of one unit cut the snapshot once; without it (CTXLAB_FILE_CACHE_MB=0), each cuts it.
func TestRankingsFollowTheTextCache(t *testing.T) {
	f := newFixture(t)
	co := f.Must(f.Node("checkout", demorun.Instance, nil, nil))
	for _, c := range []struct {
		fileCache int64
		chunkings int64
	}{{0, 1}, {-1, 2}} {
		a := New(f.a.Runs, zerolog.Nop())
		a.FileCacheBytes = c.fileCache
		for _, budget := range []int{300, 600} {
			in := f.Input("retrieve", demorun.Instance, map[string]any{"tokenizer": "o200k_base", "unit": "function",
				"max_tokens": budget}, map[string]api.NodeOutput{"checkout": co})
			in.Node += fmt.Sprint("-", c.fileCache) // no node memo of the other worker's
			if _, err := a.runKind(context.Background(), "retrieve", in); err != nil {
				t.Fatal(err)
			}
		}
		if st := a.rankings().Stats(); st.Chunkings != c.chunkings {
			t.Errorf("file cache bound %d: %+v; want %d chunkings", c.fileCache, st, c.chunkings)
		}
	}
}
