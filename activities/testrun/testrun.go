// Package testrun runs a repository's Go tests for grading, contained: in its own process group that is killed as a
// whole on timeout or cancellation, with an environment built from an allowlist (no credentials of the worker reach
// the tests), and with captured output capped. Outcomes come from the `go test -json` event stream (package
// testlog), never from the exit code.
package testrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"ctxlab/activities/testlog"
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
	// Dir is the module (or work tree) to test; `./...` is run from there.
	Dir string
	// Tests are the test names to run ("TestA", "TestA/sub"); a subtest runs through its top-level test. Empty
	// runs every test.
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
}

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
}

// AllowedEnv names the variables passed from the worker's environment to the tests; nothing else is.
var AllowedEnv = []string{"PATH", "HOME", "GOCACHE", "GOPATH", "GOMODCACHE", "GOROOT", "TMPDIR", "GOFLAGS", "CGO_ENABLED"}

// ForcedEnv is set whatever the worker's environment says: the local toolchain only, no module downloads.
var ForcedEnv = []string{"GOTOOLCHAIN=local", "GOPROXY=off"}

// Go runs `go test -json -count=1 -vet=off [-run ^(A|B)$] ./...` in o.Dir (or o.Command, when set). A timeout is
// reported in the Result, not as an error. Errors are for a run that could not start, and for cancellation of ctx
// (the partial Result is returned with it).
func Go(ctx context.Context, o Options) (Result, error) { return Run(ctx, o) }

// Run runs o.Command (go test when empty) in o.Dir, contained as the package comment says, and parses its output
// with o.Parser.
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
	every := o.HeartbeatEvery
	if every <= 0 {
		every = DefaultHeartbeatEvery
	}
	prog, args := "go", []string{"test", "-json", "-count=1", "-vet=off", "-timeout=0"}
	parser := testlog.ParserGo
	if len(o.Command) > 0 {
		prog, args, parser = o.Command[0], o.Command[1:], o.Parser
	} else {
		// Our deadline is the only one: go test's own -timeout is switched off so it cannot fire first with a
		// different outcome.
		if p := RunPattern(o.Tests); p != "" {
			args = append(args, "-run", p)
		}
		args = append(args, "./...")
	}
	goBin, err := exec.LookPath(prog)
	if err != nil {
		return Result{}, fmt.Errorf("testrun: %s command: %w", prog, err)
	}

	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var killed atomic.Bool
	cmd := exec.CommandContext(runCtx, goBin, args...)
	cmd.Dir = o.Dir
	cmd.Env = Env(o.ExtraEnv)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		killed.Store(true)
		return killGroup(cmd.Process.Pid)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return Result{}, fmt.Errorf("testrun: %w", err)
	}
	cmd.Stdout = pw
	cmd.Stderr = pw

	start := time.Now()
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		return Result{}, fmt.Errorf("testrun: starting %s in %s: %w", prog, o.Dir, err)
	}
	pw.Close() // the children hold the write end now
	pgid := cmd.Process.Pid

	out := newCapBuffer(capBytes)
	var rep testlog.Report
	var parseErr error
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		rep, parseErr = testlog.Parse(parser, io.TeeReader(pr, out))
		_, _ = io.Copy(out, pr) // keep draining if the parser stopped early
	}()

	var hb sync.WaitGroup
	hbStop := make(chan struct{})
	if o.Heartbeat != nil {
		hb.Go(func() {
			t := time.NewTicker(every)
			defer t.Stop()
			for {
				select {
				case <-t.C:
					o.Heartbeat()
				case <-hbStop:
					return
				}
			}
		})
	}

	_ = cmd.Wait() // the outcome is read from the events, the exit code below
	// Whatever happened, nothing the tests started may outlive the run.
	_ = killGroup(pgid)
	select {
	case <-readDone:
	case <-time.After(drainWait):
		pr.Close() // a process outside the group still holds the pipe
		<-readDone
	}
	pr.Close()
	close(hbStop)
	hb.Wait()

	res := Result{
		Output:      out.Bytes(),
		OutputBytes: out.total,
		Report:      rep,
		ExitCode:    cmd.ProcessState.ExitCode(),
		Duration:    time.Since(start),
		Args:        append([]string{prog}, args...),
	}
	if ctx.Err() != nil {
		return res, fmt.Errorf("testrun: cancelled: %w", ctx.Err())
	}
	res.TimedOut = killed.Load() && errors.Is(runCtx.Err(), context.DeadlineExceeded)
	// A pipe we closed ourselves (a descendant outside the group held it open) ends the stream early but cleanly.
	if parseErr != nil && !errors.Is(parseErr, os.ErrClosed) {
		return res, fmt.Errorf("testrun: %w", parseErr)
	}
	return res, nil
}

func killGroup(pgid int) error {
	err := syscall.Kill(-pgid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// RunPattern is the -run expression selecting tests: their top-level names, quoted, as ^(A|B)$, sorted and
// deduplicated. It is empty when tests is.
func RunPattern(tests []string) string {
	seen := map[string]bool{}
	var names []string
	for _, t := range tests {
		top, _, _ := strings.Cut(strings.TrimSpace(t), "/")
		if top == "" || seen[top] {
			continue
		}
		seen[top] = true
		names = append(names, regexp.QuoteMeta(top))
	}
	if len(names) == 0 {
		return ""
	}
	sort.Strings(names)
	return "^(" + strings.Join(names, "|") + ")$"
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
