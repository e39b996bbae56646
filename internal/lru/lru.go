// Package lru is a least-recently-used cache bounded by the summed cost of its entries (1 per entry for a bound on
// their number, bytes for a bound on memory). It is safe for concurrent use.
package lru

import (
	"container/list"
	"sync"
)

// Cache maps keys to values; adding past the bound evicts the least recently used entries.
type Cache[K comparable, V any] struct {
	mu    sync.Mutex
	max   int64
	cost  int64
	ll    *list.List // front = most recently used; values are *item[K, V]
	items map[K]*list.Element
}

type item[K comparable, V any] struct {
	key  K
	val  V
	cost int64
}

// New returns an empty cache holding entries of total cost at most limit (limit < 1 means 1).
func New[K comparable, V any](limit int64) *Cache[K, V] {
	return &Cache[K, V]{max: max(limit, 1), ll: list.New(), items: map[K]*list.Element{}}
}

// Get returns the value of k and marks it most recently used.
func (c *Cache[K, V]) Get(k K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[k]
	if !ok {
		var zero V
		return zero, false
	}
	c.ll.MoveToFront(el)
	return el.Value.(*item[K, V]).val, true
}

// Add sets k's value at the given cost, then evicts least recently used entries until the total is within the
// bound. A value costing more than the whole bound is not kept (it would evict everything, then itself); Add reports
// whether the value was kept.
func (c *Cache[K, V]) Add(k K, v V, cost int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[k]; ok {
		it := el.Value.(*item[K, V])
		c.cost -= it.cost
		c.ll.Remove(el)
		delete(c.items, k)
	}
	if cost > c.max {
		return false
	}
	c.items[k] = c.ll.PushFront(&item[K, V]{key: k, val: v, cost: cost})
	c.cost += cost
	for c.cost > c.max {
		last := c.ll.Back()
		it := last.Value.(*item[K, V])
		c.ll.Remove(last)
		delete(c.items, it.key)
		c.cost -= it.cost
	}
	return true
}

// Len is the number of entries held.
func (c *Cache[K, V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ll.Len()
}

// Cost is the summed cost of the entries held.
func (c *Cache[K, V]) Cost() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cost
}

// Max is the bound on Cost.
func (c *Cache[K, V]) Max() int64 { return c.max }
