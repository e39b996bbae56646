package testlog

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"io"
	"regexp"
	"slices"
	"strings"
)

// Parsers by name, for a spec's grading.log_parser and the docker executor.
const (
	ParserGo       = "gotest"
	ParserPytest   = "pytest"
	ParserUnittest = "unittest"
	// ParserNone reads nothing: the caller parses the captured output itself (the docker executor cuts out the part
	// between the harness's markers first).
	ParserNone = "none"
)

// Parse reads a test log with the named parser: gotest, pytest, unittest, none, or one of the SWE-bench harness's
// (HarnessParser: "parse_log_django", a per-repository alias, or a repository).
func Parse(parser string, r io.Reader) (Report, error) {
	switch parser {
	case ParserPytest:
		return ParsePytest(r)
	case ParserUnittest:
		return ParseUnittest(r)
	case ParserNone:
		_, err := io.Copy(io.Discard, r)
		return Report{Tests: map[string][]TestResult{}}, err
	}
	if _, ok := HarnessParser(parser); ok {
		return ParseHarness(parser, r)
	}
	return ParseGoTestJSON(r)
}

// pytest statuses as SWE-bench reads them; XFAIL counts as a pass there, XPASS is not a pass.
var pytestStatus = map[string]Status{
	"PASSED": StatusPass, "XFAIL": StatusPass, "FAILED": StatusFail, "ERROR": StatusFail, "XPASS": StatusFail,
	"SKIPPED": StatusSkip,
}

var (
	// "PASSED tests/test_a.py::test_x", "FAILED tests/test_a.py::test_y - AssertionError: ..." (the -rA summary).
	pytestSummary = regexp.MustCompile(`^(PASSED|FAILED|ERROR|XFAIL|XPASS|SKIPPED) (.+)$`)
	// "SKIPPED [1] tests/test_a.py:12: reason": a skip summary names a location, not a test.
	pytestSkipLoc = regexp.MustCompile(`^\[\d+\] `)
	// The header of the short test summary, and the final line ("==== 1 failed, 2 passed in 0.12s ====").
	pytestSummaryHeader = regexp.MustCompile(`^=+ short test summary info =+$`)
	pytestFinalLine     = regexp.MustCompile(`^=+ .+ =+$`)
)

// ParsePytest reads the output of pytest -rA: only its short test summary, the section after the last "short test
// summary info" header up to pytest's final line. What the tests print lands before it (in the FAILURES and PASSES
// sections, or in the progress lines), so a "PASSED tests/t.py::test_x" or "tests/t.py::test_x PASSED" line a test
// printed is not read as a result. Output written after the summary (at exit, from a process the tests left
// behind) can still forge one: the local runner reads pytest's results through its results plugin instead
// (ParseResults); this parser is for logs only.
//
// A test reported several times keeps every report; any failure makes it fail. Names are node ids
// ("tests/test_a.py::TestC::test_x[param]"); the text after " - " on a summary line is the reason, not the name.
// The name up to the first space is also recorded, since SWE-bench's parser keys tests that way and datasets list
// parametrized names so cut. A skip's summary line names a location only, so a skipped test has no result here.
func ParsePytest(r io.Reader) (Report, error) {
	rep := Report{Tests: map[string][]TestResult{}}
	all, err := readLines(r)
	if err != nil {
		return rep, err
	}
	start := -1
	for i, line := range all {
		if pytestSummaryHeader.MatchString(line) {
			start = i + 1
		}
	}
	if start < 0 {
		rep.Unparsed = len(all)
		return rep, nil
	}
	add := pytestAdder(&rep)
	for _, line := range all[start:] {
		if pytestFinalLine.MatchString(line) {
			break
		}
		m := pytestSummary.FindStringSubmatch(line)
		if m == nil {
			if strings.TrimSpace(line) != "" {
				rep.Unparsed++
			}
			continue
		}
		rest := m[2]
		if m[1] == "SKIPPED" && pytestSkipLoc.MatchString(rest) {
			continue
		}
		if i := strings.Index(rest, " - "); i >= 0 {
			rest = rest[:i]
		}
		add(rest, pytestStatus[m[1]])
	}
	return rep, nil
}

