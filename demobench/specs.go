package demobench

import "time"

// The corpus lives in _corpus (hidden from the go tool, so its Go files are not part of this module):
//
//	_corpus/common/...             files every repository gets in its first commit; "{{name}}" becomes the repo name
//	_corpus/<repo>/c1, c2, ...     one folder per commit, overlaid on the commit before it
//	_corpus/<repo>/<n>/fix/...     full content after the fix of instance n, for each file the gold patch changes
//	_corpus/<repo>/<n>/test/...    full content after the test patch of instance n, for each test file it changes
//	_corpus/<repo>/<n>/issue.md    the problem statement: a title line, a blank line, the body
//
// go.mod is written by the generator (a go.mod inside the embedded tree would cut it off as another module).

// Owner is the GitHub-style owner of every demo repository.
const Owner = "acme"

type repoSpec struct {
	name      string
	commits   []commitSpec
	instances []instanceSpec
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
	// failToPass and passToPass are test function names; they are unique across the repository.
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
	trapTemplate      = "issue-template"    // the problem statement has the shape of .github/ISSUE_TEMPLATE/bug_report.md
	trapOneChar       = "one-char-fix"      // the fix changes one character
	trapEchoTests     = "echo-tests"        // test files repeat the words but need no change
	trapSymptom       = "symptom-only"      // the issue names an error message or flag defined far from the fix
	trapNamesFunction = "names-function"    // the issue names the function to fix
	trapTwoFiles      = "two-file-fix"      // the gold patch edits two files
	trapLongFile      = "long-gold-file"    // a gold file has 300 or more lines
	trapSharedRepo    = "shared-repository" // the repository carries another instance at another base commit
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
}
