package testlog

import (
	"bytes"
	"encoding/hex"
	"io"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// The SWE-bench harness's log parsers (SWE-bench/SWE-bench, swebench/harness/log_parsers/python.py at commit
// fdefc6a2, transcribed line for line), by the names the harness gives them. SWE-rebench rows name one of them in install_config.log_parser (SWE-rebench/SWE-bench-fork,
// swebench/harness/grading.py, get_logs_eval). Each reads the part of the log between the harness's markers and
// maps a test name, as the harness keys it and datasets list it, to one status; a later line about the same name
// replaces the earlier one, as in the harness's dict.
const (
	ParserHarnessPytest        = "parse_log_pytest"
	ParserHarnessPytestOptions = "parse_log_pytest_options"
	ParserHarnessPytestV2      = "parse_log_pytest_v2"
	ParserHarnessDjango        = "parse_log_django"
	ParserHarnessSympy         = "parse_log_sympy"
	ParserHarnessMatplotlib    = "parse_log_matplotlib"
	ParserHarnessSeaborn       = "parse_log_seaborn"
)

// harnessAliases are the harness's per-repository names for the parsers above (the aliases at the end of
// log_parsers/python.py, and the repository keys of MAP_REPO_TO_PARSER_PY, which SWE-rebench's log_parser may hold).
var harnessAliases = map[string]string{
	"parse_log_astroid": ParserHarnessPytest, "parse_log_flask": ParserHarnessPytest,
	"parse_log_marshmallow": ParserHarnessPytest, "parse_log_pvlib": ParserHarnessPytest,
	"parse_log_pyvista": ParserHarnessPytest, "parse_log_sqlfluff": ParserHarnessPytest,
	"parse_log_xarray":  ParserHarnessPytest,
	"parse_log_pydicom": ParserHarnessPytestOptions, "parse_log_requests": ParserHarnessPytestOptions,
	"parse_log_pylint":  ParserHarnessPytestOptions,
	"parse_log_astropy": ParserHarnessPytestV2, "parse_log_scikit": ParserHarnessPytestV2,
	"parse_log_sphinx": ParserHarnessPytestV2,

	"astropy/astropy": ParserHarnessPytestV2, "django/django": ParserHarnessDjango,
	"marshmallow-code/marshmallow": ParserHarnessPytest, "matplotlib/matplotlib": ParserHarnessMatplotlib,
	"mwaskom/seaborn": ParserHarnessSeaborn, "pallets/flask": ParserHarnessPytest,
	"psf/requests": ParserHarnessPytestOptions, "pvlib/pvlib-python": ParserHarnessPytest,
	"pydata/xarray": ParserHarnessPytest, "pydicom/pydicom": ParserHarnessPytestOptions,
	"pylint-dev/astroid": ParserHarnessPytest, "pylint-dev/pylint": ParserHarnessPytestOptions,
	"pytest-dev/pytest": ParserHarnessPytest, "pyvista/pyvista": ParserHarnessPytest,
	"scikit-learn/scikit-learn": ParserHarnessPytestV2, "sqlfluff/sqlfluff": ParserHarnessPytest,
	"sphinx-doc/sphinx": ParserHarnessPytestV2, "sympy/sympy": ParserHarnessSympy,
}

// HarnessParser resolves a harness parser name, a per-repository alias ("parse_log_astropy") or a repository
// ("django/django") to one of the Parser* names above.
func HarnessParser(name string) (string, bool) {
	switch name {
	case ParserHarnessPytest, ParserHarnessPytestOptions, ParserHarnessPytestV2, ParserHarnessDjango,
		ParserHarnessSympy, ParserHarnessMatplotlib, ParserHarnessSeaborn:
		return name, true
	}
	p, ok := harnessAliases[name]
	return p, ok
}

// The harness's statuses (swebench/harness/constants TestStatus). grading.py's test_passed counts PASSED and XFAIL
// as passing, test_failed FAILED and ERROR as failing; SKIPPED, and any other word a parser stored as a status, is
// neither (StatusSkip, which Decide counts neither way).
var harnessStatus = map[string]Status{
	"PASSED": StatusPass, "XFAIL": StatusPass, "FAILED": StatusFail, "ERROR": StatusFail, "SKIPPED": StatusSkip,
}

// harnessStatusNames in the enum's order, for the parsers that test which status a line starts with.
var harnessStatusNames = []string{"FAILED", "PASSED", "SKIPPED", "ERROR", "XFAIL"}

// parseHarness runs a harness parser over a whole log and returns its status map.
func parseHarness(parser, log string) map[string]string {
	switch parser {
	case ParserHarnessPytestOptions:
		return harnessPytest(log, true)
	case ParserHarnessPytestV2:
		return harnessPytestV2(log)
	case ParserHarnessDjango:
		return harnessDjango(log)
	case ParserHarnessSympy:
		return harnessSympy(log)
	case ParserHarnessMatplotlib:
		return harnessMatplotlib(log)
	case ParserHarnessSeaborn:
		return harnessSeaborn(log)
	default:
		return harnessPytest(log, false)
	}
}

// ParseHarness reads a log with a harness parser (HarnessParser resolves the name): every name gets one result,
// the harness's status mapped to a Status.
func ParseHarness(parser string, r io.Reader) (Report, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return Report{Tests: map[string][]TestResult{}}, err
	}
	if p, ok := HarnessParser(parser); ok {
		parser = p
	}
	rep := Report{Tests: map[string][]TestResult{}}
	for name, st := range parseHarness(parser, string(b)) {
		status, ok := harnessStatus[st]
		if !ok {
			status = StatusSkip // a status the harness counts neither as passing nor as failing
		}
		rep.Tests[name] = []TestResult{{Status: status}}
	}
	return rep, nil
}

