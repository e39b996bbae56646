package testlog

import (
	"path"
	"strings"
	"unicode"
	"unicode/utf8"
)

// SplitGoTestName splits a Go test name as datasets write it: bare ("TestX", "TestX/sub") or package-qualified
// ("import/path::TestX", "./pkg::TestX", "pkg/sub::TestX/sub"). pkg is empty for a bare name. A name counts as
// qualified only when what follows the first "::" starts with a Go test function's name, so a subtest name holding
// "::" ("TestX/a::b") stays bare, and pytest node ids ("tests/test_x.py::test_y") are never taken for Go names.
func SplitGoTestName(name string) (pkg, test string) {
	name = strings.TrimSpace(name)
	before, after, ok := strings.Cut(name, "::")
	if !ok || before == "" || strings.ContainsAny(before, " \t") {
		return "", name
	}
	top, _, _ := strings.Cut(after, "/")
	if !isIdent(top) || !IsGoTestFunc(top) {
		return "", name
	}
	return before, after
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !(r == '_' || unicode.IsLetter(r) || (i > 0 && unicode.IsDigit(r))) {
			return false
		}
	}
	return true
}

// PackageMatches reports whether a name's package qualifier q names the package with this import path, which lies
// in folder dir (slash-separated, relative to the module root; "." for the root; empty when unknown). q is an import
// path, or a folder relative to the module root with or without a leading "./". When dir is unknown, a relative q
// matches the trailing elements of the import path.
func PackageMatches(q, importPath, dir string) bool {
	if q == importPath {
		return true
	}
	rel := path.Clean(strings.TrimPrefix(q, "./"))
	if dir != "" {
		return rel == path.Clean(dir)
	}
	return rel != "." && strings.HasSuffix(importPath, "/"+rel)
}

// IsGoTestFunc reports whether name has the shape of a function go test runs as a test: a test, an example or a
// fuzz target ("Test", "Example" or "Fuzz", followed by nothing or by a character that is not a lower-case letter,
// as cmd/go's isTest has it: ExampleReader_Read and Example_second are examples, Examplefoo is not). TestMain,
// go test's hook, is not one.
func IsGoTestFunc(name string) bool {
	if name == "TestMain" {
		return false
	}
	for _, prefix := range goTestPrefixes {
		if isGoTest(name, prefix) {
			return true
		}
	}
	return false
}

// goTestPrefixes are the kinds of function go test runs as tests (benchmarks run only with -bench).
var goTestPrefixes = []string{"Test", "Example", "Fuzz"}

// isGoTest is cmd/go's isTest: name is prefix followed by nothing or by a rune that is not a lower-case letter.
func isGoTest(name, prefix string) bool {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return false
	}
	if rest == "" {
		return true
	}
	r, _ := utf8.DecodeRuneInString(rest)
	return !unicode.IsLower(r)
}

// GoTestKind says which kind of test function name has the shape of: "Test", "Example" or "Fuzz", or "".
func GoTestKind(name string) string {
	for _, prefix := range goTestPrefixes {
		if isGoTest(name, prefix) {
			return prefix
		}
	}
	return ""
}
