// Package ratelimit implements token-bucket rate limiting: a Limiter for one stream of events, Keyed limiters
// for many (one per client), and HTTP middleware that answers 429 Too Many Requests.
package ratelimit

import (
	"math"
	"time"
)

// Bucket is a token bucket. It holds at most burst tokens and gains rate tokens per second; each event takes one
// or more tokens. A Bucket is not safe for concurrent use; Limiter adds the locking.
type Bucket struct {
	rate   float64 // tokens per second
	burst  float64
	tokens float64
	last   time.Time // time of the last refill
}

// NewBucket returns a full bucket.
func NewBucket(rate float64, burst int, now time.Time) *Bucket {
	if burst < 1 {
		burst = 1
	}
	return &Bucket{rate: rate, burst: float64(burst), tokens: float64(burst), last: now}
}

// Rate returns the refill rate in tokens per second.
func (b *Bucket) Rate() float64 { return b.rate }

// Burst returns the capacity of the bucket.
func (b *Bucket) Burst() int { return int(b.burst) }

// refill adds the tokens earned since the last refill, up to the capacity.
func (b *Bucket) refill(now time.Time) {
	if !now.After(b.last) {
		return
	}
	elapsed := now.Sub(b.last)
	b.tokens = math.Min(b.burst, b.tokens+float64(elapsed/time.Second)*b.rate)
	b.last = now
}

// Tokens returns the number of tokens available at now.
func (b *Bucket) Tokens(now time.Time) float64 {
	b.refill(now)
	return b.tokens
}

// Take removes n tokens if that many are available at now, and reports whether it did.
func (b *Bucket) Take(now time.Time, n int) bool {
	b.refill(now)
	if float64(n) > b.tokens {
		return false
	}
	b.tokens -= float64(n)
	return true
}

// Delay returns how long after now n tokens will be available (0 if they are already). It returns a negative
// duration when n exceeds the capacity, since that many tokens never accumulate.
func (b *Bucket) Delay(now time.Time, n int) time.Duration {
	b.refill(now)
	if float64(n) > b.burst {
		return -1
	}
	missing := float64(n) - b.tokens
	if missing <= 0 {
		return 0
	}
	if b.rate <= 0 {
		return -1
	}
	return time.Duration(missing / b.rate * float64(time.Second))
}

// SetRate changes the refill rate from now on; tokens earned so far are kept.
func (b *Bucket) SetRate(now time.Time, rate float64) {
	b.refill(now)
	b.rate = rate
}
