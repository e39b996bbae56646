package retry

import (
	"math/rand"
	"time"
)

// Backoff computes the wait before retry number n (0 for the first retry): Base doubled n times, at most Max,
// then spread by up to Jitter (a fraction, 0.2 = ±20%).
type Backoff struct {
	Base   time.Duration
	Max    time.Duration
	Jitter float64
	Rand   *rand.Rand // nil: no jitter is applied
}

// Delay returns the wait before retry n.
func (b Backoff) Delay(n int) time.Duration {
	d := b.Base
	if d <= 0 {
		d = 100 * time.Millisecond
	}
	for i := 0; i < n; i++ {
		if b.Max > 0 && d >= b.Max/2 {
			d = b.Max
			break
		}
		d *= 2
	}
	if b.Max > 0 && d > b.Max {
		d = b.Max
	}
	if b.Jitter > 0 && b.Rand != nil {
		spread := float64(d) * b.Jitter
		d += time.Duration((b.Rand.Float64()*2 - 1) * spread)
	}
	return d
}