// pytestAdder records pytest results under a node id and under the id cut at its first space; a repeated report of
// the same status is recorded once, a failure always.
func pytestAdder(rep *Report) func(name string, st Status) {
	seen := map[string]Status{}
	return func(name string, st Status) {
		name = strings.TrimSpace(name)
		if name == "" {
			return
		}
		file, _, _ := strings.Cut(name, "::")
		keys := []string{name}
		if i := strings.IndexByte(name, ' '); i > 0 {
			keys = append(keys, name[:i])
		}
		for _, k := range keys {
			if prev, ok := seen[k]; ok && (prev == st || prev == StatusFail) {
				continue
			}
			seen[k] = st
			rep.Tests[k] = append(rep.Tests[k], TestResult{Package: file, Status: st})
		}
	}
}

// readLines reads a log's lines, split at "\n", "\r\n" and a bare "\r" (which a terminal shows as a new line, and
// after which a test runner's next line starts).
func readLines(r io.Reader) ([]string, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	sc.Split(scanLinesCR)
	var out []string
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out, sc.Err()
}

// scanLinesCR is bufio.ScanLines that also ends a line at a bare "\r".
func scanLinesCR(data []byte, atEOF bool) (advance int, token []byte, err error) {
	if atEOF && len(data) == 0 {
		return 0, nil, nil
	}
	if i := bytes.IndexAny(data, "\r\n"); i >= 0 {
		if data[i] == '\n' {
			return i + 1, data[:i], nil
		}
		if i+1 < len(data) {
			if data[i+1] == '\n' {
				return i + 2, data[:i], nil
			}
			return i + 1, data[:i], nil
		}
		if atEOF {
			return i + 1, data[:i], nil
		}
		return 0, nil, nil // a "\r" at the end: wait for the next byte
	}
	if atEOF {
		return len(data), data, nil
	}
	return 0, nil, nil
}

// unittestRecorder records unittest results: a test (method of class) under the names datasets write it in, "test_x
// (pkg.mod.Class.test_x)" (as Python 3.11 prints it), "test_x (pkg.mod.Class)" (as older Pythons do, and SWE-bench
// lists Django's tests) and "pkg.mod.Class.test_x", and under more (a docstring's first line); a subtest (suffix, its
// description) under the first two with the suffix added. A test keeps its first result, except that a failure
// always wins (a later FAIL: header, or a failing subtest).
func unittestRecorder(rep *Report) func(method, class, suffix string, st Status, more ...string) {
	return func(method, class, suffix string, st Status, more ...string) {
		cls := strings.TrimSuffix(class, "."+method)
		names := []string{method + " (" + cls + "." + method + ")", method + " (" + cls + ")", cls + "." + method}
		if suffix != "" {
			names = []string{method + " (" + cls + "." + method + ") " + suffix, method + " (" + cls + ") " + suffix}
		}
		for _, n := range append(names, more...) {
			rs := rep.Tests[n]
			if len(rs) > 0 && st == StatusFail {
				rs[len(rs)-1].Status = StatusFail
				continue
			}
			if len(rs) == 0 {
				rep.Tests[n] = []TestResult{{Package: cls, Status: st}}
			}
		}
	}
}

