//go:build unix

package flock

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"
)

func TestTryLockAndLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "x.lock")
	unlock, held, err := TryLock(path)
	if err != nil || held {
		t.Fatalf("free lock: held %v, %v", held, err)
	}
	if _, held, err := TryLock(path); err != nil || !held {
		t.Fatalf("a second taker must see it held: held %v, %v", held, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := Lock(ctx, path, 10*time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock on a held file must wait until ctx ends, got %v", err)
	}
	go func() { time.Sleep(50 * time.Millisecond); unlock() }()
	got, err := Lock(context.Background(), path, 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	got()
}

func TestLockPathWaitsForTheHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "b", "y.lock")
	unlock, err := LockPath(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, held, err := TryLock(path); err != nil || !held {
		t.Fatalf("LockPath must hold the lock: held %v, %v", held, err)
	}
	released := make(chan struct{})
	go func() { time.Sleep(50 * time.Millisecond); close(released); unlock() }()
	again, err := LockPath(path)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-released:
	default:
		t.Fatal("LockPath returned while another holder still had the lock")
	}
	again()
	if u, held, err := TryLock(path); err != nil || held {
		t.Fatalf("unlock must free the lock: held %v, %v", held, err)
	} else {
		u()
	}
}
