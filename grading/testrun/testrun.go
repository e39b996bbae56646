// Package testrun runs a repository's tests for grading, contained: in its own process group that is killed as a
// whole on timeout or cancellation, with an environment built from an allowlist (no credentials of the worker reach
// the tests), and with captured output capped. Outcomes come from per-test events (package testlog), never from an
// exit code.
//
// Go tests are not run through `go test ./...`, but as go test runs them. The grader downloads the module's
// requirements once (GOPROXY from Options.GoProxy; no version control), builds the needed packages' test binaries
// itself (`go test -c -json`, offline; linked without debug info, as go test links what it runs), runs every binary
// as go test runs it (named <pkg>.test, in its package folder, with go test's -test.flag=value arguments, the
// toolchain first on PATH and the build's go environment) with -test.v=test2json and only the listed tests, and
// converts its output with the toolchain's test2json (run from its binary, which `go tool -n` names), primed so
// that only framing lines carrying the testing package's ^V marker count. With isolation the download, the builds
// and the tests all run in the sandbox as its uid (gobox.go), since building reads what the model wrote. The test
// names are checked against what go test would run, found statically (go/parser and go/doc; a `go test -list`
// would need the package to compile at base, which FAIL_TO_PASS tests often do not) in the package's _test.go
// files other than Options.ExcludeTestFiles: tests, fuzz targets (their seeds run as subtests) and examples with
// an output comment. A result for an undeclared name is dropped (Report.Undeclared), so it counts as missing, unless
// a declared test was running when it was reported (an inner runner's: testing.RunTests called from a test). The
// repository's modules (GoLayout: nested ones too) are read before the model patch, and each package is built and
// run in its own module.
//
// Python commands (Options.Command with a pytest or unittest parser) are read from their output, or, with
// Options.Results, only from the results file ctxlab's Python helpers write (testlog.ParseResults), which the tests
// cannot reach by name: then nothing they print is a result.
//
// What remains forgeable, and why: code that runs inside the test binary owns its stdout. A TestMain, or an init()
// in any file of the package or of a package it imports (test files or not), can print marked framing for declared
// tests and exit 0 without running them; the marker and the static list only stop plain-text "--- PASS" lines and
// invented names. Dropping the model's own test files (the executor's job) removes TestMain and test-file init()s
// from the model's reach; a non-test init() that fakes framing is still possible, and only a reviewer or a run in
// which the tests' results are reported out of band (not through the binary's stdout) would catch it.
package testrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode"

	"ctxlab/grading/sandbox"
	"ctxlab/grading/testlog"
)

// Defaults for Options.
const (
	DefaultTimeout        = 10 * time.Minute
	DefaultOutputCap      = 1 << 20
	DefaultHeartbeatEvery = 2 * time.Second
)

// drainWait is how long output is still read after the process group was killed; a descendant that escaped the
// group (setsid) and holds the pipe open cannot delay the result longer than this.
const drainWait = 3 * time.Second

