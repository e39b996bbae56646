package demobench

import "time"

// The corpus lives in _corpus (hidden from the go tool, so its Go files are not part of this module):
//
//	_corpus/common/...             files every Go repository gets in its first commit; "{{name}}" becomes the repo name
//	_corpus/common-python/...      the same for Python repositories
//	_corpus/modules/<dir>/...      the files of a third-party Go module (moduleSpec) published into <dataset>/goproxy
//	_corpus/<repo>/c1, c2, ...     one folder per commit, overlaid on the commit before it
//	_corpus/<repo>/<n>/fix/...     full content after the fix of instance n, for each file the gold patch changes
//	_corpus/<repo>/<n>/test/...    full content after the test patch of instance n, for each test file it changes
//	_corpus/<repo>/<n>/issue.md    the problem statement: a title line, a blank line, the body
//
// go.mod and go.sum are written by the generator (a go.mod inside the embedded tree would cut it off as another
// module), for the repositories and for the modules alike.

// Owner is the GitHub-style owner of every demo repository.
const Owner = "acme"

type repoSpec struct {
	name string
	// lang is langGo (a module example.com/<name>) or langPython (a package with unittest tests, which a bare
	// python3 runs; no go.mod).
	lang string
	// requires lists the modules (moduleSpec.path) the repository's go.mod requires from its first commit.
	requires  []string
	commits   []commitSpec
	instances []instanceSpec
}

// PythonTestCmd runs the tests of the demo's Python repositories (specs/demo.jsonnet's grading.test_cmd.python):
// they are unittest tests, which a bare python3 runs, taking the dotted ids their instances list.
const PythonTestCmd = "python3 -m unittest -v"

// Repository languages.
const (
	langGo     = "go"
	langPython = "python"
)

// moduleSpec is a third-party Go module the generator publishes into the dataset's module proxy folder, so that a
// repository can depend on something outside the standard library and still be graded offline.
type moduleSpec struct {
	path    string // module path, e.g. example.org/textwrap
	version string // its only version
	dir     string // folder under _corpus/modules
	when    time.Time
}

type commitSpec struct {
	dir     string // folder under _corpus/<repo>
	message string
	author  int // index into authors
	when    time.Time
}

type instanceSpec struct {
	n    int // instance number: id acme__<repo>-<n>, folder _corpus/<repo>/<n>
	base int // index of the base commit in repoSpec.commits
	// failToPass and passToPass name the tests. Go: a bare test function name ("TestX", run in every package that
	// declares it) or a package-qualified one ("./pkg::TestX" or "example.com/<repo>/pkg::TestX"); the rows carry
	// qualified names only when packageQualifiedNames is set (see testNames). Python: the dotted ids
	// `python3 -m unittest` takes ("tests.test_x.XTest.test_y").
	failToPass, passToPass []string
	version                string
	createdAt              time.Time
	// Kinds of difficulty the instance exercises, for the package documentation and tests.
	traps []string
	// echo lists test files that repeat the words but need no change (trapEchoTests).
	echo []string
	// symptom is text the issue quotes (an error message, a flag, an output line) that is defined outside the gold
	// files (trapSymptom).
	symptom string
	// function is a function the issue names that a gold file declares (trapNamesFunction).
	function string
}

// Trap names used in instanceSpec.traps.
const (
	trapTemplate      = "issue-template"     // the problem statement has the shape of .github/ISSUE_TEMPLATE/bug_report.md
	trapOneChar       = "one-char-fix"       // the fix changes one character
	trapEchoTests     = "echo-tests"         // test files repeat the words but need no change
	trapSymptom       = "symptom-only"       // the issue names an error message or flag defined far from the fix
	trapNamesFunction = "names-function"     // the issue names the function to fix
	trapTwoFiles      = "two-file-fix"       // the gold patch edits two files
	trapLongFile      = "long-gold-file"     // a gold file has 300 or more lines
	trapSharedRepo    = "shared-repository"  // the repository carries another instance at another base commit
	trapBlankTail     = "blank-context-tail" // the gold patch ends with a hunk whose last line is a blank context line
	trapSameTestName  = "same-test-name"     // a listed Go test name is declared in several packages
	trapDependency    = "module-dependency"  // the repository requires a third-party module (from the goproxy folder)
	trapListedTests   = "listed-tests"       // Python: a PASS_TO_PASS id lies in a test file the test patch leaves alone
)

type author struct{ name, email string }

var authors = []author{
	{"Dana Whitfield", "dana@acme.example"},
	{"Ravi Menon", "ravi.menon@acme.example"},
	{"Lena Brandt", "lena@acme.example"},
}

func utc(year int, month time.Month, day, hour, min, sec int) time.Time {
	return time.Date(year, month, day, hour, min, sec, 0, time.UTC)
}

