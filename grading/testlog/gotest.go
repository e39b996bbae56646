// Package testlog turns test-runner output into per-test outcomes and decides whether an instance is resolved. It
// only parses and decides; running tests is grading/testrun's job.
package testlog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// Status is the outcome of one test.
type Status string

// Test outcomes. A test that started but never reported a result (its binary crashed, timed out or was killed) is
// StatusFail.
const (
	StatusPass Status = "pass"
	StatusFail Status = "fail"
	StatusSkip Status = "skip"
)

// TestResult is one run of a test in one package.
type TestResult struct {
	Package string `json:"package"`
	// Dir is the package's folder relative to the module root ("." for the root), when the runner knows it.
	Dir     string  `json:"dir,omitempty"`
	Status  Status  `json:"status"`
	Elapsed float64 `json:"elapsed,omitempty"` // seconds
	// Output is the tail of the test's own output, kept for failed tests only.
	Output string `json:"output,omitempty"`
	// Within are the other top-level tests of the package that were running (started, no result yet) both when
	// this test started and when it reported its result, as the framing shows: the tests an inner runner
	// (testing.RunTests called from a test) ran inside. grading/testrun accepts a result for a name no test
	// function declares only when one of them is declared.
	Within []string `json:"-"`
}

// Report is what a test run showed.
type Report struct {
	// Tests maps a test name ("TestA", or "TestA/sub" for a subtest, as go test prints it) to its results, one per
	// package (and per run) that has a test of that name.
	Tests map[string][]TestResult `json:"tests"`
	// Packages maps each package seen to its overall outcome (skip means it has no test files or ran no tests).
	Packages map[string]Status `json:"packages,omitempty"`
	// BuildFailed lists, sorted, the packages whose tests could not be built (compile or setup errors).
	BuildFailed []string `json:"build_failed,omitempty"`
	// BuildOutput is the compiler's and go command's error text (capped).
	BuildOutput string `json:"build_output,omitempty"`
	// Undeclared lists, as "package::Test", results the run reported for tests their package does not declare in a
	// kept _test.go file (forged framing, or a test only the model's own test files declare); they were dropped from
	// Tests. Set by grading/testrun for Go runs.
	Undeclared []string `json:"undeclared,omitempty"`
	// NotDeclared lists the requested test names no package declares (so none was run for them). Set by
	// grading/testrun for Go runs.
	NotDeclared []string `json:"not_declared,omitempty"`
	// Unparsed counts non-empty lines that were not go test JSON events (stderr noise, old-style build errors).
	Unparsed int `json:"unparsed,omitempty"`
	// MissingModules are the modules Python tests could not import while being collected or loaded
	// (ModuleNotFoundError), as ctxlab's results file reports them (ParseResults).
	MissingModules []string `json:"missing_modules,omitempty"`
}

// Results returns the results for a test name (nil if it never ran).
func (r Report) Results(name string) []TestResult { return r.Tests[name] }

// Limits on text kept in a Report.
const (
	maxTestOutput  = 8 << 10
	maxBuildOutput = 64 << 10
	maxLine        = 64 << 20 // a longer line is an error
)

// event is one line of `go test -json` (cmd/test2json), including the build events of Go 1.24+.
type event struct {
	Action      string   `json:"Action"`
	Package     string   `json:"Package"`
	Test        string   `json:"Test"`
	Elapsed     *float64 `json:"Elapsed"`
	Output      string   `json:"Output"`
	ImportPath  string   `json:"ImportPath"`
	FailedBuild string   `json:"FailedBuild"`
}

type testKey struct{ pkg, name string }

type running struct {
	out    []byte   // tail of the output
	within []string // the other top-level tests running when it started
}

// oldBuildFail matches the plain-text summary line of older toolchains: "FAIL\tpkg [build failed]".
var oldBuildFail = regexp.MustCompile(`^FAIL\s+(\S+)\s+\[(build|setup) failed\]`)

