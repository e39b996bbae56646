package embedded

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestStartAfterCreationCutShort is the state a SIGKILL during a run's first start leaves: the database file exists
// (here empty, as SQLite leaves it before the first table) beside the creation marker. Start must create it again
// instead of taking it for a finished database and failing on its missing tables at every restart; a finished
// database leaves no marker and is opened as it is.
func TestStartAfterCreationCutShort(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "temporal.db")
	for _, p := range []string{db, db + ".creating"} {
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	o := Options{DBFile: db, LogFile: filepath.Join(dir, "temporal.log")}
	srv, err := Start(ctx, o)
	if err != nil {
		t.Fatalf("start on a database whose creation was cut short: %v", err)
	}
	_ = srv.Stop()
	if _, err := os.Stat(db + ".creating"); !os.IsNotExist(err) {
		t.Errorf("the creation marker is still there after a finished creation: %v", err)
	}
	fi, err := os.Stat(db)
	if err != nil || fi.Size() == 0 {
		t.Fatalf("no database after the start: %v", err)
	}
	// Without the marker the database is kept: a second start opens it.
	srv, err = Start(ctx, o)
	if err != nil {
		t.Fatalf("restart on the finished database: %v", err)
	}
	_ = srv.Stop()
}

// TestJournal checks that the journal setting reaches SQLite: the file's header says write-ahead log (format
// version 2 at bytes 18 and 19) by default, and the rollback journal (1) when asked. The attributes ctxlab passed
// before were ignored by SQLite, which this would have caught.
func TestJournal(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, tc := range []struct {
		journal Journal
		version byte
	}{{"", 2}, {JournalWALFull, 2}, {JournalRollback, 1}} {
		dir := t.TempDir()
		db := filepath.Join(dir, "temporal.db")
		srv, err := Start(ctx, Options{DBFile: db, LogFile: filepath.Join(dir, "temporal.log"), Journal: tc.journal})
		if err != nil {
			t.Fatalf("journal %q: %v", tc.journal, err)
		}
		_ = srv.Stop()
		b, err := os.ReadFile(db)
		if err != nil || len(b) < 100 {
			t.Fatalf("journal %q: database %d bytes: %v", tc.journal, len(b), err)
		}
		if b[18] != tc.version || b[19] != tc.version {
			t.Errorf("journal %q: file format versions %d/%d, want %d", tc.journal, b[18], b[19], tc.version)
		}
	}
	// A run folder made before (rollback journal) turns to the write-ahead log when opened again.
	dir := t.TempDir()
	o := Options{DBFile: filepath.Join(dir, "temporal.db"), LogFile: filepath.Join(dir, "temporal.log"),
		Journal: JournalRollback}
	for _, j := range []Journal{JournalRollback, JournalWAL} {
		o.Journal = j
		srv, err := Start(ctx, o)
		if err != nil {
			t.Fatalf("journal %q on an existing database: %v", j, err)
		}
		_ = srv.Stop()
	}
	if b, err := os.ReadFile(o.DBFile); err != nil || len(b) < 100 || b[18] != 2 {
		t.Errorf("an old database opened with the default journal is not in WAL mode: %v", err)
	}
	if _, err := Start(ctx, Options{DBFile: filepath.Join(t.TempDir(), "x.db"), Journal: "fast"}); err == nil {
		t.Error("an unknown journal was accepted")
	}
}
