package testlog

import (
	"encoding/hex"
	"maps"
	"slices"
	"strings"
	"testing"
)

// harnessStatuses flattens a report to name -> status, failing on a name with more than one result.
func harnessStatuses(t *testing.T, rep Report) map[string]Status {
	t.Helper()
	out := map[string]Status{}
	for name, rs := range rep.Tests {
		if len(rs) != 1 {
			t.Fatalf("%q has %d results", name, len(rs))
		}
		out[name] = rs[0].Status
	}
	return out
}

func parseWith(t *testing.T, parser, log string) map[string]Status {
	t.Helper()
	rep, err := Parse(parser, strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	return harnessStatuses(t, rep)
}

func wantStatuses(t *testing.T, got, want map[string]Status) {
	t.Helper()
	if !maps.Equal(got, want) {
		keys := slices.Sorted(maps.Keys(got))
		t.Errorf("got %d tests:\n", len(got))
		for _, k := range keys {
			t.Errorf("  %q: %s (want %s)", k, got[k], want[k])
		}
		for k, v := range want {
			if _, ok := got[k]; !ok {
				t.Errorf("  missing %q (want %s)", k, v)
			}
		}
	}
}

// pytest -rA on a parametrized test whose parameter holds spaces: the harness keys it by the first word, which is
// how SWE-bench's FAIL_TO_PASS lists it; the reason after " - " is not part of the name; "SKIPPED [1] file:line"
// names no test (the harness keys it "[1]"); -v progress lines do not count (parse_log_pytest reads only lines
// that start with a status).
const pytestLog = `============================= test session starts ==============================
collected 6 items

tests/test_fmt.py::test_plain PASSED                                     [ 16%]
tests/test_fmt.py::test_width[a b-3] PASSED                              [ 33%]
tests/test_fmt.py::test_width[c d-4] FAILED                              [ 50%]

=================================== FAILURES ===================================
=========================== short test summary info ============================
PASSED tests/test_fmt.py::test_plain
PASSED tests/test_fmt.py::test_width[a b-3]
PASSED tests/test_io.py::TestReader::test_read
XFAIL tests/test_io.py::test_known_bug - reason: issue 12
SKIPPED [1] tests/test_io.py:40: needs network
ERROR tests/test_io.py::test_fixture_broken - fixture 'db' not found
FAILED tests/test_fmt.py::test_width[c d-4] - AssertionError: assert 'c d' == 'c  d'
FAILED tests/test_fmt.py::test_last - assert 1 == 2
PASSED tests/test_fmt.py::test_pair[x y]
FAILED tests/test_fmt.py::test_pair[x z] - assert 'x z' == 'xz'
==================== 2 failed, 3 passed, 1 xfailed, 1 skipped, 1 error in 0.12s ====================
`

func TestHarnessPytest(t *testing.T) {
	got := parseWith(t, ParserHarnessPytest, pytestLog)
	wantStatuses(t, got, map[string]Status{
		"tests/test_fmt.py::test_plain":           StatusPass,
		"tests/test_fmt.py::test_width[a":         StatusPass,
		"tests/test_fmt.py::test_width[c":         StatusFail,
		"tests/test_fmt.py::test_pair[x":          StatusFail, // "[x y]" passed, "[x z]" shares its key and failed last
		"tests/test_io.py::TestReader::test_read": StatusPass,
		"tests/test_io.py::test_known_bug":        StatusPass,
		"tests/test_io.py::test_fixture_broken":   StatusFail,
		"tests/test_fmt.py::test_last":            StatusFail,
		"[1]":                                     StatusSkip, // "SKIPPED [1] file:line": the harness keys it by its count
	})
	// The same log through ctxlab's own pytest parser keeps the full node id as well.
	rep, err := Parse(ParserPytest, strings.NewReader(pytestLog))
	if err != nil || len(rep.Tests["tests/test_fmt.py::test_width[a b-3]"]) == 0 {
		t.Errorf("ctxlab's pytest parser lost the full id: %v", err)
	}
}

// parse_log_pytest_v2 strips colour codes and control characters before reading the line.
func TestHarnessPytestV2Colour(t *testing.T) {
	log := "\x1b[32mPASSED\x1b[0m sklearn/tests/test_base.py::test_clone\n" +
		"\x1b[31mFAILED\x1b[0m sklearn/tests/test_base.py::test_repr - AssertionError\n" +
		"sklearn/tests/test_base.py::test_get_params \x1b[32mPASSED\x1b[0m\x1b[32m [ 50%]\x1b[0m\n"
	got := parseWith(t, ParserHarnessPytestV2, log)
	wantStatuses(t, got, map[string]Status{
		"sklearn/tests/test_base.py::test_clone":      StatusPass,
		"sklearn/tests/test_base.py::test_repr":       StatusFail,
		"sklearn/tests/test_base.py::test_get_params": StatusPass,
	})
	// Without the stripping, the coloured summary lines name nothing.
	if plain := parseWith(t, ParserHarnessPytest, log); plain["sklearn/tests/test_base.py::test_clone"] != "" {
		t.Errorf("parse_log_pytest read a coloured line: %v", plain)
	}
}

// parse_log_pytest_options shortens absolute path parameters to their last element.
func TestHarnessPytestOptions(t *testing.T) {
	log := "PASSED tests/test_lint.py::test_file[/tmp/pytest-of-root/pytest-0/data/a.py]\n" +
		"PASSED tests/test_lint.py::test_glob[/tmp/*.py]\n" +
		"FAILED tests/test_lint.py::test_url[//host/x] - boom\n"
	got := parseWith(t, ParserHarnessPytestOptions, log)
	wantStatuses(t, got, map[string]Status{
		"tests/test_lint.py::test_file[/a.py]":     StatusPass,
		"tests/test_lint.py::test_glob[/tmp/*.py]": StatusPass,
		"tests/test_lint.py::test_url[//host/x]":   StatusFail,
	})
}

// Django's runtests.py --verbosity 2: names are what precedes " ... " (the "test_x (module.Class)" form, or a
// docstring's first line); a status on its own line belongs to the test before it; FAIL:/ERROR: headers mark the
// method name.
const djangoLog = `Testing against Django installed in '/testbed/django' with up to 1 processes
Importing application admin_views
Skipping setup of unused database(s): other.
Operations to perform:
  Apply all migrations: admin, auth
System check identified no issues (0 silenced).
test_add (utils_tests.test_text.TestUtilsText) ... ok
test_truncate (utils_tests.test_text.TestUtilsText) ... FAIL
test_wrap (utils_tests.test_text.TestUtilsText) ... ERROR
test_unicode (utils_tests.test_text.TestUtilsText) ... skipped 'needs ICU'
Regression for #12345: format_html escapes its arguments. ... ok
test_slow (utils_tests.test_text.TestUtilsText) ... Some output the test printed
ok
test_py311 (utils_tests.test_text.TestUtilsText.test_py311) ... ok
test_broken_later (utils_tests.test_text.TestUtilsText) ... ok

======================================================================
FAIL: test_broken_later (utils_tests.test_text.TestUtilsText)
----------------------------------------------------------------------
Traceback (most recent call last):
AssertionError: 1 != 2

----------------------------------------------------------------------
Ran 8 tests in 0.021s

FAILED (failures=2, errors=1, skipped=1)
`

func TestHarnessDjango(t *testing.T) {
	got := parseWith(t, ParserHarnessDjango, djangoLog)
	wantStatuses(t, got, map[string]Status{
		"test_add (utils_tests.test_text.TestUtilsText)":              StatusPass,
		"test_truncate (utils_tests.test_text.TestUtilsText)":         StatusFail,
		"test_wrap (utils_tests.test_text.TestUtilsText)":             StatusFail,
		"test_unicode (utils_tests.test_text.TestUtilsText)":          StatusSkip,
		"Regression for #12345: format_html escapes its arguments.":   StatusPass,
		"test_slow (utils_tests.test_text.TestUtilsText)":             StatusPass,
		"test_py311 (utils_tests.test_text.TestUtilsText.test_py311)": StatusPass,
		"test_broken_later (utils_tests.test_text.TestUtilsText)":     StatusPass,
		"test_broken_later": StatusFail, // the FAIL: header's first word
	})
	// The parser is chosen by repository as well (a SWE-rebench log_parser may name one).
	if p, ok := HarnessParser("django/django"); !ok || p != ParserHarnessDjango {
		t.Errorf("django/django resolves to %q", p)
	}
}

// A test whose output ran into the interrupted-line patterns of the harness still passes.
func TestHarnessDjangoInterrupted(t *testing.T) {
	log := "test_check (check_framework.tests.CheckCommandTests) ... System check identified no issues (0 silenced)\nok\n"
	got := parseWith(t, ParserHarnessDjango, log)
	if got["test_check (check_framework.tests.CheckCommandTests)"] != StatusPass {
		t.Errorf("interrupted pass not read: %v", got)
	}
}

// sympy's bin/test --verbose: "test_name ok|F|E" per test, and failure headers "file.py:test_name" keys.
const sympyLog = `============================= test process starts ==============================
executable:         /opt/miniconda3/envs/testbed/bin/python  (3.9.19-final-0) [CPython]
architecture:       64-bit
random seed:        49051220
hash randomization: on (PYTHONHASHSEED=1693012497)

sympy/core/tests/test_basic.py[4]
test__aresame ok
test_structure ok
test_equality F
test_matches_basic E
                                                                          [FAIL]

________________________________________________________________________________
_____________ sympy/core/tests/test_basic.py:test_equality _____________________
Traceback (most recent call last):
AssertionError

======= tests finished: 2 passed, 1 failed, 1 exceptions, in 0.05 seconds =======
DO *NOT* COMMIT!
`

func TestHarnessSympy(t *testing.T) {
	got := parseWith(t, ParserHarnessSympy, sympyLog)
	wantStatuses(t, got, map[string]Status{
		"test__aresame":      StatusPass,
		"test_structure":     StatusPass,
		"test_equality":      StatusFail,
		"test_matches_basic": StatusFail,
		"sympy/core/tests/test_basic.py:test_equality": StatusFail,
	})
}

// matplotlib's names with mouse-button enums are rewritten to the values datasets list.
func TestHarnessMatplotlib(t *testing.T) {
	log := "PASSED lib/matplotlib/tests/test_widgets.py::test_span_selector_press[MouseButton.LEFT]\n" +
		"FAILED lib/matplotlib/tests/test_widgets.py::test_lasso[MouseButton.RIGHT] - AssertionError\n" +
		"SKIPPED [2] lib/matplotlib/testing/compare.py:285: Don't know how to convert .svg files to png\n" +
		"ERROR lib/matplotlib/tests/test_backend_pgf.py::test_xelatex\n"
	got := parseWith(t, ParserHarnessMatplotlib, log)
	wantStatuses(t, got, map[string]Status{
		"lib/matplotlib/tests/test_widgets.py::test_span_selector_press[1]": StatusPass,
		"lib/matplotlib/tests/test_widgets.py::test_lasso[3]":               StatusFail,
		"[2]": StatusSkip, // the harness keys a skip summary by its count; no dataset lists it
		"lib/matplotlib/tests/test_backend_pgf.py::test_xelatex": StatusFail,
	})
}

// seaborn: FAILED summary lines, "name PASSED" progress lines and PASSED summary lines.
func TestHarnessSeaborn(t *testing.T) {
	log := "tests/test_core.py::TestSemanticMapping::test_call_lookup PASSED [ 10%]\n" +
		"PASSED tests/test_core.py::TestHueMapping::test_init_from_map\n" +
		"FAILED tests/_core/test_plot.py::TestLayerAddition::test_variables - KeyError\n" +
		"tests/test_core.py::test_skip SKIPPED (no scipy)                        [ 30%]\n"
	got := parseWith(t, ParserHarnessSeaborn, log)
	wantStatuses(t, got, map[string]Status{
		"tests/test_core.py::TestSemanticMapping::test_call_lookup":   StatusPass,
		"tests/test_core.py::TestHueMapping::test_init_from_map":      StatusPass,
		"tests/_core/test_plot.py::TestLayerAddition::test_variables": StatusFail,
	})
}

// Every repository and alias of the harness's table resolves; an unknown name does not.
func TestHarnessParserNames(t *testing.T) {
	for name, want := range map[string]string{
		"parse_log_pytest": ParserHarnessPytest, "parse_log_pytest_v2": ParserHarnessPytestV2,
		"parse_log_astropy": ParserHarnessPytestV2, "psf/requests": ParserHarnessPytestOptions,
		"sympy/sympy": ParserHarnessSympy, "mwaskom/seaborn": ParserHarnessSeaborn,
		"matplotlib/matplotlib": ParserHarnessMatplotlib, "pydata/xarray": ParserHarnessPytest,
	} {
		if got, ok := HarnessParser(name); !ok || got != want {
			t.Errorf("HarnessParser(%q) = %q, %v; want %q", name, got, ok, want)
		}
	}
	for _, name := range []string{"", "pytest", "parse_log_unknown", "acme/calc"} {
		if got, ok := HarnessParser(name); ok {
			t.Errorf("HarnessParser(%q) = %q", name, got)
		}
	}
}

// The pytest parsers read lines exactly as log_parsers/python.py does (SWE-bench/SWE-bench at commit fdefc6a2):
// parse_log_pytest only lines that start with a status (no -v progress lines), keyed by the second word and
// valued by the first, whatever it is ("ERROR:" is a status the harness counts neither way); str.split() also
// splits at \x1c-\x1f; parse_log_pytest_v2 first drops colour codes and control characters, then reads a line that
// starts with a status, else one that ends with or holds one (keyed by its first word, valued by its second).
func TestHarnessPytestAsTheHarnessReads(t *testing.T) {
	log := "tests/t.py::test_progress PASSED  [ 50%]\n" +
		"ERROR: not found: /testbed/tests/t.py::test_gone\n" +
		"PASSED\x1ftests/t.py::test_sep\n" +
		"SKIPPED [1] tests/t.py:3: no network\n" +
		"FAILED tests/t.py::test_f - boom\n" +
		"tests/t.py::test_old FAILED\n" +
		"captured: the value PASSED here\n"
	wantStatuses(t, parseWith(t, ParserHarnessPytest, log), map[string]Status{
		"not": StatusSkip, "tests/t.py::test_sep": StatusPass, "[1]": StatusSkip, "tests/t.py::test_f": StatusFail,
	})
	wantStatuses(t, parseWith(t, ParserHarnessPytestV2, log), map[string]Status{
		"tests/t.py::test_progress": StatusPass, "not": StatusSkip, "[1]": StatusSkip,
		"tests/t.py::test_f": StatusFail, "tests/t.py::test_old": StatusFail, "captured:": StatusSkip,
	})
	// parse_log_matplotlib keeps the first word as the status too.
	wantStatuses(t, parseWith(t, ParserHarnessMatplotlib, "ERROR: file not found: x\n"), map[string]Status{
		"file": StatusSkip,
	})
	// Django's strip() and split() treat \x1c-\x1f as whitespace as well.
	wantStatuses(t, parseWith(t, ParserHarnessDjango, "test_a (m.T) ... ok\x1f\nFAIL:\x1ftest_b (m.T)\n"), map[string]Status{
		"test_a (m.T)": StatusPass, "test_b": StatusFail,
	})
}

// The results helper's records, as -rA summary lines, read by each harness parser as the same lines in a log would
// be: names cut at a space, a skip keyed by no name, an xpass not a status the harness knows; a unittest record
// or a torn line is not a pytest result (ok false).
func TestHarnessSummary(t *testing.T) {
	rec := func(outcome, id string) string {
		return "ctxlab1\tpytest\t" + outcome + "\t" + hex.EncodeToString([]byte(id))
	}
	results := strings.Join([]string{"ctxlab1\tsession", rec("pass", "t.py::a"), rec("fail", "t.py::b[x y]"),
		rec("error", "t.py"), rec("skip", "t.py::c"), rec("xfail", "t.py::d"), rec("xpass", "t.py::e")}, "\n")
	summary, started, ok, err := HarnessSummary(strings.NewReader(results))
	if err != nil || !started || !ok {
		t.Fatalf("started %v ok %v err %v", started, ok, err)
	}
	want := "PASSED t.py::a\nFAILED t.py::b[x y]\nERROR t.py\nSKIPPED [1] t.py::c\nXFAIL t.py::d\nXPASS t.py::e\n"
	if summary != want {
		t.Errorf("summary %q, want %q", summary, want)
	}
	rep, err := ParseHarness(ParserHarnessPytest, strings.NewReader(summary))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Status{}
	for name, rs := range rep.Tests {
		got[name] = rs[0].Status
	}
	wantMap := map[string]Status{"t.py::a": StatusPass, "t.py::b[x": StatusFail, "t.py": StatusFail, "[1]": StatusSkip,
		"t.py::d": StatusPass}
	if !maps.Equal(got, wantMap) {
		t.Errorf("parse_log_pytest read %v, want %v", got, wantMap)
	}
	for _, bad := range []string{"ctxlab1\tunittest\tpass\t61\t61\t\t", "ctxlab1\tpytest\tpass\tzz", "PASSED t.py::a"} {
		if _, _, ok, _ := HarnessSummary(strings.NewReader(bad)); ok {
			t.Errorf("%q read as a pytest result", bad)
		}
	}
}