// ParseGoTestJSON reads the output of `go test -json` (stdout, or stdout and stderr together). Lines that are not
// JSON events are counted and otherwise ignored, except old-style "FAIL pkg [build failed]" lines; a JSON event
// preceded on its line by other text (interleaved stderr) is still read. Only a read error (or a line over 64 MiB)
// is an error, and the report of what was read before it is still returned, complete in form.
func ParseGoTestJSON(r io.Reader) (Report, error) {
	g := goParse{rep: Report{Tests: map[string][]TestResult{}, Packages: map[string]Status{}},
		open: map[testKey]*running{}, tops: map[string][]string{}, buildFailed: map[string]bool{}}
	br := bufio.NewReaderSize(r, 64<<10)
	var readErr error
	for {
		line, err := readLine(br)
		if len(line) > 0 {
			ev, ok := decode(line)
			if !ok {
				g.rep.Unparsed++
				if m := oldBuildFail.FindSubmatch(bytes.TrimSpace(line)); m != nil {
					g.buildFailed[string(m[1])] = true
				}
			} else {
				g.apply(ev)
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			readErr = fmt.Errorf("testlog: reading go test output: %w", err)
			break
		}
	}
	rep := g.rep
	// Tests that started but never finished: the binary died under them (panic in another goroutine, os.Exit,
	// timeout, kill).
	for _, k := range g.order {
		ru, ok := g.open[k]
		if !ok {
			continue
		}
		rep.Tests[k.name] = append(rep.Tests[k.name], TestResult{
			Package: k.pkg, Status: StatusFail, Within: g.within(k, ru),
			Output: tail(string(ru.out)+"\n[ctxlab: no result reported; the test binary exited or was killed while this test ran]\n", maxTestOutput),
		})
		delete(g.open, k)
	}
	for p := range g.buildFailed {
		rep.BuildFailed = append(rep.BuildFailed, p)
	}
	sort.Strings(rep.BuildFailed)
	rep.BuildOutput = g.build.String()
	return rep, readErr
}

// goParse is ParseGoTestJSON's state.
type goParse struct {
	rep         Report
	open        map[testKey]*running
	order       []testKey           // tests in start order, to close unterminated ones deterministically
	tops        map[string][]string // by package, the top-level tests (no "/" in the name) running, in start order
	buildFailed map[string]bool
	build       bytes.Buffer
}

// othersRunning are the top-level tests of pkg running now, but name's own top-level test.
func (g *goParse) othersRunning(pkg, name string) []string {
	top, _, _ := strings.Cut(name, "/")
	var others []string
	for _, t := range g.tops[pkg] {
		if t != top {
			others = append(others, t)
		}
	}
	return others
}

// within is TestResult.Within of test k ending now: the tests running when it started that still run.
func (g *goParse) within(k testKey, ru *running) []string {
	now := g.othersRunning(k.pkg, k.name)
	var w []string
	for _, t := range ru.within {
		if slices.Contains(now, t) {
			w = append(w, t)
		}
	}
	return w
}

// readLine returns the next line without its newline; overlong lines are an error.
func readLine(br *bufio.Reader) ([]byte, error) {
	var acc []byte
	for {
		chunk, err := br.ReadSlice('\n')
		acc = append(acc, chunk...)
		if len(acc) > maxLine {
			return nil, fmt.Errorf("line longer than %d bytes", maxLine)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimRight(acc, "\r\n"), err
	}
}

func decode(line []byte) (event, bool) {
	var ev event
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 {
		return ev, false
	}
	if trimmed[0] != '{' {
		// Interleaved text before an event: look for the start of one.
		i := bytes.Index(trimmed, []byte(`{"`))
		if i < 0 {
			return ev, false
		}
		trimmed = trimmed[i:]
	}
	if err := json.Unmarshal(trimmed, &ev); err != nil || ev.Action == "" {
		return event{}, false
	}
	return ev, true
}

func (g *goParse) apply(ev event) {
	switch ev.Action {
	case "build-output":
		if g.build.Len() < maxBuildOutput {
			g.build.WriteString(ev.Output)
		}
		return
	case "build-fail":
		return // the package's own fail event (with FailedBuild) names the package
	}
	if ev.Test == "" {
		// A package-level event.
		switch ev.Action {
		case "pass", "fail", "skip":
			g.rep.Packages[ev.Package] = Status(ev.Action)
			if ev.Action == "fail" && ev.FailedBuild != "" {
				g.buildFailed[ev.Package] = true
			}
		case "output":
			if s := strings.TrimSpace(ev.Output); strings.HasSuffix(s, "[build failed]") || strings.HasSuffix(s, "[setup failed]") {
				g.buildFailed[ev.Package] = true
			}
		}
		return
	}
	k := testKey{ev.Package, ev.Test}
	switch ev.Action {
	case "run":
		if _, ok := g.open[k]; !ok {
			g.open[k] = &running{within: g.othersRunning(k.pkg, k.name)}
			g.order = append(g.order, k)
			if !strings.Contains(k.name, "/") {
				g.tops[k.pkg] = append(g.tops[k.pkg], k.name)
			}
		}
	case "output":
		ru, ok := g.open[k]
		if !ok {
			return
		}
		ru.out = append(ru.out, ev.Output...)
		if len(ru.out) > 2*maxTestOutput {
			ru.out = append([]byte(nil), ru.out[len(ru.out)-maxTestOutput:]...)
		}
	case "pass", "fail", "skip":
		res := TestResult{Package: ev.Package, Status: Status(ev.Action)}
		if ev.Elapsed != nil {
			res.Elapsed = *ev.Elapsed
		}
		ru, ok := g.open[k]
		if !ok {
			ru = &running{within: g.othersRunning(k.pkg, k.name)} // a result with no run event
		}
		res.Within = g.within(k, ru)
		if ok {
			if res.Status == StatusFail {
				res.Output = tail(string(ru.out), maxTestOutput)
			}
			delete(g.open, k)
		}
		if i := slices.Index(g.tops[k.pkg], k.name); i >= 0 {
			g.tops[k.pkg] = slices.Delete(g.tops[k.pkg], i, i+1)
		}
		g.rep.Tests[ev.Test] = append(g.rep.Tests[ev.Test], res)
	}
	// "pause", "cont", "bench", "start": nothing to record.
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "[...]\n" + s[len(s)-n:]
}
