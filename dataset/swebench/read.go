package swebench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/parquet-go/parquet-go"
)

// rawRow is one row as read from any layout, before it is decoded: its top-level fields and where it came from.
type rawRow struct {
	fields map[string]json.RawMessage
	file   string
	// line is set for JSONL rows, row (1-based) for JSON-list and parquet rows.
	line, row int
}

func (r rawRow) fail(id, field string, err error) *RowError {
	return &RowError{File: r.file, Line: r.line, Row: r.row, InstanceID: id, Field: field, Err: err}
}

// where says where the row is, for messages that point at another row.
func (r rawRow) where(from string) string {
	pos := fmt.Sprintf("row %d", r.row)
	if r.line > 0 {
		pos = fmt.Sprintf("line %d", r.line)
	}
	if r.file != from {
		pos += " of " + r.file
	}
	return pos
}

// ReadFile reads and validates every row of a dataset: a JSONL file, a JSON list, a parquet file (the Hugging Face
// download layout, data/test-00000-of-00001.parquet), or a folder of shards of one split. Each file's first row says
// whether it holds SWE-bench rows or Multi-SWE-bench rows. The first bad row is an error naming its file, its line or
// row, and the field at fault.
func ReadFile(path string) ([]Instance, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	files := []string{path}
	if st.IsDir() {
		if files, err = shardsOf(path); err != nil {
			return nil, err
		}
	}
	var raws []rawRow
	for _, f := range files {
		rows, err := readRaw(f)
		if err != nil {
			return nil, err
		}
		raws = append(raws, rows...)
	}
	return decodeRows(raws, path)
}

// Read reads and validates rows of a JSONL file or a JSON list; name is used in errors.
func Read(r io.Reader, name string) ([]Instance, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("dataset %s: %w", name, err)
	}
	raws, err := readText(b, name)
	if err != nil {
		return nil, err
	}
	return decodeRows(raws, name)
}

// shardRE matches the Hugging Face shard names, <split>-00000-of-00003.<ext>.
var shardRE = regexp.MustCompile(`^(.+)-\d{5}-of-\d{5}\.[a-z]+$`)

// shardsOf lists a folder's dataset files in name order. A downloaded dataset repository's root (no dataset files,
// a data folder) is read through its data folder. Shards of several splits (dev and test) are an error: grading
// both at once is never what a researcher means.
func shardsOf(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	var files []string
	splits := map[string]bool{}
	for _, e := range entries {
		ext := filepath.Ext(e.Name())
		if e.IsDir() || (ext != ".parquet" && ext != ".jsonl" && ext != ".json") {
			continue
		}
		files = append(files, filepath.Join(dir, e.Name()))
		if m := shardRE.FindStringSubmatch(e.Name()); m != nil {
			splits[m[1]] = true
		}
	}
	if len(files) == 0 {
		if st, err := os.Stat(filepath.Join(dir, "data")); err == nil && st.IsDir() {
			return shardsOf(filepath.Join(dir, "data"))
		}
		return nil, fmt.Errorf("dataset %s: the folder holds no .parquet, .jsonl or .json file", dir)
	}
	if len(splits) > 1 {
		names := slices.Sorted(func(yield func(string) bool) {
			for s := range splits {
				if !yield(s) {
					return
				}
			}
		})
		return nil, fmt.Errorf("dataset %s: the folder holds shards of several splits (%s); name one split's file",
			dir, strings.Join(names, ", "))
	}
	return files, nil
}

// parquetMagic starts (and ends) every parquet file.
var parquetMagic = []byte("PAR1")

func readRaw(path string) ([]rawRow, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	defer f.Close()
	head := make([]byte, len(parquetMagic))
	n, _ := io.ReadFull(f, head)
	if filepath.Ext(path) == ".parquet" || bytes.Equal(head[:n], parquetMagic) {
		return readParquet(f, path)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("dataset %s: %w", path, err)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("dataset %s: %w", path, err)
	}
	return readText(b, path)
}