// Options configures one run.
type Options struct {
	// Dir is the repository to test: the packages of its modules (the root's and nested ones) are searched for the
	// tests.
	Dir string
	// Tests are the test names to run: bare ("TestA", "TestA/sub"), run in every package that declares TestA, or
	// package-qualified ("import/path::TestA", "./pkg::TestA", "pkg/sub::TestA/sub"), run in that package only. A
	// subtest runs through its top-level test. Empty runs every declared test.
	Tests []string
	// Timeout for the whole run, build included (default DefaultTimeout). At the deadline the process group is
	// killed and Result.TimedOut is set.
	Timeout time.Duration
	// OutputCap bounds Result.Output in bytes (default DefaultOutputCap); the head and the tail are kept. The Report
	// is parsed from the full stream, so the cap never loses test results.
	OutputCap int
	// Heartbeat, if set, is called every HeartbeatEvery while the tests run, from a separate goroutine, and never
	// after Go returns.
	Heartbeat func()
	// HeartbeatEvery defaults to DefaultHeartbeatEvery.
	HeartbeatEvery time.Duration
	// Command, when set, is run instead of go test (argv; the program is looked up on PATH), and its output is read
	// with the testlog parser named by Parser (testlog.ParserPytest, ParserUnittest, ParserGo).
	Command []string
	Parser  string
	// ExtraEnv ("K=V") is added after the allowlisted environment and wins over it (including over the forced
	// GOTOOLCHAIN and GOPROXY), since it is the caller's explicit choice.
	ExtraEnv []string
	// ExcludeTestFiles are _test.go files (slash-separated, relative to Dir) whose test functions do not count as
	// declared: the model's own test files, when a study keeps them. A test reported from such a file only is
	// dropped from the Report (see Report.Undeclared).
	ExcludeTestFiles []string
	// Layout is how the repository's Go code is built (its modules, vendoring, workspace), as read before the model
	// patch (see GoLayout); nil reads it from Dir.
	Layout *GoLayout
	// TestPatchFiles are the files the instance's test patch touches (slash-separated, relative to Dir): a bare test
	// name runs in the modules holding them when one of their packages declares it (see selectTests).
	TestPatchFiles []string
	// GoProxy is the GOPROXY for downloading the module's requirements before the offline build (a URL list, or
	// file:///folder); empty: the worker's own GOPROXY.
	GoProxy string
	// Isolate runs the code under test (and for Go the module download and the builds) in a sandbox (package sandbox: a dedicated uid in its own pid, mount and
	// network namespaces) where this process may make one, and as today (own process group) elsewhere;
	// Result.Isolation says which. It chowns Dir to the sandbox's uid.
	Isolate bool
	// ReadOnly folders stay visible, read-only, inside the sandbox (an interpreter under the grader's home).
	ReadOnly []string
	// Results, when set, is a file in Dir that the command's results plugin writes (ctxlab's pytest plugin or
	// unittest runner; see testlog.ParseResults). Run creates it empty before the sandbox is made (so the tests' uid
	// owns it), holds it open, passes its path in ResultsEnv and, after the command ends, reads the Report from its
	// own descriptor, whatever became of the file's name; the output is then only kept, never parsed.
	Results string
	// OutputIfUnclaimed parses the output with Parser when no process claimed the results file (a command that
	// starts no test runner ctxlab's helpers can see: a script, tox with an environment of its own). A claimed
	// file is the only source of results, even if its runner ended before its session started.
	OutputIfUnclaimed bool
}

// ResultsEnv names the variable that tells ctxlab's Python helpers where the results file is; they remove it from
// the environment before any test runs.
const ResultsEnv = "CTXLAB_RESULTS"

// Result of a run.
type Result struct {
	// Output is stdout and stderr together, capped (see Options.OutputCap).
	Output []byte
	// OutputBytes is the size of the whole output, before capping.
	OutputBytes int64
	// Report holds the per-test outcomes parsed from the full output.
	Report   testlog.Report
	TimedOut bool
	// ExitCode of `go test`; -1 when it was killed by a signal. Informational only: grade with testlog.Decide.
	ExitCode int
	Duration time.Duration
	// Args is the command line that ran.
	Args []string
	// Isolation is how the code under test was confined: sandbox.IsolationNamespaces, or IsolationNone (its own
	// process group and an allowlisted environment only).
	Isolation string
	// Note says what else was seen (the results plugin never started).
	Note string
}

// AllowedEnv names the variables passed from the worker's environment to the tests; nothing else is.
var AllowedEnv = []string{"PATH", "HOME", "GOCACHE", "GOPATH", "GOMODCACHE", "GOROOT", "TMPDIR", "GOFLAGS", "CGO_ENABLED"}

// ForcedEnv is set whatever the worker's environment says: the local toolchain only, no module downloads.
var ForcedEnv = []string{"GOTOOLCHAIN=local", "GOPROXY=off"}

// Go runs the listed Go tests of the module in o.Dir (see the package comment), or o.Command when set. A timeout is
// reported in the Result, not as an error. Errors are for a run that could not start, and for cancellation of ctx
// (the partial Result is returned with it).
func Go(ctx context.Context, o Options) (Result, error) { return Run(ctx, o) }

