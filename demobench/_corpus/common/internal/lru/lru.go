// Package lru is a fixed-size least-recently-used cache.
package lru

import "container/list"

// Cache holds at most a fixed number of entries; adding one more evicts the least recently used. It is not safe
// for concurrent use.
type Cache[K comparable, V any] struct {
	size    int
	order   *list.List // front = most recently used
	items   map[K]*list.Element
	OnEvict func(key K, value V)
}

type entry[K comparable, V any] struct {
	key   K
	value V
}

// New returns a cache that holds at most size entries (size < 1 is taken as 1).
func New[K comparable, V any](size int) *Cache[K, V] {
	if size < 1 {
		size = 1
	}
	return &Cache[K, V]{size: size, order: list.New(), items: map[K]*list.Element{}}
}

// Get returns the value for key and marks it as recently used.
func (c *Cache[K, V]) Get(key K) (V, bool) {
	if el, ok := c.items[key]; ok {
		c.order.MoveToFront(el)
		return el.Value.(*entry[K, V]).value, true
	}
	var zero V
	return zero, false
}

// Put adds or replaces the value for key.
func (c *Cache[K, V]) Put(key K, value V) {
	if el, ok := c.items[key]; ok {
		el.Value.(*entry[K, V]).value = value
		c.order.MoveToFront(el)
		return
	}
	c.items[key] = c.order.PushFront(&entry[K, V]{key: key, value: value})
	for c.order.Len() > c.size {
		last := c.order.Back()
		e := last.Value.(*entry[K, V])
		c.order.Remove(last)
		delete(c.items, e.key)
		if c.OnEvict != nil {
			c.OnEvict(e.key, e.value)
		}
	}
}

// Remove deletes key from the cache.
func (c *Cache[K, V]) Remove(key K) {
	if el, ok := c.items[key]; ok {
		c.order.Remove(el)
		delete(c.items, key)
	}
}

// Len is the number of entries held.
func (c *Cache[K, V]) Len() int { return c.order.Len() }
