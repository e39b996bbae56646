package rankings

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/rs/zerolog"

	"ctxlab/activities/chunk"
	"ctxlab/activities/repo"
	"ctxlab/specs"
	"ctxlab/store/objects"
	"ctxlab/testkit/synthrepo"
)

// TestStoredOrderRoundTrips stores orders of every shape (BM25's: matches first, the rest in snapshot order; any
// permutation; none) and reads each back equal, from a file shorter than the order when its tail is ascending.
func TestStoredOrderRoundTrips(t *testing.T) {
	ctx := context.Background()
	d := memoDir{objects.Keyed{S: objects.Dir{Root: t.TempDir()}, Prefix: "rankings"}}
	rng := rand.New(rand.NewPCG(1, 2))
	key := KeyOf("sha256:x", Ranker{Unit: "file", Window: 60, K1: 0.9, B: 0.4}, "q")
	bm25Like := []int{7, 3, 9, 0, 1, 2, 4, 5, 6, 8}
	for i, order := range [][]int{nil, {0}, {2, 0, 1}, {0, 1, 2, 3}, {3, 2, 1, 0}, rng.Perm(500), bm25Like} {
		digest := strings.Repeat("ab", 32)
		digest = fmt.Sprintf("%02x%s", i, digest[2:]) // stored once: each order its own digest
		if err := d.put(ctx, digest, key, order); err != nil {
			t.Fatal(err)
		}
		got, ok := d.get(ctx, digest, key, len(order))
		if !ok || !slices.Equal(got, order) {
			t.Errorf("order %d: stored %v, read %v (%v)", i, order, got, ok)
		}
		var s storedRanking
		d.dir.Get(ctx, digest, &s)
		if slices.Equal(order, bm25Like) && len(s.Head) != 3 {
			t.Errorf("matches first, then the rest in order: head %v, want the 3 matches", s.Head)
		}
		if _, ok := d.get(ctx, digest, key, len(order)+1); ok {
			t.Errorf("order %d read back for another chunk count", i)
		}
		other := key
		other.Query = "other"
		if _, ok := d.get(ctx, digest, other, len(order)); ok {
			t.Errorf("order %d read back for another key", i)
		}
	}
}

// TestChunksKeptBareReadTheirTextAgain: a chunked snapshot kept bare holds no text, every unit's chunks (package
// chunk cuts whole lines) being given their text back from the file's, equal to package chunk's and pointing into
// the file's text; the line counts are the files', on the generated repository and on files without a final
// newline. A file whose text changed under its chunks fails.
func TestChunksKeptBareReadTheirTextAgain(t *testing.T) {
	files := synthrepo.Generate(3)[:300]
	files = append(files, synthrepo.File{Path: "a.py", Content: []byte("def f():\n    return 1\n\n\nx = 2")},
		synthrepo.File{Path: "b.txt", Content: []byte("\n\n")}, synthrepo.File{Path: "c.go", Content: []byte("package c")})
	s, texts := snapshotOf(files)
	for _, u := range chunk.Units {
		bare, err := chunkSnapshot(context.Background(), s, u, 60, true)
		if err != nil {
			t.Fatal(err)
		}
		full, err := withText(context.Background(), s, bare)
		if err != nil {
			t.Fatal(err)
		}
		var want []chunk.Chunk
		for _, f := range files {
			want = append(want, chunk.Split(f.Path, f.Content, u, 60)...)
			lines := strings.Count(texts[f.Path], "\n")
			if !strings.HasSuffix(texts[f.Path], "\n") {
				lines++
			}
			if full.FileLines[f.Path] != lines {
				t.Fatalf("%s: %d lines, want %d", f.Path, full.FileLines[f.Path], lines)
			}
		}
		slices.SortStableFunc(want, func(a, b chunk.Chunk) int { return strings.Compare(a.Path, b.Path) })
		if !slices.Equal(full.Chunks, want) {
			t.Fatalf("%s: chunks given their text back differ from package chunk's", u)
		}
		for i, c := range full.Chunks {
			if bare.Chunks[i].Text != "" || !within(c.Text, texts[c.Path]) {
				t.Fatalf("%s chunk %d of %s: kept with text %v, or its text is a copy", u, i, c.Path, bare.Chunks[i].Text != "")
			}
		}
		if cost := bare.cost(); cost > int64(len(bare.Chunks))*(chunkOverhead+spanOverhead+2*fileOverhead) {
			t.Errorf("%s: a bare chunked snapshot costs %d bytes for %d chunks", u, cost, len(bare.Chunks))
		}
	}
	bare, _ := chunkSnapshot(context.Background(), s, chunk.Function, 60, true)
	texts["c.go"] += "\nfunc F() {}\n"
	if _, err := withText(context.Background(), s, bare); err == nil || !strings.Contains(err.Error(), "c.go") {
		t.Errorf("a file changed under its chunks: %v", err)
	}
}

