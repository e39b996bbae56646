package testlog

import (
	"bufio"
	"io"
	"regexp"
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
	// "tests/test_a.py::test_x PASSED   [ 50%]" (-v progress lines).
	pytestVerbose = regexp.MustCompile(`^(\S+::\S.*?) (PASSED|FAILED|ERROR|XFAIL|XPASS|SKIPPED)(?:\s+\(.*\))?\s*(?:\[\s*\d+%\])?$`)
	// "SKIPPED [1] tests/test_a.py:12: reason": a skip summary names a location, not a test.
	pytestSkipLoc = regexp.MustCompile(`^\[\d+\] `)
)

// ParsePytest reads the output of pytest -rA (the short test summary SWE-bench parses) and, when present, of -v
// progress lines. A test reported several times keeps every report; any failure makes it fail. Names are node ids
// ("tests/test_a.py::TestC::test_x[param]"); the text after " - " on a summary line is the reason, not the name.
// The name up to the first space is also recorded, since SWE-bench's parser keys tests that way and datasets list
// parametrized names so cut.
func ParsePytest(r io.Reader) (Report, error) {
	rep := Report{Tests: map[string][]TestResult{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	seen := map[string]Status{}
	add := func(name string, st Status, file string) {
		name = strings.TrimSpace(name)
		if name == "" {
			return
		}
		keys := []string{name}
		if i := strings.IndexByte(name, ' '); i > 0 {
			keys = append(keys, name[:i])
		}
		for _, k := range keys {
			if prev, ok := seen[k]; ok && (prev == st || prev == StatusFail) {
				continue // the summary repeats what a -v line said
			}
			seen[k] = st
			rep.Tests[k] = append(rep.Tests[k], TestResult{Package: file, Status: st})
		}
	}
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if m := pytestSummary.FindStringSubmatch(line); m != nil {
			rest := m[2]
			if m[1] == "SKIPPED" && pytestSkipLoc.MatchString(rest) {
				continue
			}
			if i := strings.Index(rest, " - "); i >= 0 {
				rest = rest[:i]
			}
			file, _, _ := strings.Cut(rest, "::")
			add(rest, pytestStatus[m[1]], file)
			continue
		}
		if m := pytestVerbose.FindStringSubmatch(line); m != nil {
			file, _, _ := strings.Cut(m[1], "::")
			add(m[1], pytestStatus[m[2]], file)
			continue
		}
		if strings.TrimSpace(line) != "" {
			rep.Unparsed++
		}
	}
	return rep, sc.Err()
}

var (
	// "test_add (pkg.test_mod.TestCalc.test_add) ... ok" (3.11+) or "test_add (pkg.test_mod.TestCalc) ... ok".
	unittestStart = regexp.MustCompile(`^(\w+) \(([\w.]+)\)`)
	// The status after " ... ", possibly on a later line (a docstring's first line comes first) and possibly glued
	// to output the test printed without a newline ("... partial outputok").
	unittestStatus = regexp.MustCompile(`(ok|FAIL|ERROR|expected failure|unexpected success)$|^(skipped)(?: .*)?$`)
	// "FAIL: test_x (pkg.mod.Class.test_x)" headers of the failure details.
	unittestFailHeader = regexp.MustCompile(`^(FAIL|ERROR): (\w+) \(([\w.]+)\)`)
)

var unittestStatusOf = map[string]Status{
	"ok": StatusPass, "expected failure": StatusPass, "FAIL": StatusFail, "ERROR": StatusFail,
	"unexpected success": StatusFail,
}

// ParseUnittest reads the output of python -m unittest -v (and Django's runtests.py --verbosity 2, which prints the
// same lines). A test is recorded under the name as printed ("test_x (pkg.mod.Class.test_x)"), the older form
// ("test_x (pkg.mod.Class)") and the dotted id ("pkg.mod.Class.test_x"), so dataset lists in any of these forms match.
// A test whose status line never came is absent, which grading counts as failing.
func ParseUnittest(r io.Reader) (Report, error) {
	rep := Report{Tests: map[string][]TestResult{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	var pendingName, pendingClass string
	record := func(method, class string, st Status) {
		cls := strings.TrimSuffix(class, "."+method)
		names := []string{method + " (" + cls + "." + method + ")", method + " (" + cls + ")", cls + "." + method}
		for _, n := range names {
			rs := rep.Tests[n]
			if len(rs) > 0 && st == StatusFail {
				rs[len(rs)-1].Status = StatusFail // a later FAIL: header confirms or overrides
				continue
			}
			if len(rs) == 0 {
				rep.Tests[n] = []TestResult{{Package: cls, Status: st}}
			}
		}
	}
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if m := unittestFailHeader.FindStringSubmatch(line); m != nil {
			record(m[2], m[3], StatusFail)
			pendingName = ""
			continue
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
		after, glued := line, false
		if i := strings.Index(line, " ... "); i >= 0 {
			after, glued = line[i+len(" ... "):], true
		} else if unittestStart.MatchString(line) {
			continue // the status comes on a later line
		}
		if m := unittestStatus.FindStringSubmatch(after); m != nil && (glued || m[0] == after) {
			st := StatusSkip
			if m[1] != "" {
				st = unittestStatusOf[m[1]]
			}
			record(pendingName, pendingClass, st)
			pendingName = ""
		}
	}
	return rep, sc.Err()
}
