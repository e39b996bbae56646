//go:build unix

// Package limiter bounds calls to a provider across every worker process that shares a folder (the run folder):
// at most N calls in flight, and calls started at most R per second. It uses advisory file locks, which the kernel
// releases when a process dies, so a killed worker never holds a slot, and which work across machines on a shared
// file system that supports them (NFSv4 does).
package limiter

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"ctxlab/internal/flock"
)

// Limits of one provider; zero values mean unlimited.
type Limits struct {
	// InFlight caps the calls running at once.
	InFlight int `json:"in_flight,omitempty"`
	// RPS caps the calls started per second.
	RPS float64 `json:"rps,omitempty"`
}

// Limiter enforces Limits through lock files in a folder.
type Limiter struct {
	dir    string
	limits Limits
}

// New returns a limiter keeping its lock files in dir (one folder per provider).
func New(dir string, l Limits) *Limiter { return &Limiter{dir: dir, limits: l} }

// poll is how long a caller waits before trying the slots again; jitter keeps waiting workers from trying together.
const poll = 50 * time.Millisecond

// Acquire waits for a call slot and for the rate to allow another start. The caller must call release when the
// call ends.
func (l *Limiter) Acquire(ctx context.Context) (release func(), err error) {
	release = func() {}
	if l.limits.InFlight > 0 {
		if release, err = l.slot(ctx); err != nil {
			return func() {}, err
		}
	}
	if l.limits.RPS > 0 {
		if err := l.pace(ctx); err != nil {
			release()
			return func() {}, err
		}
	}
	return release, nil
}

// slot takes one of InFlight lock files.
func (l *Limiter) slot(ctx context.Context) (func(), error) {
	start := rand.IntN(l.limits.InFlight) // spread callers over the slots
	for {
		for i := range l.limits.InFlight {
			n := (start + i) % l.limits.InFlight
			unlock, held, err := flock.TryLock(filepath.Join(l.dir, fmt.Sprintf("slot-%d.lock", n)))
			if err != nil {
				return nil, fmt.Errorf("limiter: %w", err)
			}
			if !held {
				return unlock, nil
			}
		}
		if err := flock.Sleep(ctx, poll+time.Duration(rand.Int64N(int64(poll)))); err != nil {
			return nil, err
		}
	}
}

// pace reserves the next start time in a shared file: starts are spaced 1/RPS apart across processes.
func (l *Limiter) pace(ctx context.Context) error {
	lockPath := filepath.Join(l.dir, "rate.lock")
	unlock, err := flock.LockPath(lockPath)
	if err != nil {
		return fmt.Errorf("limiter: %w", err)
	}
	var next time.Time
	var st struct {
		Next time.Time `json:"next"`
	}
	if b, err := os.ReadFile(lockPath + ".json"); err == nil && json.Unmarshal(b, &st) == nil {
		next = st.Next
	}
	now := time.Now()
	at := now
	if next.After(now) {
		at = next
	}
	st.Next = at.Add(time.Duration(float64(time.Second) / l.limits.RPS))
	b, _ := json.Marshal(st)
	tmp := lockPath + ".json.tmp"
	werr := os.WriteFile(tmp, b, 0o644)
	if werr == nil {
		werr = os.Rename(tmp, lockPath+".json")
	}
	unlock()
	if werr != nil {
		return fmt.Errorf("limiter: %w", werr)
	}
	return flock.Sleep(ctx, time.Until(at))
}