// lines splits a log as Python's str.split("\n") does (a trailing "\r" stays on its line).
func lines(log string) []string { return strings.Split(log, "\n") }

// pySpace is what Python's str.split() and str.strip() take for whitespace: Go's unicode.IsSpace and the four
// information separators \x1c-\x1f.
func pySpace(r rune) bool { return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f) }

// pyFields is Python's str.split() with no argument; pyStrip its str.strip().
func pyFields(s string) []string { return strings.FieldsFunc(s, pySpace) }
func pyStrip(s string) string    { return strings.TrimFunc(s, pySpace) }

var (
	// parse_log_pytest_v2 drops colour codes ("[32m") and then every character from \x01 to \x1f.
	ansiColour = regexp.MustCompile(`\[(\d+)m`)
	// _normalize_pytest_option_test_name: the parameter part of a test name.
	pytestOption = regexp.MustCompile(`^(.*?)\[(.*)\]`)
)

// startsWithStatus reports whether a line starts with one of the harness's statuses (any(line.startswith(x.value)
// for x in TestStatus)).
func startsWithStatus(line string) bool {
	return slices.ContainsFunc(harnessStatusNames, func(s string) bool { return strings.HasPrefix(line, s) })
}

// statusFirst is the line rule shared by parse_log_pytest, parse_log_pytest_options, parse_log_matplotlib and
// parse_log_pytest_v2's first branch: a line starting with a status, " - " dropped from a FAILED line, gives its
// second word the status of its first word (which the harness does not check: "ERROR:" is a status too, counted
// neither way). ok is false when the line has fewer than two words.
func statusFirst(line string) (name, status string, ok bool) {
	if strings.HasPrefix(line, "FAILED") {
		line = strings.ReplaceAll(line, " - ", " ")
	}
	f := pyFields(line)
	if len(f) <= 1 {
		return "", "", false
	}
	return f[1], f[0], true
}

// harnessPytest is parse_log_pytest, and with normalizeOptions parse_log_pytest_options: only lines that start
// with a status count, so -v progress lines ("name PASSED [ 50%]") do not. A name is the first whitespace-delimited
// word after the status, so a parametrized test whose parameters hold a space is keyed by the part before it, as
// datasets list it; "SKIPPED [1] file.py:12: reason" is keyed "[1]".
func harnessPytest(log string, normalizeOptions bool) map[string]string {
	m := map[string]string{}
	for _, line := range lines(log) {
		if !startsWithStatus(line) {
			continue
		}
		name, status, ok := statusFirst(line)
		if !ok {
			continue
		}
		if normalizeOptions {
			name = normalizeOption(name)
		}
		m[name] = status
	}
	return m
}

