package runlog

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
)

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
	f, err := os.Open(t.Path)
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
	buf := make([]byte, st.Size()-t.off)
	n, err := f.ReadAt(buf, t.off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	buf = buf[:n]
	end := bytes.LastIndexByte(buf, '\n')
	if end < 0 {
		return nil, nil
	}
	t.off += int64(end + 1)
	var out []T
	for _, line := range bytes.Split(buf[:end], []byte{'\n'}) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var v T
		if json.Unmarshal(line, &v) != nil {
			t.Bad++
			continue
		}
		out = append(out, v)
	}
	return out, nil
}
