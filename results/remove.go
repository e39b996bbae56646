package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"ctxlab/internal/jsonl"
	"ctxlab/runfolder"
)

// Remove takes the rows that drop selects out of the results file, under the lock Append holds, and returns them:
// a re-run that retries a row must find its key free to record the new one. Every other line stays as it was, in
// order. A missing file has nothing to remove.
func (s Store) Remove(drop func(Row) bool) ([]Row, error) {
	f, err := s.lock(false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer unlock(f)
	var kept bytes.Buffer
	var removed []Row
	_, err = jsonl.Scan(io.NewSectionReader(f, 0, 1<<62), jsonl.ReadPartial, func(_ int, line []byte) error {
		var row Row
		if json.Unmarshal(line, &row) == nil && row.String(FieldInstance) != "" && drop(row) {
			removed = append(removed, row)
			return nil
		}
		kept.Write(line)
		kept.WriteByte('\n')
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("results: reading %s: %w", s.Path, err)
	}
	if len(removed) == 0 {
		return nil, nil
	}
	if err := runfolder.ReplaceFile(s.Path, kept.Bytes()); err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	forget(s.Path)
	return removed, nil
}
