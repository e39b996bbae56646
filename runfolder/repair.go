package runfolder

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"ctxlab/internal/regularfile"
)

// TornSuffix names the file next to a repaired file (results.jsonl) that keeps the bytes CutTorn cut out, so a
// repair throws nothing away unseen.
const TornSuffix = ".torn"

// Repaired says what CutTorn changed in a file.
type Repaired struct {
	// TornLines counts the torn lines cut out: the unfinished last line of a process killed mid-append, and (in
	// files written before Append repaired the tail itself) such lines that later rows had been appended after.
	TornLines int `json:"torn_lines"`
	// TornBytes is how many bytes they held.
	TornBytes int `json:"torn_bytes"`
	// SavedTo is the file the cut bytes were appended to ("" when nothing was cut).
	SavedTo string `json:"saved_to,omitempty"`
}

// Changed reports whether CutTorn changed the file.
func (r Repaired) Changed() bool { return r.TornLines > 0 }

func (r Repaired) String() string {
	if !r.Changed() {
		return "results file whole"
	}
	return fmt.Sprintf("cut %d torn line(s) (%d bytes) out of the results file; they are kept in %s", r.TornLines,
		r.TornBytes, r.SavedTo)
}

// CutTorn cuts torn lines out of the JSON-lines file f at path, which the caller holds locked against writers: lines
// a process killed mid-append left unfinished. Every complete line stays, in order; lines that are whole JSON but
// not what the file holds are left for readers to report. The cut bytes are appended to PATH.torn (TornSuffix).
// replaced says it renamed a new file over path (f is then stale): a torn line in the middle is cut that way, so a
// crash leaves one of the two whole; a torn tail is cut in place.
func CutTorn(f *os.File, path string) (rep Repaired, replaced bool, err error) {
	data, err := io.ReadAll(io.NewSectionReader(f, 0, 1<<62))
	if err != nil {
		return rep, false, fmt.Errorf("reading %s: %w", path, err)
	}
	var keep, torn bytes.Buffer
	for rest := data; len(rest) > 0; {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i+1], rest[i+1:]
		} else {
			rest = nil
		}
		if IsTorn(line) {
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
		rep.SavedTo = path + TornSuffix
		if err := appendFile(rep.SavedTo, torn.Bytes()); err != nil {
			return Repaired{}, false, fmt.Errorf("keeping the torn lines of %s: %w", path, err)
		}
	}
	switch {
	case bytes.HasPrefix(data, keep.Bytes()):
		// Only the tail was torn: cut it off in place, with one system call.
		if err := f.Truncate(int64(keep.Len())); err != nil {
			return Repaired{}, false, fmt.Errorf("truncating %s: %w", path, err)
		}
	case keep.Len() == len(data)+1 && bytes.HasPrefix(keep.Bytes(), data):
		if _, err := f.WriteAt([]byte{'\n'}, int64(len(data))); err != nil {
			return Repaired{}, false, fmt.Errorf("%s: %w", path, err)
		}
	default:
		// A torn line in the middle: write the rows to a new file and rename it over the old one, so a crash
		// leaves one of the two whole.
		if err := ReplaceFile(path, keep.Bytes()); err != nil {
			return Repaired{}, false, err
		}
		return rep, true, nil
	}
	if err := f.Sync(); err != nil {
		return Repaired{}, false, fmt.Errorf("%s: %w", path, err)
	}
	return rep, false, nil
}

// IsTorn reports whether a line (with its newline, if it has one) is an unfinished write: JSON cut short. A line
// that is complete JSON, or not JSON at all, is not torn: it is left for the reader to report.
func IsTorn(line []byte) bool {
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
	f, err := OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
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

// ReplaceFile writes b to path through a temporary file, synced, and a rename.
func ReplaceFile(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".repair-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("replacing %s: %w", path, err)
	}
	return nil
}

// RegularOrAbsent returns nil when path is a regular file or does not exist, else an error naming it and what it is
// instead (a symbolic link is not followed), which wraps regularfile.ErrNotAFile.
func RegularOrAbsent(path string) error { return regularfile.CheckOrAbsent(path) }

// OpenFile opens a file of a run folder as os.OpenFile does, refusing a symbolic link at path (never followed: a
// received run folder may link its files anywhere) and anything else that is not a regular file, with an error
// wrapping regularfile.ErrNotAFile. Every run-folder file is opened through it or ReadFile; WriteAtomic and ReplaceFile rename
// a new file over the path, which replaces a link rather than writing through it.
func OpenFile(path string, flag int, perm os.FileMode) (*os.File, error) {
	return regularfile.Open(path, flag, perm)
}

// ReadFile reads a file of a run folder as os.ReadFile does, refusing what OpenFile refuses.
func ReadFile(path string) ([]byte, error) { return regularfile.ReadFile(path) }
