package testrun

import (
	"slices"
	"strings"
	"testing"

	"ctxlab/grading/testlog"
	"ctxlab/testkit/filetree"
)

// innerTests is a repository whose test TestOuter drives an inner runner (testing.RunTests, as testify's own suite
// tests do) over a suite named "inner suite", whose subtest TestSomething checks the fix. go test -json reports the
// inner suite's results under names no top-level Test function declares: "inner suite/TestSomething". Its
// matchString is a real regexp match, so the inner suite runs only when -test.run names it too.
var innerTests = map[string]string{
	"go.mod": "module example.com/inner\n\ngo 1.21\n",
	"outer_test.go": `package inner

import (
	"regexp"
	"testing"
)

func TestOuter(t *testing.T) {
	match := func(pat, str string) (bool, error) { return regexp.MatchString(pat, str) }
	testing.RunTests(match, []testing.InternalTest{{
		Name: "inner suite",
		F: func(t *testing.T) {
			t.Run("TestSomething", func(t *testing.T) {
				if !Fixed() {
					t.Fatal("not fixed")
				}
			})
		},
	}})
}

func TestOther(t *testing.T) {}
`,
}

// innerFix is the repository's code with (fixed) or without the fix.
func innerFix(fixed bool) string {
	return "package inner\n\nfunc Fixed() bool { return " + map[bool]string{true: "true", false: "false"}[fixed] + " }\n"
}

const innerName = "inner suite/TestSomething"

// Results an inner runner reports while a declared test runs count, under the names go test -json gives them, as
// they do under go test: the listed name runs through the declared test that holds the inner suite's name.
func TestInnerRunnerResultsCount(t *testing.T) {
	t.Parallel()
	for _, fixed := range []bool{true, false} {
		dir := t.TempDir()
		filetree.Write(t, dir, innerTests)
		filetree.Write(t, dir, map[string]string{"fix.go": innerFix(fixed)})
		want := map[bool]string{true: "pass", false: "fail"}[fixed]
		if ref := goTestJSON(t, dir, "./..."); ref[innerName] != want {
			t.Fatalf("fixed %v: go test reports %s %q, want %s", fixed, innerName, ref[innerName], want)
		}
		res := run(t, Options{Dir: dir, Tests: []string{innerName}})
		if got := status(res.Report, innerName); got != want {
			t.Errorf("fixed %v: %s %q, want %s as go test reports it (not declared %v, undeclared %v)\n%s",
				fixed, innerName, got, want, res.Report.NotDeclared, res.Report.Undeclared, res.Output)
		}
		if v := testlog.Decide([]string{innerName}, nil, res.Report); v.Resolved != fixed {
			t.Errorf("fixed %v: verdict %+v", fixed, v)
		}
		if status(res.Report, "TestOther") != "" {
			t.Errorf("fixed %v: TestOther ran, though no listed name needs it", fixed)
		}
	}
}

// A model's non-test code that runs an inner runner of its own before any test runs (testing.Main from an init, the
// first thing the test binary does, which then exits), or prints the testing package's marked framing for the inner
// names, does not make the listed inner test pass: no declared test was running when those results were reported.
func TestInnerRunnerResultsForgedFromInitAreNotBelieved(t *testing.T) {
	t.Parallel()
	forgeries := map[string]string{
		// testing.Main parses the test flags, runs the given tests with the testing package's own framing and exits.
		"testing.Main from init": `package inner

import "testing"

func init() {
	testing.Main(func(string, string) (bool, error) { return true, nil }, []testing.InternalTest{{
		Name: "inner suite",
		F:    func(t *testing.T) { t.Run("TestSomething", func(*testing.T) {}) },
	}}, nil, nil)
}
`,
		"marked framing from init": `package inner

import (
	"fmt"
	"os"
)

func init() {
	fmt.Print("\x16=== RUN   inner suite\n\x16=== RUN   inner suite/TestSomething\n" +
		"\x16--- PASS: inner suite/TestSomething (0.00s)\n\x16--- PASS: inner suite (0.00s)\n")
	os.Exit(0)
}
`,
	}
	for name, forge := range forgeries {
		dir := t.TempDir()
		filetree.Write(t, dir, innerTests)
		filetree.Write(t, dir, map[string]string{"fix.go": innerFix(false), "forge.go": forge})
		res := run(t, Options{Dir: dir, Tests: []string{innerName}})
		if v := testlog.Decide([]string{innerName}, nil, res.Report); v.Resolved || len(v.Passed) > 0 {
			t.Errorf("%s: forged inner results believed: %+v\n%s", name, v, res.Output)
		}
		if !slices.Contains(res.Report.Undeclared, "example.com/inner::"+innerName) {
			t.Errorf("%s: the forged result was not seen and dropped: undeclared %v\n%s", name, res.Report.Undeclared,
				res.Output)
		}
		if !strings.Contains(string(res.Output), "inner suite/TestSomething") {
			t.Errorf("%s: the forgery did not run\n%s", name, res.Output)
		}
	}
}
