//go:build unix

// Package flock takes advisory file locks (flock(2)) that hold across processes and goroutines, and that the kernel
// releases when a process dies, so a killed starter or worker never keeps one.
package flock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"ctxlab/internal/regularfile"
)

// TryLock takes the lock file at path (created with its folder when missing) if it is free. held is true, and
// unlock nil, when another process or goroutine has it.
func TryLock(path string) (unlock func(), held bool, err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, false, err
	}
	f, err := regularfile.Open(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, false, err
	}
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if err == nil {
		return func() {
			_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
			f.Close()
		}, false, nil
	}
	f.Close()
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return nil, true, nil
	}
	return nil, false, fmt.Errorf("locking %s: %w", path, err)
}

// Lock waits for the lock file at path, polling every poll or so, until it is free or ctx ends.
func Lock(ctx context.Context, path string, poll time.Duration) (unlock func(), err error) {
	for {
		unlock, held, err := TryLock(path)
		if err != nil || !held {
			return unlock, err
		}
		if err := Sleep(ctx, poll/2+time.Duration(rand.Int64N(int64(poll)))); err != nil {
			return nil, err
		}
	}
}

// LockPath waits for the lock file at path (created with its folder when missing), for callers that may block
// until the holder is done.
func LockPath(path string) (unlock func(), err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := regularfile.Open(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := LockFile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { UnlockFile(f); f.Close() }, nil
}

// LockFile waits for the exclusive lock of an open file. The caller releases it with UnlockFile (or by closing f).
func LockFile(f *os.File) error {
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("locking %s: %w", f.Name(), err)
	}
	return nil
}

// UnlockFile releases the lock LockFile took; f stays open.
func UnlockFile(f *os.File) { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }

// Sleep waits for d or until ctx ends.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
