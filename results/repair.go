package results

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"ctxlab/internal/flock"
	"ctxlab/runfolder"
)

// Repair cuts torn lines out of the results file: lines a process killed mid-append left unfinished
// (runfolder.CutTorn). Every complete row stays, in order; lines that are whole JSON but not rows are left for
// readers to report. A missing file is whole. It holds the same lock as Append, so it is safe while a sweep appends.
func (s Store) Repair() (runfolder.Repaired, error) {
	f, err := s.lock(false)
	if errors.Is(err, fs.ErrNotExist) {
		return runfolder.Repaired{}, nil
	}
	if err != nil {
		return runfolder.Repaired{}, err
	}
	defer unlock(f)
	rep, replaced, err := s.cutTorn(f)
	if rep.Changed() || replaced {
		forget(s.Path)
	}
	return rep, err
}

// cutTorn does Repair's work on the locked file f (runfolder.CutTorn). replaced says it renamed a new file over f's
// path (f is then stale).
func (s Store) cutTorn(f *os.File) (rep runfolder.Repaired, replaced bool, err error) {
	rep, replaced, err = runfolder.CutTorn(f, s.Path)
	if err != nil {
		return rep, replaced, fmt.Errorf("results: %w", err)
	}
	return rep, replaced, nil
}

// lock opens the results file and takes its exclusive lock. Repair may replace the file by a rename while another
// process waits for the lock on the old one, so lock checks that the file it locked is still the one at the path,
// and tries again if not.
func (s Store) lock(create bool) (*os.File, error) {
	flags := os.O_RDWR
	if create {
		if err := os.MkdirAll(filepath.Dir(s.Path), 0o755); err != nil {
			return nil, fmt.Errorf("results: %w", err)
		}
		flags |= os.O_CREATE
	}
	for {
		f, err := runfolder.OpenFile(s.Path, flags, 0o644)
		if err != nil {
			return nil, fmt.Errorf("results: %w", err)
		}
		if err := flock.LockFile(f); err != nil {
			f.Close()
			return nil, fmt.Errorf("results: %w", err)
		}
		held, err1 := f.Stat()
		now, err2 := os.Lstat(s.Path)
		if err1 == nil && err2 == nil && os.SameFile(held, now) {
			return f, nil
		}
		unlock(f)
		if err2 != nil && !errors.Is(err2, fs.ErrNotExist) {
			return nil, fmt.Errorf("results: %w", err2)
		}
	}
}

func unlock(f *os.File) {
	flock.UnlockFile(f)
	f.Close()
}
