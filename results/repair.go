package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"ctxlab/internal/flock"
)

// TornSuffix names the file next to results.jsonl that keeps the bytes Repair cut out, so a repair throws nothing
// away unseen.
const TornSuffix = ".torn"

// Repaired says what Repair changed in a results file.
type Repaired struct {
	// TornLines counts the torn lines cut out: the unfinished last line of a process killed mid-append, and (in
	// files written before Append repaired the tail itself) such lines that later rows had been appended after.
	TornLines int `json:"torn_lines"`
	// TornBytes is how many bytes they held.
	TornBytes int `json:"torn_bytes"`
	// SavedTo is the file the cut bytes were appended to ("" when nothing was cut).
	SavedTo string `json:"saved_to,omitempty"`
}

// Changed reports whether Repair changed the file.
func (r Repaired) Changed() bool { return r.TornLines > 0 }

func (r Repaired) String() string {
	if !r.Changed() {
		return "results file whole"
	}
	return fmt.Sprintf("cut %d torn line(s) (%d bytes) out of the results file; they are kept in %s", r.TornLines,
		r.TornBytes, r.SavedTo)
}

// Repair cuts torn lines out of the results file: lines a process killed mid-append left unfinished. Every complete
// row stays, in order; lines that are whole JSON but not rows are left for readers to report. A missing file is
// whole. It holds the same lock as Append, so it is safe while a sweep appends.
func (s Store) Repair() (Repaired, error) {
	f, err := s.lock(false)
	if errors.Is(err, fs.ErrNotExist) {
		return Repaired{}, nil
	}
	if err != nil {
		return Repaired{}, err
	}
	defer unlock(f)
	rep, replaced, err := s.repair(f)
	if rep.Changed() || replaced {
		forget(s.Path)
	}
	return rep, err
}

// repair does Repair's work on the locked file f. replaced says it renamed a new file over f's path (f is then
// stale).
func (s Store) repair(f *os.File) (rep Repaired, replaced bool, err error) {
	data, err := io.ReadAll(io.NewSectionReader(f, 0, 1<<62))
	if err != nil {
		return rep, false, fmt.Errorf("results: reading %s: %w", s.Path, err)
	}
	var keep, torn bytes.Buffer
	for rest := data; len(rest) > 0; {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i+1], rest[i+1:]
		} else {
			rest = nil
		}
		if isTorn(line) {
			rep.TornLines++
			rep.TornBytes += len(line)
			torn.Write(bytes.TrimRight(line, "\n"))
			torn.WriteByte('\n')
			continue
		}
		keep.Write(line)
	}
	if keep.Len() > 0 && keep.Bytes()[keep.Len()-1] != '\n' {
		keep.WriteByte('\n') // a complete last row that lost only its newline
	}
	if rep.TornLines == 0 && keep.Len() == len(data) {
		return rep, false, nil
	}
	if rep.TornLines > 0 {
		rep.SavedTo = s.Path + TornSuffix
		if err := appendFile(rep.SavedTo, torn.Bytes()); err != nil {
			return Repaired{}, false, fmt.Errorf("results: keeping the torn lines of %s: %w", s.Path, err)
		}
	}
	switch {
	case bytes.HasPrefix(data, keep.Bytes()):
		// Only the tail was torn: cut it off in place, with one system call.
		if err := f.Truncate(int64(keep.Len())); err != nil {
			return Repaired{}, false, fmt.Errorf("results: truncating %s: %w", s.Path, err)
		}
	case keep.Len() == len(data)+1 && bytes.HasPrefix(keep.Bytes(), data):
		if _, err := f.WriteAt([]byte{'\n'}, int64(len(data))); err != nil {
			return Repaired{}, false, fmt.Errorf("results: %s: %w", s.Path, err)
		}
	default:
		// A torn line in the middle: write the rows to a new file and rename it over the old one, so a crash
		// leaves one of the two whole.
		if err := replaceFile(s.Path, keep.Bytes()); err != nil {
			return Repaired{}, false, err
		}
		return rep, true, nil
	}
	if err := f.Sync(); err != nil {
		return Repaired{}, false, fmt.Errorf("results: %s: %w", s.Path, err)
	}
	return rep, false, nil
}

// isTorn reports whether a line (with its newline, if it has one) is an unfinished write: JSON cut short. A line
// that is complete JSON, or not JSON at all, is not torn: it is left for the reader to report.
func isTorn(line []byte) bool {
	b := bytes.TrimSpace(line)
	if len(b) == 0 {
		return false
	}
	var v any
	err := json.Unmarshal(b, &v)
	if err == nil {
		return false
	}
	var syn *json.SyntaxError
	// Cut short: the decoder ran out of input, or the line has no newline (the last write stopped mid-line).
	return err.Error() == "unexpected end of JSON input" || (errors.As(err, &syn) && line[len(line)-1] != '\n')
}

func appendFile(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// replaceFile writes b to path through a temporary file and a rename.
func replaceFile(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".repair-*")
	if err != nil {
		return fmt.Errorf("results: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("results: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("results: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("results: %w", err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("results: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("results: replacing %s: %w", path, err)
	}
	return nil
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
		if err := RegularOrAbsent(s.Path); err != nil {
			return nil, fmt.Errorf("results: %w", err)
		}
		f, err := os.OpenFile(s.Path, flags, 0o644)
		if err != nil {
			return nil, fmt.Errorf("results: %w", err)
		}
		if err := flock.LockFile(f); err != nil {
			f.Close()
			return nil, fmt.Errorf("results: %w", err)
		}
		held, err1 := f.Stat()
		now, err2 := os.Stat(s.Path)
		if err1 == nil && err2 == nil && os.SameFile(held, now) {
			return f, nil
		}
		unlock(f)
		if err2 != nil && !errors.Is(err2, fs.ErrNotExist) {
			return nil, fmt.Errorf("results: %w", err2)
		}
	}
}

// ErrNotAFile is the error of a run-folder path that holds something other than a file (a folder, a socket, a
// device): retrying cannot help, and the sweep stops naming it.
var ErrNotAFile = errors.New("not a regular file")

// RegularOrAbsent returns nil when path is a regular file (a link to one counts) or does not exist, else an error
// naming it and what it is instead, which wraps ErrNotAFile.
func RegularOrAbsent(path string) error {
	st, err := os.Stat(path)
	if err != nil || st.Mode().IsRegular() {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	what := "something else"
	switch m := st.Mode(); {
	case m.IsDir():
		what = "a folder"
	case m&fs.ModeNamedPipe != 0:
		what = "a named pipe"
	case m&fs.ModeSocket != 0:
		what = "a socket"
	case m&fs.ModeDevice != 0:
		what = "a device"
	}
	return fmt.Errorf("%s is %s, %w: move it out of the way and run again", path, what, ErrNotAFile)
}

func unlock(f *os.File) {
	flock.UnlockFile(f)
	f.Close()
}