// harnessPytestV2 is parse_log_pytest_v2: colour codes and control characters go first; then a line starting with
// a status is read as in parse_log_pytest, and else a line ending with or containing a status gives its first word
// the status of its second word (older pytest's "name PASSED" and -v progress lines, and anything else holding a
// status word).
func harnessPytestV2(log string) map[string]string {
	m := map[string]string{}
	for _, line := range lines(log) {
		line = ansiColour.ReplaceAllString(line, "")
		line = strings.Map(func(r rune) rune {
			if r >= 1 && r < 32 {
				return -1
			}
			return r
		}, line)
		if startsWithStatus(line) {
			if name, status, ok := statusFirst(line); ok {
				m[name] = status
			}
			continue
		}
		if slices.ContainsFunc(harnessStatusNames, func(s string) bool { return strings.Contains(line, s) }) {
			if f := pyFields(line); len(f) >= 2 {
				m[f[0]] = f[1]
			}
		}
	}
	return m
}

// normalizeOption shortens an absolute path parameter to its last element ("test_x[/tmp/a/b.txt]" becomes
// "test_x[/b.txt]"), as _normalize_pytest_option_test_name does, so names do not depend on where the repository lay.
func normalizeOption(name string) string {
	s := pytestOption.FindStringSubmatch(name)
	if s == nil {
		return name
	}
	main, option := s[1], s[2]
	if strings.HasPrefix(option, "/") && !strings.HasPrefix(option, "//") && !strings.Contains(option, "*") {
		option = "/" + option[strings.LastIndex(option, "/")+1:]
	}
	return main + "[" + option + "]"
}

// harnessMatplotlib is parse_log_matplotlib: parse_log_pytest with the mouse-button enum names printed by newer
// Python replaced by their values, so names match the dataset's.
func harnessMatplotlib(log string) map[string]string {
	m := map[string]string{}
	for _, line := range lines(log) {
		line = strings.ReplaceAll(line, "MouseButton.LEFT", "1")
		line = strings.ReplaceAll(line, "MouseButton.RIGHT", "3")
		if !startsWithStatus(line) {
			continue
		}
		if name, status, ok := statusFirst(line); ok {
			m[name] = status
		}
	}
	return m
}

// harnessSeaborn is parse_log_seaborn: FAILED summary lines, "name PASSED ..." progress lines and PASSED summary
// lines (seaborn runs pytest without -v, so only the summary names tests).
func harnessSeaborn(log string) map[string]string {
	m := map[string]string{}
	for _, line := range lines(log) {
		f := pyFields(line)
		switch {
		case strings.HasPrefix(line, "FAILED"):
			if len(f) > 1 {
				m[f[1]] = "FAILED"
			}
		case strings.Contains(line, " PASSED "):
			if len(f) > 1 && f[1] == "PASSED" {
				m[f[0]] = "PASSED"
			}
		case strings.HasPrefix(line, "PASSED"):
			if len(f) > 1 {
				m[f[1]] = "PASSED"
			}
		}
	}
	return m
}

// parse_log_sympy's failure headers, "____ sympy/core/tests/test_x.py:test_y ____", keyed "path.py:test_y".
var sympyFailureHeader = regexp.MustCompile(`(_*) (.*)\.py:(.*) (_*)`)

// harnessSympy is parse_log_sympy: bin/test --verbose prints "test_name ok", "test_name F" or "test_name E" per
// test; failure headers add "file.py:test_name" keys as failed.
func harnessSympy(log string) map[string]string {
	m := map[string]string{}
	for _, s := range sympyFailureHeader.FindAllStringSubmatch(log, -1) {
		m[s[2]+".py:"+s[3]] = "FAILED"
	}
	for _, line := range lines(log) {
		line = pyStrip(line)
		if !strings.HasPrefix(line, "test_") {
			continue
		}
		name := pyFields(line)[0]
		if strings.HasSuffix(line, " E") {
			m[name] = "ERROR"
		}
		if strings.HasSuffix(line, " F") {
			m[name] = "FAILED"
		}
		if strings.HasSuffix(line, " ok") {
			m[name] = "PASSED"
		}
	}
	return m
}

// parse_log_django's passes interrupted by a multi-line print before the final "ok" (the harness's three
// patterns, matched over the whole log).
var djangoInterrupted = []*regexp.Regexp{
	regexp.MustCompile(`(?m)^(.*?)\s\.\.\.\sTesting against Django installed in (?s:.*?) silenced\)\.\nok$`),
	regexp.MustCompile(`(?m)^(.*?)\s\.\.\.\sInternal Server Error: /(.*)/\nok$`),
	regexp.MustCompile(`(?m)^(.*?)\s\.\.\.\sSystem check identified no issues \(0 silenced\)\nok$`),
}

