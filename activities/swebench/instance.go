// Package swebench reads task instances of SWE-bench-family datasets as researchers download them (JSONL, a JSON
// list, parquet files or a folder of parquet shards; SWE-bench rows or Multi-SWE-bench rows) and writes them in
// SWE-bench's JSONL format.
package swebench

import (
	"encoding/json"
	"fmt"
	"io"
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
	// Format is FormatMultiSWEBench for rows converted from Multi-SWE-bench (whose images and predictions are named
	// by org, repo and number; see ParseMultiSWEBenchID), empty for SWE-bench rows.
	Format string `json:"format,omitempty"`
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

// RowError names the row of a dataset file at fault: its line in a JSONL file, or its position in a JSON list or a
// parquet file, and the field when one field is at fault.
type RowError struct {
	File string
	// Line is the row's line in a JSONL file; Row its 1-based position in a JSON list or parquet file.
	Line, Row  int
	InstanceID string
	Field      string
	Err        error
}

func (e *RowError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	switch {
	case e.Line > 0:
		fmt.Fprintf(&b, ":%d", e.Line)
	case e.Row > 0:
		fmt.Fprintf(&b, ": row %d", e.Row)
	}
	if e.InstanceID != "" {
		b.WriteString(" (instance " + e.InstanceID + ")")
	}
	if e.Field != "" {
		b.WriteString(": field " + e.Field)
	}
	fmt.Fprintf(&b, ": %v", e.Err)
	return b.String()
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
