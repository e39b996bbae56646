// Package executor runs one grading attempt: the prepare, apply and run stages of package grading. It prepares a
// fresh copy of an instance's repository with the test files saved to be reset (worktree.go), applies the model
// patch and then the test patch (apply.go), and runs the listed tests, contained, their output parsed by package
// testlog. Two executors exist: Local (local.go: a temporary worktree on this machine; Go through package testrun's
// go test, Python through pytest -rA or unittest -v started by ctxlab's Python runner, pyrunner.go, in the
// environment a row states, pyenv.go) and Docker (docker.go: SWE-bench / SWE-rebench instance images through the
// docker CLI, with the harness's eval script, evalscript.go and harnessspecs.go, and ctxlab's results channel,
// resultschannel.go). Executors run and parse; testlog.DecideInstance gives the verdict, package grading the status.
package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"ctxlab/dataset/swebench"
	"ctxlab/grading/testlog"
	"ctxlab/patch/diff"
)

// Config is the grading section of a spec, as far as executors need it.
type Config struct {
	// TestCmd replaces the default test command (local Python and docker); test files are appended to it.
	TestCmd string `json:"test_cmd,omitempty"`
	// TestCmds are commands by language (LangGo, LangPython) or by repository ("owner/name"); see TestCmdFor.
	TestCmds map[string]string `json:"test_cmds,omitempty"`
	// ModelTests is ModelTestsDrop (or empty) or ModelTestsKeep: what becomes of the model patch's test files.
	ModelTests string `json:"model_tests,omitempty"`
	// Tests is TestsFiles (or empty) or TestsListed: which Python tests run.
	Tests string `json:"tests,omitempty"`
	// Isolation is "sandbox" (or empty) or "none": whether the local executor confines the code under test.
	Isolation string `json:"isolation,omitempty"`
	// LogParser names the testlog parser (gotest, pytest, unittest); empty: chosen from the command.
	LogParser string `json:"log_parser,omitempty"`
	// Python is the interpreter for local Python tests (default: python3, else /usr/bin/python3, one with pytest).
	Python string `json:"python,omitempty"`
	// Namespace of the instance images (docker; default "swebench").
	Namespace string `json:"namespace,omitempty"`
	// Network of the container (docker; default "none": model-written code gets no network).
	Network string `json:"network,omitempty"`
	// Docker is the docker program (default "docker" on PATH).
	Docker string `json:"docker,omitempty"`
	// GoProxy is the GOPROXY for downloading a Go module's requirements (local; empty: the worker's).
	GoProxy string `json:"goproxy,omitempty"`
	// InstallConfig states the Python environment of every instance whose row states none (a SWE-rebench
	// install_config object: test_cmd, log_parser, eval_commands, install, pre_install, packages, pip_packages,
	// python), honoured by both executors.
	InstallConfig json.RawMessage `json:"install_config,omitempty"`
	// PythonWheels is a folder of wheels, or a package index URL, from which the local executor installs what a
	// stated environment needs and this machine lacks, offline (empty: only what the machine has).
	PythonWheels string `json:"python_wheels,omitempty"`
}

// Request is one grading attempt.
type Request struct {
	Instance swebench.Instance
	Patch    string
	// Materialize writes the repository at base_commit into an empty folder (Local only).
	Materialize func(ctx context.Context, dir string) error
	Timeout     time.Duration
	OutputCap   int
	Heartbeat   func()
	Config      Config
}

// Result of an attempt. When the model patch did not apply, Ran is false and nothing else but Apply is set.
type Result struct {
	Apply    diff.Report
	ApplyErr string
	Ran      bool
	Output   []byte
	Report   testlog.Report
	TimedOut bool
	Duration time.Duration
	Command  []string
	// Note says what else was seen (harness markers missing, ...).
	Note string
	// Isolation is how the tests were confined: "namespaces" (package sandbox), "container" (docker) or "none".
	Isolation string
	// ExitCode is the test command's exit status, as the runner's own code saw it (never read from the output),
	// when ExitCodeKnown: the docker eval script's record of it, or the local test command's. SWE-bench 5.0's
	// exit-code rule (CheckHarnessRules) reads it.
	ExitCode      int
	ExitCodeKnown bool
	// TestFilesDropped are the test files (IsTestFile, or the test patch's) the model patch changed and that were
	// reset to base_commit before the tests ran; ModelTestFiles are those it wrote that stayed (ModelTestsKeep), so
	// a runner can tell model-written tests from the repository's.
	TestFilesDropped []string
	ModelTestFiles   []string
}

// Executor runs grading attempts.
type Executor interface {
	Run(ctx context.Context, r Request) (Result, error)
}

// ErrTestPatch marks an instance whose own test patch does not apply: the dataset row is at fault, not the model.
var ErrTestPatch = errors.New("test patch does not apply")

// New returns the executor of a name: local or docker.
func New(name string) (Executor, error) {
	switch name {
	case "", "local":
		return Local{}, nil
	case "docker":
		return Docker{}, nil
	}
	return nil, fmt.Errorf("unknown grading executor %q (known: local, docker)", name)
}

// TestFiles lists the files a test patch touches, as the harness's get_test_directives does.
func TestFiles(testPatch string) []string {
	files, err := diff.ChangedFiles(testPatch)
	if err != nil {
		return nil
	}
	return files
}

// parserFor picks the log parser from the config or the command.
func parserFor(cfg Config, cmd string) string {
	if cfg.LogParser != "" {
		return cfg.LogParser
	}
	switch {
	case strings.Contains(cmd, "pytest"):
		return testlog.ParserPytest
	case strings.Contains(cmd, "runtests.py"), strings.Contains(cmd, "unittest"):
		return testlog.ParserUnittest
	case strings.Contains(cmd, "go test"):
		return testlog.ParserGo
	}
	return testlog.ParserPytest
}
