// Package swebench reads task instances of SWE-bench-family datasets as researchers download them (JSONL, a JSON
// list, parquet files or a folder of parquet shards; SWE-bench rows or Multi-SWE-bench rows) and writes them in
// SWE-bench's JSONL format.
//
// It is infrastructure below activities, demobench and the starter; it imports no other ctxlab package.
package swebench

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
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
	// InstallConfig is a SWE-rebench row's own harness spec (its test command and log parser, ...); nil for rows
	// graded by SWE-bench's per-repository table.
	InstallConfig *InstallConfig `json:"install_config,omitempty"`
	// Image is the row's own instance image (SWE-rebench's docker_image, or image_name), used instead of the name
	// ctxlab derives from the instance id.
	Image string `json:"docker_image,omitempty"`
	// Format is FormatMultiSWEBench for rows converted from Multi-SWE-bench (whose images and predictions are named
	// by org, repo and number; see ParseMultiSWEBenchID), empty for SWE-bench rows.
	Format string `json:"format,omitempty"`
	// NoNewFailures are the tests, other than FAIL_TO_PASS and PASS_TO_PASS, that Multi-SWE-bench's harness forbids a
	// fix to fail, read from a Multi-SWE-bench row's run_result and test_patch_result (see decodeMultiSWEBench);
	// empty for other rows.
	NoNewFailures TestList `json:"no_new_failures,omitempty"`
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

// InstallConfig is a SWE-rebench row's install_config, the harness spec of its own: SWE-rebench's fork of the
// harness (SWE-rebench/SWE-bench-fork, swebench/harness/test_spec/test_spec.py make_test_spec) uses it in place of
// SWE-bench's per-repository table (MAP_REPO_VERSION_TO_SPECS), with the same keys: make_env_script_list_py reads
// python, packages, pip_packages, reqs_path, env_yml_path and no_use_env; make_repo_script_list_py pre_install and
// install; make_eval_script_list_py eval_commands, install and test_cmd; grading.py get_logs_eval log_parser. A
// spec states the same for every row in grading.install_config.
type InstallConfig struct {
	// TestCmd is the test command; the test patch's files are appended to its last command. A list (some rows
	// hold one) runs its commands in order, and the harness grades the output of the last.
	TestCmd TestCommands `json:"test_cmd,omitempty"`
	// LogParser names a harness parser ("parse_log_pytest") or a repository whose parser to use.
	LogParser string `json:"log_parser,omitempty"`
	// Install runs again before the tests, as in the harness's eval script; EvalCommands run first of all.
	Install      string     `json:"install,omitempty"`
	EvalCommands StringList `json:"eval_commands,omitempty"`
	// Python is the interpreter's version ("3.9"); Packages is "requirements.txt" (the files of ReqsPath, or
	// requirements.txt), "environment.yml" (conda's, from EnvYmlPath) or a space-separated list of packages;
	// PipPackages are installed with pip after them; PreInstall commands (apt-get install ...) run before Install.
	Python      string     `json:"python,omitempty"`
	Packages    string     `json:"packages,omitempty"`
	PipPackages StringList `json:"pip_packages,omitempty"`
	PreInstall  StringList `json:"pre_install,omitempty"`
	ReqsPath    StringList `json:"reqs_path,omitempty"`
	EnvYmlPath  StringList `json:"env_yml_path,omitempty"`
}

// TestCommands is a test command, written as a string or a list of strings; null is empty.
type TestCommands []string

// UnmarshalJSON accepts a string, a list of strings or null.
func (c *TestCommands) UnmarshalJSON(b []byte) error {
	if strings.TrimSpace(string(b)) == "null" {
		*c = nil
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*c = nil
		if strings.TrimSpace(s) != "" {
			*c = TestCommands{s}
		}
		return nil
	}
	var list []string
	if err := json.Unmarshal(b, &list); err != nil {
		return fmt.Errorf("want a command or a list of commands, got %.40s", b)
	}
	*c = list
	return nil
}

// MarshalJSON writes one command as a string, several as a list.
func (c TestCommands) MarshalJSON() ([]byte, error) {
	if len(c) == 1 {
		return json.Marshal(c[0])
	}
	return json.Marshal([]string(c))
}

// StringList is a list of strings (commands, packages, paths) that reads a list, one string or null, and writes a
// list.
type StringList []string

// UnmarshalJSON accepts a list of strings, a string or null.
func (l *StringList) UnmarshalJSON(b []byte) error {
	var c TestCommands
	if err := c.UnmarshalJSON(b); err != nil {
		return fmt.Errorf("want a list of strings: %w", err)
	}
	*l = StringList(c)
	return nil
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

// repoPart is one part of a repository's owner/name: GitHub's characters, at most 100 of them, not "." or ".." (the
// check below) and not starting with '-' (a name is filled into paths, URLs and git's command line).
var repoPart = regexp.MustCompile(`^[A-Za-z0-9_.][A-Za-z0-9_.-]{0,99}$`)

// CheckRepo checks that repo is a repository's owner/name: a dataset's repo fills a repos template, which must
// never name a folder outside the template's own (a "../" would snapshot any repository on the machine and send it
// to the model).
func CheckRepo(repo string) error {
	owner, name, ok := strings.Cut(repo, "/")
	for _, part := range []string{owner, name} {
		if !ok || !repoPart.MatchString(part) || part == "." || part == ".." {
			shown := repo
			if len(shown) > 80 {
				shown = shown[:80] + "..."
			}
			return fmt.Errorf("%q is not a repository's owner/name (two parts of letters, digits, '.', '_' and '-', "+
				"neither '.' nor '..' nor starting with '-')", shown)
		}
	}
	return nil
}

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