// repos is the whole benchmark. Changing anything here or in _corpus changes Version.
var repos = []repoSpec{
	{
		name: "humanize",
		commits: []commitSpec{
			{"c1", "Initial import: byte sizes and counts", 0, utc(2023, 11, 6, 10, 14, 3)},
			{"c2", "Add Duration, LongDuration and RelTime", 1, utc(2023, 12, 12, 16, 40, 51)},
			{"c3", "Add Ordinal and List; humanize command gains duration and ordinal", 0, utc(2024, 1, 22, 9, 5, 17)},
		},
		instances: []instanceSpec{{
			n: 1, base: 2,
			failToPass: []string{"TestDurationSubSecond"},
			passToPass: []string{"TestDurationMinutes", "TestDurationHours", "TestBytesSI"},
			version:    "0.3", createdAt: utc(2024, 2, 3, 11, 26, 40),
			traps:    []string{trapTemplate, trapOneChar, trapNamesFunction},
			function: "Duration",
		}},
	},
	{
		name: "semver",
		commits: []commitSpec{
			{"c1", "Parse and compare semantic versions", 2, utc(2023, 9, 4, 8, 30, 0)},
			{"c2", "Add version constraints (~, ^, partial versions, ranges)", 2, utc(2023, 9, 20, 14, 2, 45)},
			{"c3", "Add Sort, Latest and bump helpers; semver command", 1, utc(2023, 10, 15, 19, 11, 8)},
			{"c4", "cli: add satisfies --constraint and --json; TextMarshaler support", 2, utc(2023, 12, 1, 7, 48, 22)},
		},
		instances: []instanceSpec{
			{
				n: 1, base: 2,
				failToPass: []string{"TestComparePrereleaseNumeric", "TestSortNumericPrereleases"},
				passToPass: []string{"TestCompareCore", "TestComparePrereleaseVsRelease", "TestSortPrereleaseOrder", "TestParseValid"},
				version:    "0.3", createdAt: utc(2023, 11, 2, 13, 37, 5),
				traps:    []string{trapTemplate, trapNamesFunction, trapEchoTests, trapSharedRepo},
				echo:     []string{"sort_test.go"},
				function: "compareIdentifier",
			},
			{
				n: 2, base: 3,
				failToPass: []string{"TestConstraintCaretZeroMajor"},
				passToPass: []string{"TestConstraintCaretMajor", "TestConstraintTilde", "TestConstraintSimple"},
				version:    "0.4", createdAt: utc(2024, 1, 9, 10, 2, 59),
				traps:   []string{trapTemplate, trapSymptom, trapSharedRepo},
				symptom: "does not satisfy",
			},
		},
	},
	{
		name: "kvconf",
		commits: []commitSpec{
			{"c1", "kvconf: INI-style parser with strict mode and typed getters", 1, utc(2024, 1, 8, 15, 20, 12)},
			{"c2", "Add Decode and ExpandEnv", 1, utc(2024, 2, 19, 11, 3, 40)},
			{"c3", "Add Write and the kvconf command (lint, get, fmt)", 0, utc(2024, 3, 27, 17, 55, 2)},
		},
		instances: []instanceSpec{{
			n: 1, base: 2,
			failToPass: []string{"TestParseQuotedHash", "TestParseQuotedSemicolonWithComment"},
			passToPass: []string{"TestParseSections", "TestParseComments", "TestParseQuotedValues", "TestUnterminatedQuoteError"},
			version:    "0.3", createdAt: utc(2024, 4, 15, 8, 44, 31),
			traps:   []string{trapTemplate, trapSymptom, trapEchoTests, trapLongFile},
			echo:    []string{"errors_test.go"},
			symptom: "unterminated quoted value",
		}},
	},
	{
		name: "ratelimit",
		commits: []commitSpec{
			{"c1", "Token bucket and Limiter", 0, utc(2023, 6, 12, 9, 0, 0)},
			{"c2", "Add ParseRate and Keyed limiters", 2, utc(2023, 7, 3, 12, 31, 16)},
			{"c3", "Add HTTP middleware and the ratebench command", 0, utc(2023, 8, 21, 16, 7, 48)},
		},
		instances: []instanceSpec{{
			n: 1, base: 2,
			failToPass: []string{"TestBucketRefillsBetweenFrequentCalls", "TestMiddlewareRetryAfterRoundsUp"},
			passToPass: []string{"TestBucketBurst", "TestBucketRefillWholeSeconds", "TestMiddlewareAllowsUnderLimit", "TestMiddlewareRetryAfterWholeSeconds"},
			version:    "0.3", createdAt: utc(2023, 9, 14, 21, 15, 0),
			traps: []string{trapTemplate, trapTwoFiles},
		}},
	},
	{
		name: "cronspec",
		commits: []commitSpec{
			{"c1", "Cron expression parser and Schedule.Next", 1, utc(2023, 4, 3, 10, 10, 10)},
			{"c2", "Add Describe", 1, utc(2023, 5, 11, 14, 45, 30)},
			{"c3", "Add the cronnext command", 2, utc(2023, 6, 29, 8, 20, 5)},
		},
		instances: []instanceSpec{{
			n: 1, base: 2,
			failToPass: []string{"TestParseRangeWithStep", "TestNextRangeWithStep"},
			passToPass: []string{"TestParseEveryN", "TestParseListsAndRanges", "TestNextEveryFiveMinutes", "TestDescribeRangeWithStep"},
			version:    "0.3", createdAt: utc(2023, 8, 2, 12, 0, 41),
			traps: []string{trapTemplate, trapLongFile, trapEchoTests},
			echo:  []string{"describe_test.go"},
		}},
	},
	{
		name: "tabular",
		commits: []commitSpec{
			{"c1", "Plain-text tables with alignment and truncation", 2, utc(2024, 4, 2, 9, 30, 0)},
			{"c2", "Markdown output and CSV input", 0, utc(2024, 4, 30, 18, 12, 27)},
			{"c3", "Boxed tables and the tabular command", 2, utc(2024, 6, 10, 11, 1, 9)},
		},
		instances: []instanceSpec{{
			n: 1, base: 2,
			failToPass: []string{"TestDisplayWidthCountsCharacters", "TestTruncateAccented", "TestRenderAccentedColumns"},
			passToPass: []string{"TestRenderSimple", "TestRenderRightAlign", "TestMarkdownHeader", "TestMarkdownAlignedColumns"},
			version:    "0.3", createdAt: utc(2024, 7, 1, 15, 33, 18),
			traps:   []string{trapTemplate, trapSymptom, trapEchoTests},
			echo:    []string{"markdown_test.go"},
			symptom: "markdown",
		}},
	},
	{
		name: "dotenv",
		commits: []commitSpec{
			{"c1", "dotenv: Parse, Map and Load for .env files", 1, utc(2024, 2, 5, 10, 12, 44)},
			{"c2", "Add Expand and ExpandAll", 2, utc(2024, 3, 1, 16, 30, 2)},
			{"c3", "Add the dotenv command (print, run)", 1, utc(2024, 3, 18, 9, 41, 27)},
		},
		instances: []instanceSpec{{
			n: 1, base: 2,
			failToPass: []string{"TestParseInlineComment"},
			passToPass: []string{"TestParseBasic", "TestParseQuoted", "TestParseErrors", "TestExpandReferences"},
			version:    "0.3", createdAt: utc(2024, 4, 9, 14, 5, 51),
			traps: []string{trapTemplate, trapBlankTail},
		}},
	},
	{
		name: "units",
		commits: []commitSpec{
			{"c1", "size: Parse and Format byte sizes", 0, utc(2023, 7, 10, 8, 2, 19)},
			{"c2", "duration: Parse and Format with days and weeks", 0, utc(2023, 8, 14, 13, 47, 0)},
			{"c3", "Add the units command", 2, utc(2023, 9, 5, 18, 22, 36)},
		},
		instances: []instanceSpec{{
			n: 1, base: 2,
			failToPass: []string{"example.com/units/duration::TestParse"},
			passToPass: []string{"./size::TestParse", "./duration::TestFormat", "./size::TestFormat", "./size::TestParseIEC"},
			version:    "0.3", createdAt: utc(2023, 10, 3, 7, 55, 12),
			traps:    []string{trapTemplate, trapSameTestName, trapNamesFunction},
			function: "Parse",
		}},
	},
	{
		name:     "relnotes",
		requires: []string{"example.org/textwrap"},
		commits: []commitSpec{
			{"c1", "Parse the Unreleased section of a changelog", 2, utc(2024, 1, 15, 11, 0, 8)},
			{"c2", "Render release notes, wrapped with example.org/textwrap", 2, utc(2024, 2, 2, 15, 18, 40)},
			{"c3", "Add the relnotes command", 0, utc(2024, 2, 20, 10, 9, 55)},
		},
		instances: []instanceSpec{{
			n: 1, base: 2,
			failToPass: []string{"TestRenderWrapsWithinWidth"},
			passToPass: []string{"TestRenderGroupsByKind", "TestRenderEmpty", "TestParseUnreleased", "TestParseUnknownKind"},
			version:    "0.3", createdAt: utc(2024, 3, 12, 17, 40, 3),
			traps: []string{trapTemplate, trapDependency},
		}},
	},
	{
		name: "tablefmt",
		lang: langPython,
		commits: []commitSpec{
			{"c1", "format_table with alignment detection and display widths", 1, utc(2024, 5, 6, 9, 15, 0)},
			{"c2", "Markdown and grid styles; read_csv", 1, utc(2024, 5, 27, 14, 2, 31)},
			{"c3", "Add the tablefmt command", 0, utc(2024, 6, 17, 11, 48, 9)},
		},
		instances: []instanceSpec{{
			n: 1, base: 2,
			failToPass: []string{"tests.test_align.AlignTest.test_negative_numbers_align_right",
				"tests.test_core.CoreTest.test_negative_numbers_column"},
			passToPass: []string{"tests.test_align.AlignTest.test_integers_align_right",
				"tests.test_core.CoreTest.test_format_simple", "tests.test_width.WidthTest.test_plain_ascii_width",
				"tests.test_styles.StylesTest.test_markdown_style"},
			version: "0.3", createdAt: utc(2024, 7, 8, 8, 30, 47),
			traps: []string{trapTemplate, trapListedTests},
		}},
	},
}