// Run runs o.Command in o.Dir, contained as the package comment says, and parses its output with o.Parser; with no
// Command it runs the Go tests of the module in o.Dir (runGo).
func Run(ctx context.Context, o Options) (Result, error) {
	if o.Dir == "" {
		return Result{}, errors.New("testrun: no folder to test")
	}
	if fi, err := os.Stat(o.Dir); err != nil || !fi.IsDir() {
		return Result{}, fmt.Errorf("testrun: %s is not a folder: %v", o.Dir, err)
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	capBytes := o.OutputCap
	if capBytes <= 0 {
		capBytes = DefaultOutputCap
	}
	stopHeartbeat := startHeartbeat(o)
	defer stopHeartbeat()
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if len(o.Command) == 0 {
		return runGo(ctx, runCtx, o, newCapBuffer(capBytes))
	}
	return runCommand(ctx, runCtx, o, newCapBuffer(capBytes))
}

// runCommand runs o.Command in o.Dir, in the run's sandbox, and reads its report from the output as it comes (or,
// with o.Results, from the results file once it ends). runCtx bounds the run.
func runCommand(ctx, runCtx context.Context, o Options, out *capBuffer) (Result, error) {
	prog, args := o.Command[0], o.Command[1:]
	bin, err := exec.LookPath(prog)
	if err != nil {
		return Result{}, fmt.Errorf("testrun: %s command: %w", prog, err)
	}
	start := time.Now()
	parser, env := o.Parser, o.ExtraEnv
	var results *os.File
	if o.Results != "" {
		if results, err = createResults(o.Results); err != nil {
			return Result{}, err
		}
		defer results.Close()
		env = append(slices.Clone(env), ResultsEnv+"="+o.Results)
		if !o.OutputIfUnclaimed {
			parser = testlog.ParserNone
		}
	}
	box, err := newBox(o)
	if err != nil {
		return Result{}, err
	}
	defer box.Close()
	p, err := startContained(runCtx, box, append([]string{bin}, args...), o.Dir, Env(env))
	if err != nil {
		return Result{}, fmt.Errorf("testrun: starting %s in %s: %w", prog, o.Dir, err)
	}
	rep, exit, parseErr := p.report(parser, out)
	var note string
	if results != nil && parseErr == nil {
		rep, note, parseErr = resultsReport(results, rep, o.OutputIfUnclaimed)
	}
	res := Result{
		Output:      out.Bytes(),
		OutputBytes: out.total,
		Report:      rep,
		ExitCode:    exit,
		Duration:    time.Since(start),
		Args:        append([]string{prog}, args...),
		Isolation:   box.Isolation(),
		Note:        note,
	}
	if ctx.Err() != nil {
		return res, fmt.Errorf("testrun: cancelled: %w", ctx.Err())
	}
	res.TimedOut = p.killed.Load() && errors.Is(runCtx.Err(), context.DeadlineExceeded)
	// A pipe we closed ourselves (a descendant outside the group held it open) ends the stream early but cleanly.
	if parseErr != nil && !errors.Is(parseErr, os.ErrClosed) {
		return res, fmt.Errorf("testrun: %w", parseErr)
	}
	return res, nil
}

// resultsReport is the run's report from the results file (read from its start): the file's, when a process
// claimed it, else fromOutput (the output's, with OutputIfUnclaimed) or nothing, with a note saying why.
func resultsReport(results *os.File, fromOutput testlog.Report, outputIfUnclaimed bool) (testlog.Report, string, error) {
	fi, err := results.Stat()
	if err != nil {
		return testlog.Report{}, "", err
	}
	if fi.Size() == 0 && outputIfUnclaimed {
		return fromOutput, "no test runner claimed ctxlab's results file (the command starts none ctxlab's " +
			"shims see), so results were read from the output", nil
	}
	rep, started, err := testlog.ParseResults(results)
	if !started {
		return rep, "the test runner never started ctxlab's results plugin, so no result was read " +
			"(results are never read from the output)", err
	}
	return rep, "", err
}

// report parses the process's output with parser as it comes, keeping it in out, until the process ends (wait).
func (p *contained) report(parser string, out *capBuffer) (rep testlog.Report, exit int, parseErr error) {
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		rep, parseErr = testlog.Parse(parser, io.TeeReader(p.out, out))
		_, _ = io.Copy(out, p.out) // keep draining if the parser stopped early
	}()
	exit = p.wait(readDone)
	return rep, exit, parseErr
}

// createResults makes the results file, which must not exist yet (a name the patch could have prepared, a link,
// is refused), and returns it opened for reading: what is read from it after the run is what was written to this
// file, even if the tests removed or replaced its name.
func createResults(name string) (*os.File, error) {
	w, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("testrun: results file: %w", err)
	}
	defer w.Close()
	r, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("testrun: results file: %w", err)
	}
	return r, nil
}

// contained is a started process running code the model may have written; its stdout and stderr come out of out.
type contained struct {
	cmd    *exec.Cmd
	out    *os.File
	killed atomic.Bool // by ctx: cancellation or the deadline
}

