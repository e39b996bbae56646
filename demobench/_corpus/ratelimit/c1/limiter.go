package ratelimit

import (
	"context"
	"errors"
	"sync"
	"time"
)

// ErrExceedsBurst is returned by WaitN for a request larger than the limiter's burst.
var ErrExceedsBurst = errors.New("ratelimit: request exceeds burst")

// Limiter allows events at a steady rate with bursts. It is safe for concurrent use.
type Limiter struct {
	mu     sync.Mutex
	bucket *Bucket
	clock  Clock
}

// Option configures a Limiter.
type Option func(*Limiter)

// WithClock makes the limiter read time from c (a FakeClock in tests).
func WithClock(c Clock) Option { return func(l *Limiter) { l.clock = c } }

// New returns a limiter that allows rate events per second on average and up to burst at once. It starts full.
func New(rate float64, burst int, opts ...Option) *Limiter {
	l := &Limiter{clock: systemClock{}}
	for _, o := range opts {
		o(l)
	}
	l.bucket = NewBucket(rate, burst, l.clock.Now())
	return l
}

// Allow reports whether one event may happen now, and if so counts it.
func (l *Limiter) Allow() bool { return l.AllowN(1) }

// AllowN reports whether n events may happen now, and if so counts them.
func (l *Limiter) AllowN(n int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.bucket.Take(l.clock.Now(), n)
}

// Delay returns how long until one more event would be allowed (0 if it would be allowed now).
func (l *Limiter) Delay() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.bucket.Delay(l.clock.Now(), 1)
}

// Tokens returns the number of events that could happen right now.
func (l *Limiter) Tokens() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.bucket.Tokens(l.clock.Now())
}

// SetRate changes the rate from now on.
func (l *Limiter) SetRate(rate float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.bucket.SetRate(l.clock.Now(), rate)
}

// Wait blocks until one event is allowed or ctx ends.
func (l *Limiter) Wait(ctx context.Context) error { return l.WaitN(ctx, 1) }

// WaitN blocks until n events are allowed or ctx ends.
func (l *Limiter) WaitN(ctx context.Context, n int) error {
	for {
		l.mu.Lock()
		now := l.clock.Now()
		if l.bucket.Take(now, n) {
			l.mu.Unlock()
			return nil
		}
		d := l.bucket.Delay(now, n)
		l.mu.Unlock()
		if d < 0 {
			return ErrExceedsBurst
		}
		if d < time.Millisecond {
			d = time.Millisecond
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}
