// Package jsonl reads JSON-lines files: one JSON value per line, as the run folder's records (results.jsonl,
// attempts.jsonl, calls.jsonl) are written by appenders in several processes. One reader serves a finished file and
// a growing one: it reports how far it read, so a caller can come back for what was appended since, and it says what
// to do with a last line that has no newline yet (torn by a killed process, or still being written).
package jsonl

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"ctxlab/internal/regularfile"
)

// Partial says what Scan does with a last line that has no newline.
type Partial int

const (
	// ReadPartial passes it on like any other line: a reader of a file that stopped growing sees (and reports) a
	// line a killed process tore.
	ReadPartial Partial = iota
	// LeavePartial leaves it unread, before the offset Scan returns: a reader of a growing file reads it once it is
	// whole.
	LeavePartial
)

// Scan calls fn with each non-blank line of r (without its newline) and its 1-based number among all the lines read,
// blank ones included. It returns how many bytes it consumed: every line it passed or skipped, so reading again from
// that offset reads only what came after. An error of fn stops the scan and is returned.
func Scan(r io.Reader, partial Partial, fn func(num int, line []byte) error) (consumed int64, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	for num := 1; ; num++ {
		line, rerr := br.ReadBytes('\n')
		if rerr != nil && !errors.Is(rerr, io.EOF) {
			return consumed, rerr
		}
		whole := len(line) > 0 && line[len(line)-1] == '\n'
		if !whole && (partial == LeavePartial || len(line) == 0) {
			return consumed, nil
		}
		consumed += int64(len(line))
		if text := bytes.TrimSpace(line); len(text) > 0 {
			if err := fn(num, text); err != nil {
				return consumed, err
			}
		}
		if rerr != nil {
			return consumed, nil
		}
	}
}

// Decode decodes each non-blank line of r into a T, from offset 0 of r; lines that do not decode are passed to bad
// (when not nil) with their number and skipped. It returns the records and the bytes consumed, as Scan does.
func Decode[T any](r io.Reader, partial Partial, bad func(num int, err error)) ([]T, int64, error) {
	var out []T
	n, err := Scan(r, partial, func(num int, line []byte) error {
		var v T
		if err := json.Unmarshal(line, &v); err != nil {
			if bad != nil {
				bad(num, err)
			}
			return nil
		}
		out = append(out, v)
		return nil
	})
	return out, n, err
}

// ReadFile decodes every line of the file at path into T, its last line included even without a newline. A missing
// file is empty. bad counts the lines that did not decode (the torn last line of a killed process).
func ReadFile[T any](path string) (out []T, bad int, err error) {
	f, err := regularfile.Open(path, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	out, _, err = Decode[T](f, ReadPartial, func(int, error) { bad++ })
	if err != nil {
		return out, bad, fmt.Errorf("reading %s: %w", path, err)
	}
	return out, bad, nil
}

// Tail reads a JSON-lines file as it grows: each Next returns the whole lines appended since the previous call, so
// a progress display does not re-read a long file every second. A line still being written is left for the next
// call; a file that shrank (replaced or put aside) is read again from the start.
type Tail[T any] struct {
	Path string
	// Bad counts lines that did not decode.
	Bad int
	off int64
}

// Next returns the records appended since the last call. A missing file has none.
func (t *Tail[T]) Next() ([]T, error) {
	f, err := regularfile.Open(t.Path, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		t.off = 0
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() < t.off {
		t.off = 0
	}
	if st.Size() == t.off {
		return nil, nil
	}
	out, n, err := Decode[T](io.NewSectionReader(f, t.off, st.Size()-t.off), LeavePartial,
		func(int, error) { t.Bad++ })
	t.off += n
	if err != nil {
		return out, fmt.Errorf("reading %s: %w", t.Path, err)
	}
	return out, nil
}
