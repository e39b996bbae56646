package lru

import (
	"fmt"
	"sync"
	"testing"
)

func TestEvictsLeastRecentlyUsedWithinCost(t *testing.T) {
	c := New[string, string](10)
	c.Add("a", "aaaa", 4)
	c.Add("b", "bbbb", 4)
	if _, ok := c.Get("a"); !ok { // a is now the most recent: b goes first
		t.Fatal("a missing")
	}
	c.Add("c", "cccc", 4)
	if _, ok := c.Get("b"); ok {
		t.Error("b survived although it was the least recently used")
	}
	for _, k := range []string{"a", "c"} {
		if v, ok := c.Get(k); !ok || v != k+k+k+k {
			t.Errorf("Get(%s) = %q, %v", k, v, ok)
		}
	}
	if c.Cost() != 8 || c.Len() != 2 {
		t.Errorf("cost %d, len %d; want 8, 2", c.Cost(), c.Len())
	}
	// Re-adding a key replaces its cost rather than adding to it.
	c.Add("a", "A", 1)
	if c.Cost() != 5 || c.Len() != 2 {
		t.Errorf("after replacing a: cost %d, len %d; want 5, 2", c.Cost(), c.Len())
	}
	// A value over the whole bound is refused and evicts nothing.
	if c.Add("huge", "x", 11) {
		t.Error("a value costing more than the bound was kept")
	}
	if c.Len() != 2 {
		t.Errorf("refusing a value evicted entries: len %d", c.Len())
	}
}

func TestConcurrentUseStaysWithinBound(t *testing.T) {
	c := New[int, int](100)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				k := (g*1000 + i) % 300
				if v, ok := c.Get(k); ok && v != k {
					panic(fmt.Sprintf("Get(%d) = %d", k, v))
				}
				c.Add(k, k, int64(1+k%7))
			}
		}()
	}
	wg.Wait()
	if c.Cost() > 100 {
		t.Errorf("cost %d over the bound 100", c.Cost())
	}
}