// newBox is the sandbox of a run: isolated when o.Isolate asks and this process can make one, a plain process group
// otherwise. The grader's GOROOT, build and module caches stay readable (tests that run the go command), never
// writable, so graded code cannot poison later builds.
func newBox(o Options, readOnly ...string) (*sandbox.Box, error) {
	so := sandbox.Options{Disable: !o.Isolate}
	if o.Isolate {
		dirs := append(append(append([]string{}, o.ReadOnly...), readOnly...), goDirs()...)
		if len(o.Command) > 0 {
			dirs = append(dirs, CommandFolders(o.Command[0], o.Dir)...)
		}
		for _, d := range dirs {
			if fi, err := os.Stat(d); err == nil && fi.IsDir() && sandbox.Reachable(d) {
				so.ReadOnly = append(so.ReadOnly, d)
			}
		}
	}
	box, err := sandbox.New(o.Dir, so)
	if err != nil {
		return nil, fmt.Errorf("testrun: %w", err)
	}
	return box, nil
}

// CommandFolders are the folders the sandbox must show for prog to run, when no place of its Layout holds it: the
// folder right under the worker's home holding it (a pyenv, whose shims run its libexec), or else the folder above
// its bin folder (a virtualenv's or an interpreter's prefix, where pyvenv.cfg and the standard library lie); for
// the program's path and for what it links to. A folder holding the worktree or the temp folder (where the other
// grades' worktrees lie) is never one.
func CommandFolders(prog, worktree string) []string {
	p, err := exec.LookPath(prog)
	if err != nil {
		return nil
	}
	home, err := os.UserHomeDir()
	if err != nil || !filepath.IsAbs(home) || home == "/" {
		home = ""
	}
	var dirs []string
	for _, cand := range []string{p, evalSymlinks(p)} {
		abs, err := filepath.Abs(cand)
		if err != nil || sandbox.HostShows(abs) {
			continue
		}
		dir := filepath.Dir(filepath.Dir(abs))
		if rel, ok := strings.CutPrefix(abs, home+string(filepath.Separator)); ok && home != "" {
			top, _, _ := strings.Cut(rel, string(filepath.Separator))
			dir = filepath.Join(home, top)
		} else if dir == "/" {
			dir = filepath.Dir(abs)
		}
		if !holds(dir, worktree) && !holds(dir, os.TempDir()) {
			dirs = append(dirs, dir)
		}
	}
	return dirs
}

// holds says whether the folder dir is p or lies above it.
func holds(dir, p string) bool {
	rel, err := filepath.Rel(dir, evalSymlinks(p))
	return err == nil && filepath.IsLocal(rel)
}

func evalSymlinks(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

// goDirs are the go command's folders, as the tests see them (Env).
func goDirs() []string {
	var dirs []string
	for _, kv := range Env(nil) {
		k, v, _ := strings.Cut(kv, "=")
		if (k == "GOROOT" || k == "GOCACHE" || k == "GOMODCACHE") && filepath.IsAbs(v) {
			dirs = append(dirs, v)
		}
	}
	if r := runtime.GOROOT(); r != "" {
		dirs = append(dirs, r)
	}
	return dirs
}

// startContained starts argv (argv[0] a path) with cwd dir and environment env in box (every process of the run
// killed as a whole when ctx ends), with stdout and stderr into one pipe. It is the one place where
// model-influenced code (a test command, a test binary) is started; anything it runs must only need dir and argv[0]
// readable and executable by the box's uid.
func startContained(ctx context.Context, box *sandbox.Box, argv []string, dir string, env []string) (*contained, error) {
	p := &contained{}
	cmd, err := box.Command(ctx, argv, env, dir)
	if err != nil {
		return nil, err
	}
	boxCancel := cmd.Cancel
	cmd.Cancel = func() error {
		p.killed.Store(true)
		return boxCancel()
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = pw
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		return nil, err
	}
	pw.Close() // the children hold the write end now
	p.cmd, p.out = cmd, pr
	return p, nil
}

// wait waits for the process, kills whatever is left of its group, then waits for readDone (the end of reading
// p.out); when a process outside the group still holds the pipe after drainWait, the pipe is closed under it. It
// returns the exit code (-1 for a signal).
func (p *contained) wait(readDone <-chan struct{}) int {
	_ = p.cmd.Wait() // the outcome is read from the output; the exit code is informational
	// Whatever happened, nothing the tests started may outlive the run.
	_ = killGroup(p.cmd.Process.Pid)
	select {
	case <-readDone:
	case <-time.After(drainWait):
		p.out.Close()
		<-readDone
	}
	p.out.Close()
	return p.cmd.ProcessState.ExitCode()
}

// startHeartbeat calls o.Heartbeat every o.HeartbeatEvery until the returned function is called.
func startHeartbeat(o Options) (stop func()) {
	if o.Heartbeat == nil {
		return func() {}
	}
	every := o.HeartbeatEvery
	if every <= 0 {
		every = DefaultHeartbeatEvery
	}
	var hb sync.WaitGroup
	done := make(chan struct{})
	hb.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				o.Heartbeat()
			case <-done:
				return
			}
		}
	})
	return func() {
		close(done)
		hb.Wait()
	}
}

