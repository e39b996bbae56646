package lru

import "testing"

func TestLRUEvictsOldest(t *testing.T) {
	c := New[string, int](2)
	var evicted []string
	c.OnEvict = func(k string, _ int) { evicted = append(evicted, k) }
	c.Put("a", 1)
	c.Put("b", 2)
	c.Get("a")
	c.Put("c", 3)
	if _, ok := c.Get("b"); ok {
		t.Fatal("b should have been evicted")
	}
	if len(evicted) != 1 || evicted[0] != "b" {
		t.Fatalf("evicted %v", evicted)
	}
	if v, ok := c.Get("a"); !ok || v != 1 {
		t.Fatalf("a = %v, %v", v, ok)
	}
}

func TestLRUReplaceKeepsSize(t *testing.T) {
	c := New[int, string](3)
	c.Put(1, "x")
	c.Put(1, "y")
	if c.Len() != 1 {
		t.Fatalf("len %d", c.Len())
	}
	if v, _ := c.Get(1); v != "y" {
		t.Fatalf("got %q", v)
	}
	c.Remove(1)
	if c.Len() != 0 {
		t.Fatalf("len after remove %d", c.Len())
	}
}
