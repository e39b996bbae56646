package sweepclient

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// TestLockOrWait checks the wait for another starter's server without running one: a server.json left by an earlier
// process is never attached to, the holder's own is, and a holder that goes away leaves the lock to the waiter.
func TestLockOrWait(t *testing.T) {
	dir := t.TempDir()
	lockPath, sfPath := filepath.Join(dir, "starter.lock"), filepath.Join(dir, "server.json")
	ctx := context.Background()
	unlock, published, err := LockOrWait(ctx, lockPath, sfPath, time.Second, zerolog.Nop())
	if err != nil || published != nil {
		t.Fatalf("free lock: published %v, err %v", published, err)
	}
	if holder := LockHolder(lockPath); holder != os.Getpid() {
		t.Errorf("the lock file names pid %d, want this process's %d", holder, os.Getpid())
	}
	write := func(sf ServerFile) {
		b, _ := json.Marshal(sf)
		if err := os.WriteFile(sfPath, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// An earlier starter's server.json: another pid. The waiter must not dial it, and says why it gave up.
	write(ServerFile{PID: os.Getpid() + 1, Address: "127.0.0.1:1"})
	if _, published, err := LockOrWait(ctx, lockPath, sfPath, 300*time.Millisecond, zerolog.Nop()); err == nil ||
		!strings.Contains(err.Error(), "published no server") {
		t.Errorf("stale server.json: published %v, err %v; want the wait to end with an error", published, err)
	}

	// The holder publishes while the other waits: it attaches to that.
	go func() {
		time.Sleep(300 * time.Millisecond)
		write(ServerFile{PID: os.Getpid(), Address: "127.0.0.1:7233"})
	}()
	_, published, err = LockOrWait(ctx, lockPath, sfPath, 5*time.Second, zerolog.Nop())
	if err != nil || published == nil || published.Address != "127.0.0.1:7233" {
		t.Errorf("published by the holder: got %+v, err %v", published, err)
	}

	// The holder exits before publishing: the waiter takes the lock and runs the server itself.
	write(ServerFile{PID: os.Getpid() + 1, Address: "127.0.0.1:1"})
	go func() {
		time.Sleep(300 * time.Millisecond)
		unlock()
	}()
	unlock2, published, err := LockOrWait(ctx, lockPath, sfPath, 5*time.Second, zerolog.Nop())
	if err != nil || published != nil {
		t.Fatalf("after the holder left: published %+v, err %v; want the lock", published, err)
	}
	unlock2()
}
