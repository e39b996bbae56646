// Package swebench reads and writes task instances in SWE-bench's JSONL format.
package swebench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// Instance is one row of a SWE-bench-format dataset.
type Instance struct {
	InstanceID       string `json:"instance_id"`
	Repo             string `json:"repo"`
	BaseCommit       string `json:"base_commit"`
	ProblemStatement string `json:"problem_statement"`
	Patch            string `json:"patch"`
	TestPatch        string `json:"test_patch"`
	// FailToPass and PassToPass are test names. SWE-bench stores them as JSON-encoded strings of lists; both that
	// form and a plain list are read.
	FailToPass TestList `json:"FAIL_TO_PASS"`
	PassToPass TestList `json:"PASS_TO_PASS"`
	// Optional fields of SWE-bench rows that ctxlab keeps but does not need.
	Version                string `json:"version,omitempty"`
	EnvironmentSetupCommit string `json:"environment_setup_commit,omitempty"`
	CreatedAt              string `json:"created_at,omitempty"`
	HintsText              string `json:"hints_text,omitempty"`
}

// TestList is a list of test names that reads both ["a","b"] and "[\"a\",\"b\"]".
type TestList []string

// UnmarshalJSON accepts a list or a string holding a JSON list.
func (t *TestList) UnmarshalJSON(b []byte) error {
	var list []string
	if err := json.Unmarshal(b, &list); err == nil {
		*t = list
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("want a list of test names or a string holding one, got %.40s", b)
	}
	if strings.TrimSpace(s) == "" {
		*t = nil
		return nil
	}
	if err := json.Unmarshal([]byte(s), &list); err != nil {
		return fmt.Errorf("string is not a JSON list of test names: %.40s", s)
	}
	*t = list
	return nil
}

// MarshalJSON writes the SWE-bench form: a string holding a JSON list.
func (t TestList) MarshalJSON() ([]byte, error) {
	list := []string(t)
	if list == nil {
		list = []string{}
	}
	inner, err := json.Marshal(list)
	if err != nil {
		return nil, err
	}
	return json.Marshal(string(inner))
}

// RowError names the row of a dataset file at fault.
type RowError struct {
	File       string
	Line       int
	InstanceID string
	Err        error
}

func (e *RowError) Error() string {
	id := ""
	if e.InstanceID != "" {
		id = " (instance " + e.InstanceID + ")"
	}
	return fmt.Sprintf("%s:%d%s: %v", e.File, e.Line, id, e.Err)
}

func (e *RowError) Unwrap() error { return e.Err }

// Validate checks the fields every ctxlab run needs.
func (in *Instance) Validate() error {
	var missing []string
	for _, f := range []struct{ name, v string }{
		{"instance_id", in.InstanceID}, {"repo", in.Repo}, {"base_commit", in.BaseCommit},
		{"problem_statement", in.ProblemStatement}, {"patch", in.Patch}, {"test_patch", in.TestPatch},
	} {
		if strings.TrimSpace(f.v) == "" {
			missing = append(missing, f.name)
		}
	}
	if len(in.FailToPass) == 0 {
		missing = append(missing, "FAIL_TO_PASS")
	}
	if len(missing) > 0 {
		return fmt.Errorf("row lacks required fields: %s", strings.Join(missing, ", "))
	}
	return nil
}

// ReadFile reads and validates every row of a JSONL file. The first bad row is an error naming its line.
func ReadFile(path string) ([]Instance, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	defer f.Close()
	return Read(f, path)
}

// Read reads and validates JSONL rows; name is used in errors.
func Read(r io.Reader, name string) ([]Instance, error) {
	br := bufio.NewReader(r)
	var out []Instance
	seen := map[string]int{}
	for line := 1; ; line++ {
		raw, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(raw)) > 0 {
			var in Instance
			dec := json.NewDecoder(bytes.NewReader(raw))
			if derr := dec.Decode(&in); derr != nil {
				return nil, &RowError{File: name, Line: line, Err: fmt.Errorf("not a JSON object: %w", derr)}
			}
			if verr := in.Validate(); verr != nil {
				return nil, &RowError{File: name, Line: line, InstanceID: in.InstanceID, Err: verr}
			}
			if prev, dup := seen[in.InstanceID]; dup {
				return nil, &RowError{File: name, Line: line, InstanceID: in.InstanceID,
					Err: fmt.Errorf("instance_id repeats the row on line %d", prev)}
			}
			seen[in.InstanceID] = line
			out = append(out, in)
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("dataset %s: %w", name, err)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("dataset %s: no rows", name)
	}
	return out, nil
}

// Write writes rows as JSONL.
func Write(w io.Writer, rows []Instance) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for i := range rows {
		if err := enc.Encode(&rows[i]); err != nil {
			return err
		}
	}
	return nil
}