// ParseResults reads the results file of ctxlab's Python helpers (the pytest plugin ctxlab_results and the unittest
// runner ctxlab_unittest, in grading/executor/python): one line per result, "ctxlab1", a kind and its fields,
// tab-separated, strings hex-encoded UTF-8. started says the helper ran (its "session" line): a run whose helper
// never started has read nothing, whatever its output said. A "claim" line, written when a helper takes the file,
// says only that; a "missing_module" line names a module the tests could not import while being collected or
// loaded (Report.MissingModules).
//
//	ctxlab1	claim
//	ctxlab1	session
//	ctxlab1	missing_module	NAME
//	ctxlab1	pytest	OUTCOME	NODEID
//	ctxlab1	unittest	OUTCOME	ID	METHOD	DOC	SUBTEST
//
// OUTCOME is pass, fail, error, skip, xfail (a pass, as in SWE-bench) or xpass (a failure, as ParsePytest counts
// XPASS). pytest results are keyed as ParsePytest keys them, unittest results as ParseUnittest does: under the id
// itself as well, and a failing or skipped subtest fails (or skips) its test. A line that is torn or malformed is
// counted in Unparsed.
func ParseResults(r io.Reader) (rep Report, started bool, err error) {
	rep = Report{Tests: map[string][]TestResult{}}
	all, err := readLines(r)
	if err != nil {
		return rep, false, err
	}
	status := map[string]Status{"pass": StatusPass, "xfail": StatusPass, "fail": StatusFail, "error": StatusFail,
		"xpass": StatusFail, "skip": StatusSkip}
	addPytest := pytestAdder(&rep)
	addUnittest := unittestRecorder(&rep)
	for _, line := range all {
		f := strings.Split(line, "\t")
		if len(f) < 2 || f[0] != "ctxlab1" {
			rep.Unparsed++
			continue
		}
		if f[1] == "session" {
			started = true
			continue
		}
		if f[1] == "claim" {
			continue // the helper took the file before its runner started
		}
		if f[1] == "missing_module" && len(f) == 3 {
			if b, err := hex.DecodeString(f[2]); err == nil && !slices.Contains(rep.MissingModules, string(b)) {
				rep.MissingModules = append(rep.MissingModules, string(b))
				continue
			}
		}
		st, ok := status[at(f, 2)]
		dec := make([]string, 0, 4)
		for _, h := range f[min(3, len(f)):] {
			b, herr := hex.DecodeString(h)
			if herr != nil {
				ok = false
			}
			dec = append(dec, string(b))
		}
		switch {
		case ok && f[1] == "pytest" && len(dec) == 1:
			addPytest(dec[0], st)
		case ok && f[1] == "unittest" && len(dec) == 4:
			id, method, doc, sub := dec[0], dec[1], dec[2], dec[3]
			if method == "" || !strings.HasSuffix(id, "."+method) {
				// A fixture's error ("setUpClass (pkg.mod.Class)") or a doctest: keyed by its id alone.
				if rs := rep.Tests[id]; len(rs) == 0 {
					rep.Tests[id] = []TestResult{{Status: st}}
				} else if st == StatusFail {
					rs[0].Status = StatusFail
				}
				continue
			}
			var more []string
			if doc != "" {
				more = append(more, strings.TrimSpace(doc))
			}
			if sub != "" {
				addUnittest(method, id, sub, st)
				if st == StatusPass {
					continue // a passing subtest says nothing of its test
				}
			}
			addUnittest(method, id, "", st, more...)
		default:
			rep.Unparsed++
		}
	}
	return rep, started, nil
}

// at is f[i], or "" past its end.
func at(f []string, i int) string {
	if i < len(f) {
		return f[i]
	}
	return ""
}

var (
	// "test_add (pkg.test_mod.TestCalc.test_add) ... ok" (3.11+) or "test_add (pkg.test_mod.TestCalc) ... ok".
	unittestStart = regexp.MustCompile(`^(\w+) \(([\w.]+)\)`)
	// A subtest's own line, indented: "  test_x (pkg.mod.Class.test_x) (i=1) ... FAIL", or with a message
	// "  test_x (pkg.mod.Class.test_x) [msg] (k='v') ... skipped 'why'".
	unittestSubtest = regexp.MustCompile(`^\s+(\w+) \(([\w.]+)\) ((?:\[.*?\])?(?: ?\(.*?\))?) \.\.\. (.*)$`)
	// The status after " ... ", possibly on a later line (a docstring's first line comes first) and possibly glued
	// to output the test printed without a newline ("... partial outputok").
	unittestStatus = regexp.MustCompile(`(ok|FAIL|ERROR|expected failure|unexpected success)$|^(skipped)(?: .*)?$`)
	// "FAIL: test_x (pkg.mod.Class.test_x)" headers of the failure details, with a subtest's description after.
	unittestFailHeader = regexp.MustCompile(`^(FAIL|ERROR): (\w+) \(([\w.]+)\)(?: (.+))?$`)
)

