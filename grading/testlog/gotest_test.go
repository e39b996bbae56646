package testlog

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The fixture module: real test files, run with the real `go test -json` once for the whole package.
var fixture = map[string]string{
	"go.mod": "module example.com/tl\n\ngo 1.21\n",
	"ok/ok_test.go": `package ok

import "testing"

func TestPass(t *testing.T) { t.Log("fine") }
func TestSkip(t *testing.T) { t.Skip("not today") }
func TestSubs(t *testing.T) {
	t.Run("good", func(t *testing.T) {})
	t.Run("bad case", func(t *testing.T) { t.Fatal("boom") })
	t.Run("skipped", func(t *testing.T) { t.Skip() })
}
func TestDup(t *testing.T) {}
func TestParallel(t *testing.T) {
	for _, n := range []string{"p1", "p2"} {
		t.Run(n, func(t *testing.T) { t.Parallel(); t.Log("interleaved", n) })
	}
}
`,
	"bad/bad_test.go": `package bad

import (
	"fmt"
	"os"
	"testing"
)

func TestFail(t *testing.T) {
	fmt.Println("not json {")
	fmt.Fprintln(os.Stderr, "to stderr")
	t.Error("nope")
}
func TestDup(t *testing.T) { t.Fail() }
`,
	"pnc/pnc_test.go": `package pnc

import "testing"

func TestBefore(t *testing.T) {}
func TestPanic(t *testing.T) {
	t.Run("inner", func(t *testing.T) { var m map[string]int; m["x"] = 1 })
}
func TestAfter(t *testing.T) {}
`,
	"broken/broken_test.go": `package broken

import "testing"

func TestNever(t *testing.T) { var x int = "s" }
`,
	"setup/setup_test.go": `package setup

import (
	"testing"

	_ "example.com/tl/nonexistent"
)

func TestNeverEither(t *testing.T) {}
`,
	"hang/hang_test.go": `package hang

import (
	"testing"
	"time"
)

func TestQuick(t *testing.T) {}
func TestHang(t *testing.T) { time.Sleep(time.Hour) }
`,
	"notests/lib.go": "package notests\n",
}