// snapshotOf is a snapshot of the files (sorted by path, as manifests are) read from the map it returns.
func snapshotOf(files []synthrepo.File) (Snapshot, map[string]string) {
	texts := map[string]string{}
	var m repo.Manifest
	for _, f := range files {
		texts[f.Path] = string(f.Content)
		m.Files = append(m.Files, repo.Entry{Path: f.Path, Size: int64(len(f.Content))})
	}
	slices.SortFunc(m.Files, func(a, b repo.Entry) int { return strings.Compare(a.Path, b.Path) })
	return Snapshot{Ref: "sha256:snap", Manifest: m, Read: func(_ context.Context, p string) (string, error) {
		return texts[p], nil
	}}, texts
}

// within reports whether s lies in the memory of text.
func within(s, text string) bool {
	p, lo := uintptr(unsafe.Pointer(unsafe.StringData(s))), uintptr(unsafe.Pointer(unsafe.StringData(text)))
	return p >= lo && p+uintptr(len(s)) <= lo+uintptr(len(text))
}

func TestRankerOfFillsDefaults(t *testing.T) {
	b := 0.75
	for _, tc := range []struct {
		p    specs.RetrieveParams
		want Ranker
	}{
		{specs.RetrieveParams{Unit: "function"}, Ranker{Unit: "function", Window: 60, K1: 0.9, B: 0.4}},
		{specs.RetrieveParams{Unit: "window", Window: 60, K1: 0.9}, Ranker{Unit: "window", Window: 60, K1: 0.9, B: 0.4}},
		{specs.RetrieveParams{Unit: "swebench_file", K1: 1.2, B: &b}, Ranker{Unit: "swebench_file", Window: 60, K1: 1.2, B: 0.75}},
	} {
		if got, err := RankerOf(tc.p); err != nil || got != tc.want {
			t.Errorf("RankerOf(%+v) = %+v, %v; want %+v", tc.p, got, err, tc.want)
		}
	}
	bad := 2.0
	for _, p := range []specs.RetrieveParams{{Unit: "paragraph"}, {Unit: "file", B: &bad}, {Unit: "file", K1: -1}} {
		if _, err := RankerOf(p); err == nil {
			t.Errorf("RankerOf(%+v) accepted", p)
		}
	}
}

// TestChunksOnceAndBounded: steps asking for the same chunks at once cut the snapshot once; the memo keeps what
// fits its bound and cuts again what it let go; a read that fails is not kept.
func TestChunksOnceAndBounded(t *testing.T) {
	files := map[string]string{}
	var m repo.Manifest
	for _, f := range synthrepo.Generate(5)[:200] {
		files[f.Path] = string(f.Content)
		m.Files = append(m.Files, repo.Entry{Path: f.Path, Size: int64(len(f.Content))})
	}
	slices.SortFunc(m.Files, func(a, b repo.Entry) int { return strings.Compare(a.Path, b.Path) })
	var reads atomic.Int64
	fail := atomic.Bool{}
	s := Snapshot{Ref: "sha256:snap", Manifest: m, Read: func(_ context.Context, p string) (string, error) {
		reads.Add(1)
		if fail.Load() {
			return "", errors.New("store down")
		}
		return files[p], nil
	}}
	memo := NewMemo(1<<30, zerolog.Nop())
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			c, err := memo.Chunks(context.Background(), s, chunk.Function, 0)
			if err != nil || len(c.Chunks) == 0 || c.Chunks[0].Text == "" {
				t.Errorf("chunks %v, %v", c, err)
			}
		})
	}
	wg.Wait()
	// Each step reads the files again (from the worker's text cache) for its chunks' text; one cut them.
	if st, want := memo.Stats(), int64(len(m.Files)*(1+8)); st.Chunkings != 1 || reads.Load() != want {
		t.Errorf("8 steps at once: %d chunkings, %d reads; want 1 and %d", st.Chunkings, reads.Load(), want)
	}
	cost := func(u chunk.Unit) int64 {
		c, err := chunkSnapshot(context.Background(), s, u, 60, true)
		if err != nil {
			t.Fatal(err)
		}
		return c.cost()
	}
	fn, win := cost(chunk.Function), cost(chunk.Window)
	small := NewMemo(max(fn, win)+min(fn, win)/2, zerolog.Nop()) // holds either unit's chunks, not both
	for _, u := range []chunk.Unit{chunk.Function, chunk.Function, chunk.Window, chunk.Function} {
		if _, err := small.Chunks(context.Background(), s, u, 60); err != nil {
			t.Fatal(err)
		}
	}
	if st := small.Stats(); st.Chunkings != 3 {
		t.Errorf("function, function, window, function within a bound of one: %d chunkings, want 3", st.Chunkings)
	}
	fail.Store(true)
	if _, err := small.Chunks(context.Background(), s, chunk.Definition, 60); err == nil {
		t.Fatal("a failed read gave chunks")
	}
	fail.Store(false)
	if c, err := small.Chunks(context.Background(), s, chunk.Definition, 60); err != nil || len(c.Chunks) == 0 {
		t.Errorf("after a failed read: %v, %v", c, err)
	}
}