// harnessDjango is parse_log_django: runtests.py --verbosity 2 prints "test_x (module.Class) ... ok" (or, with a
// docstring, its first line before " ... "), and the name is everything before " ... ". A status on a later line
// ("ok" alone) belongs to the last test that started; "FAIL:"/"ERROR:" headers of the failure details mark the
// method name they print first.
func harnessDjango(log string) map[string]string {
	m := map[string]string{}
	prev, havePrev := "", false
	for _, line := range lines(log) {
		line = pyStrip(line)
		if strings.Contains(line, "--version is equivalent to version") {
			m["--version is equivalent to version"] = "PASSED"
		}
		if i := strings.Index(line, " ... "); i >= 0 {
			prev, havePrev = line[:i], true
		}
		for _, suffix := range []string{" ... ok", " ... OK", " ...  OK"} {
			if strings.HasSuffix(line, suffix) {
				// django__django-7188: a migration message runs into the test's line.
				if strings.HasPrefix(line, "Applying sites.0002_alter_domain_unique...test_no_migrations") {
					_, rest, _ := strings.Cut(line, "...")
					line = pyStrip(rest)
				}
				m[line[:strings.LastIndex(line, suffix)]] = "PASSED"
				break
			}
		}
		if i := strings.Index(line, " ... skipped"); i >= 0 {
			m[line[:i]] = "SKIPPED"
		}
		if strings.HasSuffix(line, " ... FAIL") {
			m[line[:strings.Index(line, " ... FAIL")]] = "FAILED"
		}
		if strings.HasPrefix(line, "FAIL:") {
			if f := pyFields(line); len(f) > 1 {
				m[f[1]] = "FAILED"
			}
		}
		if strings.HasSuffix(line, " ... ERROR") {
			m[line[:strings.Index(line, " ... ERROR")]] = "ERROR"
		}
		if strings.HasPrefix(line, "ERROR:") {
			if f := pyFields(line); len(f) > 1 {
				m[f[1]] = "ERROR"
			}
		}
		if strings.HasPrefix(line, "ok") && havePrev {
			m[prev] = "PASSED"
		}
	}
	for _, re := range djangoInterrupted {
		for _, s := range re.FindAllStringSubmatch(log, -1) {
			m[s[1]] = "PASSED"
		}
	}
	return m
}

// resultsSummaryStatus is the -rA summary word of each outcome ctxlab's results plugin records.
var resultsSummaryStatus = map[string]string{"pass": "PASSED", "fail": "FAILED", "error": "ERROR", "xfail": "XFAIL",
	"xpass": "XPASS", "skip": "SKIPPED"}

// HarnessSummary turns the pytest results ctxlab's results plugin recorded (ParseResults's format) into the lines
// pytest's -rA short test summary prints for them ("PASSED tests/t.py::test_x", a skip as "SKIPPED [1] NODEID",
// which names no test, as pytest's own skip lines do not), for a harness parser to read as it reads a log: the
// names and statuses are then the harness's, keyed by its own rules, while every line comes from the runner's
// report, never from what the tests printed. ok is false when a record is not a pytest result (a unittest one, or
// a torn line), which a harness parser could not read this way; started says the plugin ran.
func HarnessSummary(results io.Reader) (summary string, started, ok bool, err error) {
	all, err := readLines(results)
	if err != nil {
		return "", false, false, err
	}
	var b strings.Builder
	ok = true
	for _, line := range all {
		f := strings.Split(line, "\t")
		switch {
		case len(f) == 2 && f[0] == "ctxlab1" && f[1] == "session":
			started = true
			continue
		case len(f) != 4 || f[0] != "ctxlab1" || f[1] != "pytest":
			ok = false
			continue
		}
		word, known := resultsSummaryStatus[f[2]]
		id, herr := hex.DecodeString(f[3])
		if !known || herr != nil {
			ok = false
			continue
		}
		if word == "SKIPPED" {
			b.WriteString("SKIPPED [1] ")
		} else {
			b.WriteString(word + " ")
		}
		b.Write(bytes.ReplaceAll(id, []byte("\n"), []byte(" ")))
		b.WriteByte('\n')
	}
	return b.String(), started, ok, nil
}