var (
	allOut  []byte // go test -json ./... (hang excluded), stdout and stderr together
	hangOut []byte // go test -json -timeout 2s ./hang
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "testlog-fixture-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	for p, c := range fixture {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	goTest := func(args ...string) []byte {
		cmd := exec.Command("go", append([]string{"test", "-json", "-count=1", "-vet=off"}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local", "GOPROXY=off", "GOWORK=off", "GOFLAGS=")
		out, _ := cmd.CombinedOutput() // the exit status is deliberately ignored: grading never uses it
		return out
	}
	allOut = goTest("./ok", "./bad", "./pnc", "./broken", "./setup", "./notests")
	hangOut = goTest("-timeout", "2s", "./hang")
	return m.Run()
}

func parse(t *testing.T, b []byte) Report {
	t.Helper()
	rep, err := ParseGoTestJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func statuses(rep Report, name string) []string {
	var out []string
	for _, r := range rep.Tests[name] {
		out = append(out, strings.TrimPrefix(r.Package, "example.com/tl/")+":"+string(r.Status))
	}
	slices.Sort(out)
	return out
}

func TestParseRealGoTestOutput(t *testing.T) {
	rep := parse(t, allOut)
	want := map[string]string{
		"TestPass":          "ok:pass",
		"TestSkip":          "ok:skip",
		"TestSubs":          "ok:fail",
		"TestSubs/good":     "ok:pass",
		"TestSubs/bad_case": "ok:fail",
		"TestSubs/skipped":  "ok:skip",
		"TestParallel":      "ok:pass",
		"TestParallel/p1":   "ok:pass",
		"TestParallel/p2":   "ok:pass",
		"TestFail":          "bad:fail",
		"TestDup":           "bad:fail,ok:pass",
		"TestBefore":        "pnc:pass",
		"TestPanic":         "pnc:fail",
		"TestPanic/inner":   "pnc:fail",
		"TestAfter":         "",
		"TestNever":         "",
		"TestNeverEither":   "",
	}
	for name, w := range want {
		if got := strings.Join(statuses(rep, name), ","); got != w {
			t.Errorf("%s: got %q, want %q", name, got, w)
		}
	}
	if len(rep.Tests) != len(want)-3 {
		t.Errorf("report has %d test names, want %d: %v", len(rep.Tests), len(want)-3, rep.Tests)
	}
	if out := rep.Tests["TestSubs/bad_case"][0].Output; !strings.Contains(out, "boom") {
		t.Errorf("failed subtest output lacks its message: %q", out)
	}
	if out := rep.Tests["TestPanic"][0].Output; !strings.Contains(out, "assignment to entry in nil map") {
		t.Errorf("panicking test output lacks the panic: %q", out)
	}
	if rep.Tests["TestPass"][0].Output != "" {
		t.Errorf("output kept for a passing test")
	}
	if !slices.Equal(rep.BuildFailed, []string{"example.com/tl/broken", "example.com/tl/setup"}) {
		t.Errorf("BuildFailed = %v", rep.BuildFailed)
	}
	if !strings.Contains(rep.BuildOutput, `cannot use "s"`) || !strings.Contains(rep.BuildOutput, "nonexistent") {
		t.Errorf("BuildOutput lacks the compiler errors: %q", rep.BuildOutput)
	}
	for pkg, st := range map[string]Status{"ok": StatusFail, "bad": StatusFail, "pnc": StatusFail, "broken": StatusFail, "notests": StatusSkip} {
		if got := rep.Packages["example.com/tl/"+pkg]; got != st {
			t.Errorf("package %s: %q, want %q", pkg, got, st)
		}
	}
}

func TestParseTimedOutRun(t *testing.T) {
	rep := parse(t, hangOut)
	if got := strings.Join(statuses(rep, "TestQuick"), ","); got != "hang:pass" {
		t.Errorf("TestQuick: %q", got)
	}
	if got := strings.Join(statuses(rep, "TestHang"), ","); got != "hang:fail" {
		t.Fatalf("a test killed by the timeout should fail, got %q", got)
	}
	if out := rep.Tests["TestHang"][0].Output; !strings.Contains(out, "no result reported") {
		t.Errorf("unterminated test output lacks the note: %q", out)
	}
}

func TestParseToleratesNoise(t *testing.T) {
	clean := parse(t, allOut)
	// Interleave non-JSON lines, glue stderr text in front of an event, add an old-style build failure line.
	var noisy bytes.Buffer
	noisy.WriteString("go: downloading example.com/x v1.0.0\n\n")
	for i, line := range bytes.SplitAfter(allOut, []byte("\n")) {
		if i%7 == 3 && bytes.HasPrefix(line, []byte("{")) {
			noisy.WriteString("stray stderr text ")
		}
		noisy.Write(line)
		if i%5 == 0 {
			noisy.WriteString("# some/pkg\nsome/pkg/x.go:1:1: expected 'package'\n")
		}
	}
	noisy.WriteString("FAIL\texample.com/old [build failed]\n")
	noisy.WriteString(`{"Action":"pass","Package":"p","Test":"TestTruncated"` + "\n") // cut-off event
	rep := parse(t, noisy.Bytes())
	for name := range clean.Tests {
		if a, b := statuses(clean, name), statuses(rep, name); !slices.Equal(a, b) {
			t.Errorf("%s: %v with noise, %v without", name, b, a)
		}
	}
	if len(rep.Tests) != len(clean.Tests) {
		t.Errorf("noise changed the number of tests: %d vs %d", len(rep.Tests), len(clean.Tests))
	}
	if !slices.Contains(rep.BuildFailed, "example.com/old") {
		t.Errorf("old-style build failure line not recognised: %v", rep.BuildFailed)
	}
	if rep.Unparsed <= clean.Unparsed {
		t.Errorf("Unparsed %d, clean %d", rep.Unparsed, clean.Unparsed)
	}
	// Empty input is an empty report, not an error.
	if r := parse(t, nil); len(r.Tests) != 0 {
		t.Errorf("empty input gave tests %v", r.Tests)
	}
}

func TestDecide(t *testing.T) {
	rep := parse(t, allOut)
	hang := parse(t, hangOut)
	cases := []struct {
		name     string
		f2p, p2p []string
		rep      Report
		resolved bool
		passed   []string
		failed   []string
		missing  []string
		skipped  []string
	}{
		{name: "all pass", f2p: []string{"TestSubs/good"}, p2p: []string{"TestPass", "TestParallel/p1"}, rep: rep, resolved: true,
			passed: []string{"TestParallel/p1", "TestPass", "TestSubs/good"}},
		{name: "failing f2p", f2p: []string{"TestFail"}, p2p: []string{"TestPass"}, rep: rep,
			passed: []string{"TestPass"}, failed: []string{"TestFail"}},
		// A skip counts neither way, as in the harness's grading.py (decide_test.go has its table).
		{name: "skip counts neither way in f2p", f2p: []string{"TestSkip"}, rep: rep, resolved: true,
			skipped: []string{"TestSkip"}},
		{name: "skip counts neither way in p2p", f2p: []string{"TestPass"}, p2p: []string{"TestSubs/skipped"}, rep: rep,
			resolved: true, passed: []string{"TestPass"}, skipped: []string{"TestSubs/skipped"}},
		{name: "skip beside a failure", f2p: []string{"TestSkip", "TestFail"}, rep: rep,
			failed: []string{"TestFail"}, skipped: []string{"TestSkip"}},
		{name: "must pass in every package", f2p: []string{"TestDup"}, rep: rep, failed: []string{"TestDup"}},
		{name: "missing fails", f2p: []string{"TestPass"}, p2p: []string{"TestAfter", "TestNever", "TestNoSuch"}, rep: rep,
			passed: []string{"TestPass"}, missing: []string{"TestAfter", "TestNever", "TestNoSuch"}},
		{name: "panic", f2p: []string{"TestPanic/inner"}, rep: rep, failed: []string{"TestPanic/inner"}},
		{name: "subtest name with space", f2p: []string{"TestSubs/bad case"}, rep: rep, failed: []string{"TestSubs/bad case"}},
		{name: "timed out", f2p: []string{"TestQuick"}, p2p: []string{"TestHang"}, rep: hang,
			passed: []string{"TestQuick"}, failed: []string{"TestHang"}},
		{name: "duplicates graded once", f2p: []string{"TestPass", "TestPass"}, p2p: []string{"TestPass"}, rep: rep,
			resolved: true, passed: []string{"TestPass"}},
		{name: "nothing listed resolves, as in the harness", rep: rep, resolved: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := Decide(tc.f2p, tc.p2p, tc.rep)
			if v.Resolved != tc.resolved {
				t.Errorf("Resolved = %v, want %v (%+v)", v.Resolved, tc.resolved, v)
			}
			for _, c := range []struct {
				what      string
				got, want []string
			}{{"passed", v.Passed, tc.passed}, {"failed", v.Failed, tc.failed}, {"missing", v.Missing, tc.missing}, {"skipped", v.Skipped, tc.skipped}} {
				if !slices.Equal(c.got, c.want) && !(len(c.got) == 0 && len(c.want) == 0) {
					t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
				}
			}
		})
	}
}

func TestSplitGoTestName(t *testing.T) {
	for _, c := range []struct{ in, pkg, test string }{
		{"TestX", "", "TestX"},
		{"TestX/sub case", "", "TestX/sub case"},
		{"example.com/m/pkg::TestX", "example.com/m/pkg", "TestX"},
		{"./pkg::TestX/sub", "./pkg", "TestX/sub"},
		{"pkg/sub::TestX/a::b", "pkg/sub", "TestX/a::b"},
		{"TestX/a::b", "", "TestX/a::b"},
		{"tests/test_x.py::test_y", "", "tests/test_x.py::test_y"},
		{"tests/test_x.py::TestCls::test_y", "", "tests/test_x.py::TestCls::test_y"},
		{"pkg::Testing", "", "pkg::Testing"},
	} {
		if pkg, test := SplitGoTestName(c.in); pkg != c.pkg || test != c.test {
			t.Errorf("SplitGoTestName(%q) = %q, %q; want %q, %q", c.in, pkg, test, c.pkg, c.test)
		}
	}
}

func TestDecideQualified(t *testing.T) {
	rep := Report{Tests: map[string][]TestResult{
		"TestSame":       {{Package: "example.com/m", Dir: ".", Status: StatusPass}, {Package: "example.com/m/sub", Dir: "sub", Status: StatusFail}},
		"TestOld/a_case": {{Package: "example.com/m/sub", Status: StatusPass}}, // no Dir: a report from elsewhere
	}}
	for name, want := range map[string]string{
		"TestSame": "failed", "example.com/m::TestSame": "passed", ".::TestSame": "passed", "./sub::TestSame": "failed",
		"sub::TestSame": "failed", "example.com/m/sub::TestSame": "failed", "other::TestSame": "missing",
		"sub::TestOld/a case": "passed", "m/sub::TestOld/a_case": "passed", "ub::TestOld/a_case": "missing",
	} {
		v := Decide([]string{name}, nil, rep)
		got := "missing"
		switch {
		case len(v.Passed) == 1:
			got = "passed"
		case len(v.Failed) == 1:
			got = "failed"
		}
		if got != want {
			t.Errorf("%s: %s, want %s (%+v)", name, got, want, v)
		}
	}
}

// Within says which other top-level tests were running around a result, as test2json's framing shows an inner
// runner's (testing.RunTests inside TestOuter): its results are reported at top level while TestOuter runs; a result
// before TestOuter started, or one whose test outlived it, has none.
func TestParseWithin(t *testing.T) {
	ev := func(action, test string) string {
		return fmt.Sprintf(`{"Action":%q,"Package":"example.com/p","Test":%q}`+"\n", action, test)
	}
	stream := ev("run", "early") + ev("pass", "early") +
		ev("run", "TestOuter") + ev("run", "inner suite") + ev("run", "inner suite/TestSomething") +
		ev("pass", "inner suite/TestSomething") + ev("pass", "inner suite") + ev("pass", "no run event") +
		ev("run", "outlives") + ev("pass", "TestOuter") + ev("pass", "outlives") +
		ev("run", "TestA") + ev("run", "TestA/sub") + ev("pass", "TestA/sub") + ev("pass", "TestA") +
		ev("run", "died")
	rep, err := ParseGoTestJSON(strings.NewReader(stream))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]string{"early": nil, "inner suite": {"TestOuter"},
		"inner suite/TestSomething": {"TestOuter"}, "no run event": {"TestOuter"}, "outlives": nil, "TestOuter": nil,
		"TestA/sub": nil, "died": nil} {
		rs := rep.Tests[name]
		if len(rs) != 1 || !slices.Equal(rs[0].Within, want) {
			t.Errorf("%s: %+v, want Within %v", name, rs, want)
		}
	}
}
