package embedded

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestStartOnDamagedDatabase: a database cut to half its size, or overwritten with text, fails the start with a
// DamagedError naming the file (SQLite's "malformed" or "not a database" alone gave no way forward); moved aside,
// it is kept.
func TestStartOnDamagedDatabase(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	db := filepath.Join(dir, "temporal.db")
	o := Options{DBFile: db, LogFile: filepath.Join(dir, "temporal.log"), Journal: JournalRollback}
	srv, err := Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		damaged []byte
	}{
		{"cut short", good[:len(good)/2]},
		{"overwritten", bytes.Repeat([]byte("not sqlite at all\n"), 512)}, // last: MoveAside keeps this one
	} {
		name, damaged := c.name, c.damaged
		if err := os.WriteFile(db, damaged, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Start(ctx, o)
		var d *DamagedError
		if !errors.As(err, &d) || d.File != db || !strings.Contains(err.Error(), db+" is damaged") {
			t.Fatalf("%s: start: %v; want a DamagedError naming %s", name, err, db)
		}
	}
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	kept, err := MoveAside(db, now)
	if err != nil || kept != db+".damaged-20261201T100000Z" {
		t.Fatalf("MoveAside: %q, %v", kept, err)
	}
	if b, err := os.ReadFile(kept); err != nil || !bytes.HasPrefix(b, []byte("not sqlite")) {
		t.Errorf("the damaged database was not kept: %v", err)
	}
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Errorf("the damaged database is still in place: %v", err)
	}
	// A new database is created in its place by the next process's Start (starter run --fresh-db; this process's
	// SQLite driver keeps its handle on the moved file): TestDamagedDatabaseStartsOver in starter/e2e.
}
