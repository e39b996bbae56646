// Package objectstest checks that an objects.Store keeps the promises the run's memos rely on, for each backend's
// tests: the run folder's Dir, the S3 client against an in-memory fake and against a real S3-compatible server.
package objectstest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"ctxlab/store/objects"
)

// Exercise runs every check on s, which must be empty.
func Exercise(t *testing.T, s objects.Store) {
	t.Helper()
	t.Run("round trip", func(t *testing.T) { roundTrip(t, s) })
	t.Run("create once", func(t *testing.T) { createOnce(t, s) })
	t.Run("create races", func(t *testing.T) { createRaces(t, s) })
	t.Run("list", func(t *testing.T) { list(t, s) })
	t.Run("keys", func(t *testing.T) { keys(t, s) })
	t.Run("lock", func(t *testing.T) { lock(t, s) })
}

func roundTrip(t *testing.T, s objects.Store) {
	ctx := context.Background()
	if _, err := s.Get(ctx, "rt/missing.json"); !errors.Is(err, objects.ErrNotFound) {
		t.Errorf("get of a missing key: %v, want ErrNotFound", err)
	}
	if err := s.Put(ctx, "rt/a.json", []byte("one")); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, "rt/a.json", []byte("two")); err != nil {
		t.Fatal(err)
	}
	if b, err := s.Get(ctx, "rt/a.json"); err != nil || string(b) != "two" {
		t.Errorf("get after two puts: %q, %v", b, err)
	}
	if err := s.Delete(ctx, "rt/a.json"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "rt/a.json"); !errors.Is(err, objects.ErrNotFound) {
		t.Errorf("get after delete: %v", err)
	}
	if err := s.Delete(ctx, "rt/a.json"); err != nil {
		t.Errorf("deleting a missing key: %v", err)
	}
}

func createOnce(t *testing.T, s objects.Store) {
	ctx := context.Background()
	existing, err := s.Create(ctx, "once/k.json", []byte("first"), true)
	if err != nil || existing != nil {
		t.Fatalf("first create: existing %q, %v", existing, err)
	}
	existing, err = s.Create(ctx, "once/k.json", []byte("second"), false)
	if err != nil || string(existing) != "first" {
		t.Errorf("second create: existing %q, %v; want the first's bytes", existing, err)
	}
	if b, err := s.Get(ctx, "once/k.json"); err != nil || string(b) != "first" {
		t.Errorf("after a second create the object is %q, %v", b, err)
	}
}

// createRaces: writers that create one key at the same moment agree on one winner, whose bytes every loser gets.
func createRaces(t *testing.T, s objects.Store) {
	ctx := context.Background()
	for round := range 5 {
		key := fmt.Sprintf("race/%d.json", round)
		const writers = 8
		var wg sync.WaitGroup
		got := make([][]byte, writers)
		won := make([]bool, writers)
		start := make(chan struct{})
		for i := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				existing, err := s.Create(ctx, key, []byte(fmt.Sprint("writer ", i)), false)
				if err != nil {
					t.Error(err)
					return
				}
				won[i], got[i] = existing == nil, existing
			}()
		}
		close(start)
		wg.Wait()
		winner := slices.Index(won, true)
		if n := len(slices.DeleteFunc(slices.Clone(won), func(w bool) bool { return !w })); n != 1 {
			t.Fatalf("round %d: %d writers created the key, want 1", round, n)
		}
		want := fmt.Sprint("writer ", winner)
		for i, b := range got {
			if i != winner && string(b) != want {
				t.Errorf("round %d: writer %d got %q, want the winner's %q", round, i, b, want)
			}
		}
		if b, _ := s.Get(ctx, key); string(b) != want {
			t.Errorf("round %d: the object is %q, want the winner's %q", round, b, want)
		}
	}
}

func list(t *testing.T, s objects.Store) {
	ctx := context.Background()
	for _, k := range []string{"log/a/1", "log/a/2", "log/b/3", "logx/4"} {
		if err := s.Put(ctx, k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.List(ctx, "log/", "")
	if want := []string{"log/a/1", "log/a/2", "log/b/3"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("list log/: %v, %v; want %v", got, err, want)
	}
	got, err = s.List(ctx, "log/", "log/a/1")
	if want := []string{"log/a/2", "log/b/3"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("list log/ after log/a/1: %v, %v; want %v", got, err, want)
	}
	if got, err := s.List(ctx, "nothing/", ""); err != nil || len(got) != 0 {
		t.Errorf("list of an empty prefix: %v, %v", got, err)
	}
}

// keys: a key that is not a clean relative path names no place, in any backend.
func keys(t *testing.T, s objects.Store) {
	ctx := context.Background()
	for _, k := range []string{"", "/abs", "../up", "a/../../b", "a//b", "a/./b", "a/", "nul\x00", `back\slash`} {
		if err := s.Put(ctx, k, []byte("x")); err == nil {
			t.Errorf("put %q: no error", k)
		}
		if _, err := s.Create(ctx, k, []byte("x"), false); err == nil {
			t.Errorf("create %q: no error", k)
		}
		if _, err := s.Get(ctx, k); err == nil || errors.Is(err, objects.ErrNotFound) {
			t.Errorf("get %q: %v, want the key refused", k, err)
		}
	}
}

// lock: holders of one key's lock never overlap.
func lock(t *testing.T, s objects.Store) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var holders, peak atomic.Int32
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 3 {
				unlock, err := s.Lock(ctx, "locks/k")
				if err != nil {
					t.Error(err)
					return
				}
				n := holders.Add(1)
				if n > peak.Load() {
					peak.Store(n)
				}
				time.Sleep(5 * time.Millisecond)
				holders.Add(-1)
				unlock()
			}
		}()
	}
	wg.Wait()
	if peak.Load() != 1 {
		t.Errorf("%d holders of one lock at once", peak.Load())
	}
}
