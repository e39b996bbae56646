package tabular

import (
	"encoding/csv"
	"fmt"
	"io"
)

// CSVOptions control FromCSV.
type CSVOptions struct {
	// Comma is the field separator; 0 means ','.
	Comma rune
	// NoHeader treats the first record as data; the columns then have no headers.
	NoHeader bool
	// MaxRows stops reading after this many data rows; 0 means no limit.
	MaxRows int
}

// FromCSV reads a table from CSV. Records may have different numbers of fields.
func FromCSV(r io.Reader, opts CSVOptions) (*Table, error) {
	cr := csv.NewReader(r)
	if opts.Comma != 0 {
		cr.Comma = opts.Comma
	}
	cr.FieldsPerRecord = -1
	cr.LazyQuotes = true
	t := New()
	first := true
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("tabular: reading CSV: %w", err)
		}
		if first && !opts.NoHeader {
			t.headers = rec
			first = false
			continue
		}
		first = false
		t.AddRow(rec...)
		if opts.MaxRows > 0 && t.Rows() >= opts.MaxRows {
			break
		}
	}
	return t, nil
}