func killGroup(pgid int) error {
	err := syscall.Kill(-pgid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// RunPattern is the -run expression selecting tests: their top-level names, quoted, as ^(A|B)$, sorted and
// deduplicated. It is empty when tests is. A name an inner runner gives a suite (testing.RunTests) may hold spaces,
// which the testing package does not rewrite in such a name but does in the pattern: they are written \x20, as any
// space or unprintable rune is, so that the pattern matches the name as it is.
func RunPattern(tests []string) string {
	seen := map[string]bool{}
	var names []string
	for _, t := range tests {
		top, _, _ := strings.Cut(strings.TrimSpace(t), "/")
		if top == "" || seen[top] {
			continue
		}
		seen[top] = true
		names = append(names, quoteRunName(top))
	}
	if len(names) == 0 {
		return ""
	}
	sort.Strings(names)
	return "^(" + strings.Join(names, "|") + ")$"
}

// quoteRunName quotes a test name for a -run pattern: regexp.QuoteMeta, with every space and unprintable rune as
// \x{...}, which the testing package's rewrite of the pattern leaves as it is.
func quoteRunName(name string) string {
	var b strings.Builder
	for _, r := range regexp.QuoteMeta(name) {
		if unicode.IsSpace(r) || !unicode.IsPrint(r) {
			fmt.Fprintf(&b, `\x{%x}`, r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

var (
	goCacheOnce sync.Once
	goCache     string
)

// defaultGoCache asks the go command where its build cache is, for workers whose GOCACHE comes from a variable the
// allowlist drops (XDG_CACHE_HOME); keeping the same cache keeps grading builds warm.
func defaultGoCache() string {
	goCacheOnce.Do(func() {
		out, err := exec.Command("go", "env", "GOCACHE").Output()
		if err == nil {
			goCache = strings.TrimSpace(string(out))
		}
	})
	return goCache
}

// Env builds the tests' environment: the allowlisted variables of this process, then ForcedEnv, then extra. Later
// entries replace earlier ones of the same name.
func Env(extra []string) []string {
	var env []string
	for _, k := range AllowedEnv {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	if _, ok := os.LookupEnv("GOCACHE"); !ok {
		if c := defaultGoCache(); c != "" && c != "off" {
			env = append(env, "GOCACHE="+c)
		}
	}
	env = append(env, ForcedEnv...)
	env = append(env, extra...)
	// Keep the last value of each name, in first-appearance order.
	last := map[string]int{}
	for i, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		last[k] = i
	}
	out := make([]string, 0, len(last))
	for i, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if last[k] == i {
			out = append(out, kv)
		}
	}
	return out
}

// capBuffer keeps the first and the last bytes written to it, up to limit in all.
type capBuffer struct {
	mu      sync.Mutex
	headCap int
	tailCap int
	head    []byte
	tail    []byte // holds at most 2*tailCap; the last tailCap bytes count
	total   int64
}

func newCapBuffer(limit int) *capBuffer {
	h := limit / 2
	return &capBuffer{headCap: h, tailCap: limit - h}
}

func (c *capBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(p)
	c.total += int64(n)
	if room := c.headCap - len(c.head); room > 0 {
		k := min(room, len(p))
		c.head = append(c.head, p[:k]...)
		p = p[k:]
	}
	if len(p) == 0 {
		return n, nil
	}
	if len(p) >= c.tailCap {
		c.tail = append(c.tail[:0], p[len(p)-c.tailCap:]...)
		return n, nil
	}
	c.tail = append(c.tail, p...)
	if len(c.tail) > 2*c.tailCap {
		c.tail = append(c.tail[:0], c.tail[len(c.tail)-c.tailCap:]...)
	}
	return n, nil
}

// Bytes returns everything written if it fit, else the head, a marker saying how much was dropped, and the tail.
func (c *capBuffer) Bytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	tail := c.tail
	if len(tail) > c.tailCap {
		tail = tail[len(tail)-c.tailCap:]
	}
	kept := int64(len(c.head) + len(tail))
	out := make([]byte, 0, kept+80)
	out = append(out, c.head...)
	if dropped := c.total - kept; dropped > 0 {
		out = fmt.Appendf(out, "\n[ctxlab: %d bytes of output dropped here; %d bytes in all]\n", dropped, c.total)
	}
	return append(out, tail...)
}
