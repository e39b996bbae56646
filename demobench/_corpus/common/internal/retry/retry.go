// Package retry runs an operation again after transient failures, waiting longer each time.
package retry

import (
	"context"
	"errors"
	"time"
)

// Policy says how often and how patiently to retry.
type Policy struct {
	Attempts  int              // total tries, at least 1
	Backoff   Backoff          // delay before each retry
	Retryable func(error) bool // nil: every error is retried
}

// Permanent wraps an error that must not be retried.
type Permanent struct{ Err error }

func (p *Permanent) Error() string { return p.Err.Error() }
func (p *Permanent) Unwrap() error { return p.Err }

// Do calls fn until it succeeds, returns a permanent error, the attempts run out or ctx ends.
func Do(ctx context.Context, p Policy, fn func(ctx context.Context) error) error {
	attempts := p.Attempts
	if attempts < 1 {
		attempts = 1
	}
	var err error
	for i := 0; i < attempts; i++ {
		if err = fn(ctx); err == nil {
			return nil
		}
		var perm *Permanent
		if errors.As(err, &perm) {
			return perm.Err
		}
		if p.Retryable != nil && !p.Retryable(err) {
			return err
		}
		if i == attempts-1 {
			break
		}
		t := time.NewTimer(p.Backoff.Delay(i))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	return err
}