// readText splits a JSON list or a JSONL file into rows.
func readText(b []byte, name string) ([]rawRow, error) {
	if trimmed := bytes.TrimSpace(b); len(trimmed) > 0 && trimmed[0] == '[' {
		var list []json.RawMessage
		if err := json.Unmarshal(trimmed, &list); err != nil {
			return nil, fmt.Errorf("dataset %s: not a JSON list of rows: %w", name, err)
		}
		rows := make([]rawRow, 0, len(list))
		for i, item := range list {
			r := rawRow{file: name, row: i + 1}
			if err := json.Unmarshal(item, &r.fields); err != nil || r.fields == nil {
				return nil, r.fail("", "", fmt.Errorf("not a JSON object: %.40s", item))
			}
			rows = append(rows, r)
		}
		return rows, nil
	}
	var rows []rawRow
	br := bufio.NewReader(bytes.NewReader(b))
	for line := 1; ; line++ {
		raw, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(raw)) > 0 {
			r := rawRow{file: name, line: line}
			if jerr := json.Unmarshal(raw, &r.fields); jerr != nil || r.fields == nil {
				if jerr == nil {
					jerr = errors.New("null")
				}
				return nil, r.fail("", "", fmt.Errorf("not a JSON object: %w", jerr))
			}
			rows = append(rows, r)
		}
		if errors.Is(err, io.EOF) {
			return rows, nil
		}
		if err != nil {
			return nil, fmt.Errorf("dataset %s: %w", name, err)
		}
	}
}

// readParquet reads every row of a parquet file through the file's own schema, as JSON values: strings stay
// strings, LIST columns become lists and MAP or struct columns objects, so one decoder serves every layout.
func readParquet(f *os.File, path string) (rows []rawRow, err error) {
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("dataset %s: %w", path, err)
	}
	// The library panics on some malformed files rather than returning an error.
	defer func() {
		if p := recover(); p != nil {
			rows, err = nil, fmt.Errorf("dataset %s: not a readable parquet file: %v", path, p)
		}
	}()
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		return nil, fmt.Errorf("dataset %s: not a readable parquet file: %w", path, err)
	}
	reader := parquet.NewGenericReader[any](pf)
	defer reader.Close()
	batch := make([]any, 64)
	next := 1
	for {
		clear(batch)
		n, rerr := reader.Read(batch)
		for _, v := range batch[:n] {
			r := rawRow{file: path, row: next}
			next++
			b, err := json.Marshal(v)
			if err == nil {
				err = json.Unmarshal(b, &r.fields)
			}
			if err != nil {
				return nil, r.fail("", "", fmt.Errorf("row is not a record of JSON values: %w", err))
			}
			rows = append(rows, r)
		}
		if errors.Is(rerr, io.EOF) {
			return rows, nil
		}
		if rerr != nil {
			return nil, fmt.Errorf("dataset %s: reading row %d: %w", path, next, rerr)
		}
	}
}

// decodeRows turns rows into validated instances; each file's first row decides its format.
func decodeRows(raws []rawRow, name string) ([]Instance, error) {
	if len(raws) == 0 {
		return nil, fmt.Errorf("dataset %s: no rows", name)
	}
	formats := map[string]string{}
	seen := map[string]rawRow{}
	out := make([]Instance, 0, len(raws))
	for _, r := range raws {
		format, ok := formats[r.file]
		if !ok {
			format = formatOf(r.fields)
			if format == "" {
				return nil, r.fail("", "", errors.New("neither a SWE-bench row (instance_id) nor a Multi-SWE-bench "+
					"row (org, repo, number, fix_patch)"))
			}
			formats[r.file] = format
		}
		var in Instance
		var err error
		if format == FormatMultiSWEBench {
			in, err = decodeMultiSWEBench(r)
		} else {
			in, err = decodeSWEBench(r)
		}
		if err != nil {
			return nil, err
		}
		if verr := in.Validate(); verr != nil {
			return nil, r.fail(in.InstanceID, "", verr)
		}
		if prev, dup := seen[in.InstanceID]; dup {
			return nil, r.fail(in.InstanceID, "", fmt.Errorf("instance_id repeats the row on %s", prev.where(r.file)))
		}
		seen[in.InstanceID] = r
		out = append(out, in)
	}
	return out, nil
}

// formatOf tells a Multi-SWE-bench row from a SWE-bench row by its fields; "" is neither.
func formatOf(fields map[string]json.RawMessage) string {
	has := func(names ...string) bool {
		for _, n := range names {
			if _, ok := fields[n]; !ok {
				return false
			}
		}
		return true
	}
	switch {
	case has("org", "repo", "number", "fix_patch"):
		return FormatMultiSWEBench
	case has("instance_id"):
		return FormatSWEBench
	}
	return ""
}

