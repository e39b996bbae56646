package embedded

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
)

// DamagedError is a database file SQLite cannot read as one (cut short by a full disk or a copy, overwritten): the
// server cannot start on it, and no retry helps.
type DamagedError struct {
	File string
	Err  error
}

func (e *DamagedError) Error() string {
	return fmt.Sprintf("embedded temporal: the database %s is damaged: %v", e.File, e.Err)
}

func (e *DamagedError) Unwrap() error { return e.Err }

// sqliteDamaged are SQLite's messages for a damaged file (SQLITE_CORRUPT) and for a file that is no database
// (SQLITE_NOTADB). The server's storage layer wraps SQLite's errors as text, so the text is what is left of them.
var sqliteDamaged = []string{"database disk image is malformed", "file is not a database"}

// asDamaged returns err as a DamagedError of file when SQLite said the file is damaged, else err.
func asDamaged(file string, err error) error {
	if err == nil {
		return nil
	}
	var d *DamagedError
	if errors.As(err, &d) {
		return err
	}
	for _, msg := range sqliteDamaged {
		if strings.Contains(err.Error(), msg) {
			return &DamagedError{File: file, Err: err}
		}
	}
	return err
}

// MoveAside renames a database and its write-ahead log and shared-memory files to FILE.damaged-TIME (and -wal,
// -shm beside it), so a new database can be created in its place while the old one is kept for inspection. It
// returns the database's new name ("" when there was no file).
func MoveAside(file string, now time.Time) (string, error) {
	dest := file + ".damaged-" + now.UTC().Format("20060102T150405Z")
	moved := ""
	for _, suffix := range []string{"", "-wal", "-shm"} {
		err := os.Rename(file+suffix, dest+suffix)
		switch {
		case err == nil && suffix == "":
			moved = dest
		case err != nil && !errors.Is(err, os.ErrNotExist):
			return moved, fmt.Errorf("moving the damaged database aside: %w", err)
		}
	}
	return moved, nil
}