var unittestStatusOf = map[string]Status{
	"ok": StatusPass, "expected failure": StatusPass, "FAIL": StatusFail, "ERROR": StatusFail,
	"unexpected success": StatusFail,
}

// unittestStatusIn reads the status at the end of s (after " ... "); glued says s came right after " ... ", so
// output glued before the status is allowed.
func unittestStatusIn(s string, glued bool) (Status, bool) {
	m := unittestStatus.FindStringSubmatch(s)
	if m == nil || (!glued && m[0] != s) {
		return "", false
	}
	if m[1] == "" {
		return StatusSkip, true
	}
	return unittestStatusOf[m[1]], true
}

// ParseUnittest reads the output of python -m unittest -v (and Django's runtests.py --verbosity 2, which prints the
// same lines). A test is recorded under the name as printed ("test_x (pkg.mod.Class.test_x)"), the older form
// ("test_x (pkg.mod.Class)") and the dotted id ("pkg.mod.Class.test_x"), and, when it has a docstring, under the
// docstring's first line, which unittest prints before " ... " and Django's harness parser keys the test by. A
// subtest that fails, errs or is skipped gets its own line ("test_x (pkg.mod.Class.test_x) (i=1) ... FAIL"),
// recorded under that name and the older form; it fails (or skips) its test too, as unittest counts it. A test
// whose status line never came is absent, which grading counts as failing. Lines end at "\n" and at a bare "\r".
// Like every parser of printed output it believes what the tests print; the local runner reads unittest's results
// through its results channel instead (ParseResults).
func ParseUnittest(r io.Reader) (Report, error) {
	rep := Report{Tests: map[string][]TestResult{}}
	all, err := readLines(r)
	if err != nil {
		return rep, err
	}
	record := unittestRecorder(&rep)
	var pendingName, pendingClass string
	for _, line := range all {
		if m := unittestFailHeader.FindStringSubmatch(line); m != nil {
			record(m[2], m[3], "", StatusFail)
			if m[4] != "" {
				record(m[2], m[3], m[4], StatusFail)
			}
			pendingName = ""
			continue
		}
		if m := unittestSubtest.FindStringSubmatch(line); m != nil && m[3] != "" {
			if st, ok := unittestStatusIn(m[4], false); ok {
				record(m[1], m[2], m[3], st)
				if st != StatusPass {
					record(m[1], m[2], "", st)
				}
				pendingName = ""
				continue
			}
		}
		if m := unittestStart.FindStringSubmatch(line); m != nil {
			pendingName, pendingClass = m[1], m[2]
		}
		if pendingName == "" {
			if strings.TrimSpace(line) != "" {
				rep.Unparsed++
			}
			continue
		}
		before, after, glued := "", line, false
		if i := strings.Index(line, " ... "); i >= 0 {
			before, after, glued = line[:i], line[i+len(" ... "):], true
		} else if unittestStart.MatchString(line) {
			continue // the status comes on a later line
		}
		if st, ok := unittestStatusIn(after, glued); ok {
			var doc []string
			if before != "" && !unittestStart.MatchString(before) {
				doc = []string{strings.TrimSpace(before)} // the docstring's first line, printed on its own line
			}
			record(pendingName, pendingClass, "", st, doc...)
			pendingName = ""
		}
	}
	return rep, nil
}
