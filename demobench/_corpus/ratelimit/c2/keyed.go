package ratelimit

import (
	"sync"

	"example.com/ratelimit/internal/lru"
)

// Keyed holds one Limiter per key (a client address, an API token, a user id), all with the same rate and burst.
// It remembers at most maxKeys keys; the least recently seen are forgotten, which resets their limit. It is safe
// for concurrent use.
type Keyed struct {
	mu    sync.Mutex
	rate  float64
	burst int
	opts  []Option
	cache *lru.Cache[string, *Limiter]
}

// NewKeyed returns per-key limiters of rate events per second and bursts of burst.
func NewKeyed(rate float64, burst, maxKeys int, opts ...Option) *Keyed {
	return &Keyed{rate: rate, burst: burst, opts: opts, cache: lru.New[string, *Limiter](maxKeys)}
}

// Get returns the limiter of key, creating it (full) on first use.
func (k *Keyed) Get(key string) *Limiter {
	k.mu.Lock()
	defer k.mu.Unlock()
	if l, ok := k.cache.Get(key); ok {
		return l
	}
	l := New(k.rate, k.burst, k.opts...)
	k.cache.Put(key, l)
	return l
}

// Allow reports whether one event for key may happen now, and if so counts it.
func (k *Keyed) Allow(key string) bool { return k.Get(key).Allow() }

// Len returns the number of keys remembered.
func (k *Keyed) Len() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.cache.Len()
}
