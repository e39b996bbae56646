package rankings

import (
	"context"
	"errors"
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
	"ctxlab/store/cas"
	"ctxlab/testkit/synthrepo"
)

// TestStoredOrderRoundTrips stores orders of every shape (BM25's: matches first, the rest in snapshot order; any
// permutation; none) and reads each back equal, from a file shorter than the order when its tail is ascending.
func TestStoredOrderRoundTrips(t *testing.T) {
	d := memoDir{cas.KeyDir{Root: t.TempDir()}}
	rng := rand.New(rand.NewPCG(1, 2))
	key := KeyOf("sha256:x", Ranker{Unit: "file", Window: 60, K1: 0.9, B: 0.4}, "q")
	bm25Like := []int{7, 3, 9, 0, 1, 2, 4, 5, 6, 8}
	for i, order := range [][]int{nil, {0}, {2, 0, 1}, {0, 1, 2, 3}, {3, 2, 1, 0}, rng.Perm(500), bm25Like} {
		digest := strings.Repeat("ab", 32)
		if err := d.put(digest, key, order); err != nil {
			t.Fatal(err)
		}
		got, ok := d.get(digest, key, len(order))
		if !ok || !slices.Equal(got, order) {
			t.Errorf("order %d: stored %v, read %v (%v)", i, order, got, ok)
		}
		var s storedRanking
		d.dir.Get(digest, &s)
		if slices.Equal(order, bm25Like) && len(s.Head) != 3 {
			t.Errorf("matches first, then the rest in order: head %v, want the 3 matches", s.Head)
		}
		if _, ok := d.get(digest, key, len(order)+1); ok {
			t.Errorf("order %d read back for another chunk count", i)
		}
		other := key
		other.Query = "other"
		if _, ok := d.get(digest, other, len(order)); ok {
			t.Errorf("order %d read back for another key", i)
		}
	}
}

// TestChunkTextSharesTheFile: chunks of every unit hold the very text they held, pointing into the file's text,
// and the line count is the file's, on the generated repository's files and on files without a final newline.
func TestChunkTextSharesTheFile(t *testing.T) {
	files := synthrepo.Generate(3)[:300]
	files = append(files, synthrepo.File{Path: "a.py", Content: []byte("def f():\n    return 1\n\n\nx = 2")},
		synthrepo.File{Path: "b.txt", Content: []byte("\n\n")}, synthrepo.File{Path: "c.go", Content: []byte("package c")})
	for _, f := range files {
		text := string(f.Content)
		want := strings.Count(text, "\n")
		if !strings.HasSuffix(text, "\n") {
			want++
		}
		for _, u := range chunk.Units {
			chunks := chunk.Split(f.Path, f.Content, u, 60)
			before := slices.Clone(chunks)
			if n := shareText(text, chunks); n != want {
				t.Fatalf("%s: %d lines, want %d", f.Path, n, want)
			}
			for i, c := range chunks {
				if c != before[i] {
					t.Fatalf("%s %s chunk %d changed", f.Path, u, i)
				}
				if c.Text != "" && !within(c.Text, text) {
					t.Errorf("%s %s chunk %d: its text is a copy, not the file's", f.Path, u, i)
				}
			}
		}
	}
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
			if _, err := memo.Chunks(context.Background(), s, chunk.Function, 0); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if st := memo.Stats(); st.Chunkings != 1 || reads.Load() != int64(len(m.Files)) {
		t.Errorf("8 steps at once: %d chunkings, %d reads; want 1 and %d", st.Chunkings, reads.Load(), len(m.Files))
	}
	fn, _ := memo.Chunks(context.Background(), s, chunk.Function, 60)
	small := NewMemo(fn.cost()+fn.cost()/2, zerolog.Nop()) // holds one unit's chunks, not two
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