// decodeSWEBench decodes the fields ctxlab keeps, one at a time so that an error names its field (SWE-rebench's
// install_config and image field included); other fields are ignored, and absent or null optional fields stay empty.
func decodeSWEBench(r rawRow) (Instance, error) {
	var in Instance
	if err := decodeString(r.fields["instance_id"], &in.InstanceID); err != nil {
		return in, r.fail("", "instance_id", err)
	}
	for _, f := range []struct {
		name string
		dst  *string
	}{
		{"repo", &in.Repo}, {"base_commit", &in.BaseCommit}, {"problem_statement", &in.ProblemStatement},
		{"patch", &in.Patch}, {"test_patch", &in.TestPatch}, {"version", &in.Version},
		{"environment_setup_commit", &in.EnvironmentSetupCommit}, {"created_at", &in.CreatedAt},
		{"hints_text", &in.HintsText},
	} {
		if err := decodeString(r.fields[f.name], f.dst); err != nil {
			return in, r.fail(in.InstanceID, f.name, err)
		}
	}
	if in.Repo != "" {
		if err := CheckRepo(in.Repo); err != nil {
			return in, r.fail(in.InstanceID, "repo", err)
		}
	}
	for _, f := range []struct {
		name string
		dst  *TestList
	}{{"FAIL_TO_PASS", &in.FailToPass}, {"PASS_TO_PASS", &in.PassToPass}} {
		if raw, ok := r.fields[f.name]; ok {
			if err := f.dst.UnmarshalJSON(raw); err != nil {
				return in, r.fail(in.InstanceID, f.name, err)
			}
		}
	}
	cfg, err := decodeInstallConfig(r.fields["install_config"])
	if err != nil {
		return in, r.fail(in.InstanceID, "install_config", err)
	}
	in.InstallConfig = cfg
	// The row's own image: SWE-rebench names it docker_image (image_name in other exports); the first non-empty.
	for _, name := range imageFields {
		if err := decodeString(r.fields[name], &in.Image); err != nil {
			return in, r.fail(in.InstanceID, name, err)
		}
		if in.Image = strings.TrimSpace(in.Image); in.Image != "" {
			break
		}
	}
	return in, nil
}

// imageFields are the fields that may hold a row's own instance image, in the order they are tried.
var imageFields = []string{"docker_image", "image_name"}

// decodeInstallConfig reads SWE-rebench's install_config: an object (JSONL, or a parquet struct column), or a
// string holding one (a parquet string column). Absent, null or empty is nil; so is a config with neither a test command nor a log parser,
// which leaves the row to SWE-bench's table.
func decodeInstallConfig(raw json.RawMessage) (*InstallConfig, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		if strings.TrimSpace(s) == "" {
			return nil, nil
		}
		raw = []byte(s)
	}
	cfg, err := DecodeInstallConfig(raw)
	if err != nil || len(cfg.TestCmd) == 0 && cfg.LogParser == "" {
		return nil, err
	}
	return cfg, nil
}

// DecodeInstallConfig reads an install_config object (a row's, or a spec's grading.install_config). Keys it does
// not know (docker_specs, no_use_env) are ignored, and a number where a string belongs (python: 3.9) keeps its
// literal text.
func DecodeInstallConfig(raw json.RawMessage) (*InstallConfig, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, fmt.Errorf("want an object with test_cmd and log_parser: %w", err)
	}
	if v, ok := fields["python"]; ok {
		var version string
		if err := decodeString(v, &version); err != nil {
			return nil, fmt.Errorf("python: %w", err)
		}
		fields["python"], _ = json.Marshal(version)
	}
	b, _ := json.Marshal(fields)
	var cfg InstallConfig
	if err := json.Unmarshal(b, &cfg); err != nil {
		return nil, fmt.Errorf("want an object with test_cmd and log_parser: %w", err)
	}
	return &cfg, nil
}

// decodeString reads a string field; absent and null are empty, and a number (a version such as 3.0 written by a
// tool that guessed its type) keeps its literal text.
func decodeString(raw json.RawMessage, dst *string) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		*dst = ""
		return nil
	}
	if err := json.Unmarshal(raw, dst); err == nil {
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err == nil {
		*dst = n.String()
		return nil
	}
	return fmt.Errorf("want a string, got %.40s", raw)
}

// Format names of the row layouts ReadFile reads.
const (
	FormatSWEBench      = "swe-bench"
	FormatMultiSWEBench = "multi-swe-bench"
)
