package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"ctxlab/internal/jsonl"
	"ctxlab/runfolder"
	"ctxlab/specs"
)

// Row is one results row. Activities contribute fields, so a row is an open map. Each field an activity sets is
// declared once, with its kind, as a typed handle in package specs beside the kind that owns it (specs.Rho,
// specs.Resolved, specs.UsageFields, ...): read it by that handle's Name (or Get). The fields the Issue workflow
// adds itself are declared here (and error_kind, error_class in errorkind.go).
type Row map[string]any

// Fields the Issue workflow sets on every row: its key, and the error that ended it (null when none did).
const (
	FieldInstance = "instance_id"
	FieldMethod   = "method"
	FieldModel    = "model"
	FieldError    = "error"
	// FieldSample is the patch sample a row is of (0 to k-1), set only on the rows of a method that draws k > 1
	// samples (specs.Method.Samples): the rows of a method of one sample have none.
	FieldSample = "sample"
)

// Summed lists the fields that add up over a row's steps (each step's model calls, tokens and cost) instead of
// taking the last step's value: specs.UsageFields, in their order.
var Summed = names(specs.UsageFields)

// Required lists the fields every row has (null when the step that sets them did not run): its key, the declared
// fields marked Required (specs.RequiredFields) and its error.
var Required = slices.Concat([]string{FieldInstance, FieldMethod, FieldModel}, specs.RequiredFields(),
	[]string{FieldError})

func names(fields []specs.RowField) []string {
	out := make([]string, len(fields))
	for i, f := range fields {
		out[i] = f.Name
	}
	return out
}

// Key identifies a row: one per instance, method, model and patch sample (0 for a method of one sample, so that
// its keys, and their JSON in workflow inputs, are what they were before samples).
type Key struct {
	Instance, Method, Model string
	Sample                  int `json:",omitempty"`
}

// Key returns the row's identity.
func (r Row) Key() Key {
	sample, _ := r.Float(FieldSample)
	return Key{r.String(FieldInstance), r.String(FieldMethod), r.String(FieldModel), int(sample)}
}

// ArmKey is the key of an arm's rows (Instance left empty).
func ArmKey(arm specs.Arm) Key { return Key{Method: arm.Method, Model: arm.Model, Sample: arm.Sample} }

// String returns a string field, or "".
func (r Row) String(k string) string {
	s, _ := r[k].(string)
	return s
}

// Float returns a numeric field; false when absent or null.
func (r Row) Float(k string) (float64, bool) {
	switch v := r[k].(type) {
	case float64:
		return v, true
	case int:
		return float64(v), true
	case int64:
		return float64(v), true
	case json.Number:
		f, err := v.Float64()
		return f, err == nil
	}
	return 0, false
}

// Bool returns a boolean field; false when absent or null.
func (r Row) Bool(k string) (value, ok bool) {
	b, ok := r[k].(bool)
	return b, ok
}

// Store appends rows to a results.jsonl file, once per key, safely across processes.
type Store struct {
	Path string
}

// Append writes the rows whose key the file does not hold yet and returns how many it wrote. A retried activity
// calling it again writes nothing twice. The keys already in the file are kept in memory between calls (see
// keyIndex): under the lock only the bytes other processes appended since the last call are read.
func (s Store) Append(rows []Row) (int, error) {
	f, idx, err := s.lockIndexed()
	if err != nil {
		return 0, err
	}
	defer unlock(f)
	defer idx.mu.Unlock()
	var buf bytes.Buffer
	var added []Key
	seen := map[Key]bool{}
	for _, r := range rows {
		k := r.Key()
		if idx.keys[k] || seen[k] {
			continue
		}
		seen[k] = true
		b, err := json.Marshal(r)
		if err != nil {
			return 0, fmt.Errorf("results: row %v: %w", k, err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
		added = append(added, k)
	}
	if len(added) == 0 {
		return 0, nil
	}
	if _, err := f.WriteAt(buf.Bytes(), idx.off); err != nil {
		idx.reset() // part of buf may be in the file: read it again next time
		return 0, fmt.Errorf("results: writing %s: %w", s.Path, err)
	}
	idx.wrote(f, buf.Bytes(), added)
	return len(added), f.Sync()
}

// BadLine is a line of a results file that is not a row.
type BadLine struct {
	Line int
	Err  error
}

// ReadFile reads every row of a results file. Lines that are not rows (a torn last line after a crash) are
// returned separately, never silently dropped.
func ReadFile(path string) ([]Row, []BadLine, error) {
	f, err := runfolder.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("results: %w", err)
	}
	defer f.Close()
	return read(f)
}

func read(r io.Reader) ([]Row, []BadLine, error) {
	var rows []Row
	var bad []BadLine
	_, err := jsonl.Scan(r, jsonl.ReadPartial, func(line int, b []byte) error {
		var row Row
		if err := json.Unmarshal(b, &row); err != nil {
			bad = append(bad, BadLine{Line: line, Err: err})
			return nil
		}
		if !row.keyed() {
			bad = append(bad, BadLine{Line: line, Err: errors.New("row lacks instance_id or method")})
			return nil
		}
		rows = append(rows, row)
		return nil
	})
	return rows, bad, err
}

// keyed reports whether the row has the fields of its key that every row must have.
func (r Row) keyed() bool { return r.String(FieldInstance) != "" && r.String(FieldMethod) != "" }
