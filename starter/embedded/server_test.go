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
