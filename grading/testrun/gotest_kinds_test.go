package testrun

import (
	"archive/zip"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"ctxlab/grading/sandbox"
	"ctxlab/grading/testlog"
	"ctxlab/testkit/filetree"
)

// kindsModule is a package with every kind of test go test runs, and two it does not: tests in the package and in
// its external _test package, examples with ordered, unordered and empty output comments (one of them wrong), an
// example without one (compiled, not run), a fuzz target with f.Add seeds and a corpus file, a TestMain (run, not
// reported), a benchmark (run only with -bench) and a helper that takes a *testing.T.
var kindsModule = map[string]string{
	"kinds.go": "package kinds\n\nfunc Double(n int) int { return 2 * n }\n",
	"kinds_test.go": `package kinds

import (
	"fmt"
	"os"
	"testing"
)

func TestMain(m *testing.M) { os.Exit(m.Run()) }

func TestDouble(t *testing.T) {
	if Double(2) != 4 {
		t.Fatal("wrong")
	}
}

func FuzzDouble(f *testing.F) {
	f.Add(1)
	f.Add(-3)
	f.Fuzz(func(t *testing.T, n int) {
		if Double(n)%2 != 0 {
			t.Fatal("odd")
		}
	})
}

func BenchmarkDouble(b *testing.B) {
	for b.Loop() {
		Double(3)
	}
}

func helperTest(t *testing.T) { t.Helper() }

func ExampleDouble() {
	fmt.Println(Double(21))
	// Output: 42
}
`,
	"example_test.go": `package kinds_test

import (
	"fmt"
	"testing"

	"example.com/kinds"
)

func TestExternal(t *testing.T) {
	if kinds.Double(0) != 0 {
		t.Fatal("wrong")
	}
}

func Example_unordered() {
	fmt.Println(kinds.Double(1))
	fmt.Println(kinds.Double(2))
	// Unordered output:
	// 4
	// 2
}

func Example_empty() {
	// Output:
}

func Example_wrong() {
	fmt.Println(kinds.Double(1))
	// Output: 3
}

func Example_noOutput() {
	fmt.Println(kinds.Double(1))
}
`,
	"testdata/fuzz/FuzzDouble/corpus1": "go test fuzz v1\nint(7)\n",
}

// What go test runs is declared, run and reported as go test reports it: examples with an output comment, fuzz
// targets with their seeds and corpus files as subtests, the external package's tests; an example without output,
// a benchmark, TestMain and a helper are not run as tests by go test and stay missing here.
func TestEveryKindOfGoTest(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	filetree.Write(t, dir, kindsModule)
	filetree.Write(t, dir, map[string]string{"go.mod": "module example.com/kinds\n\ngo 1.21\n"})
	listed := []string{"TestDouble", "TestExternal", "ExampleDouble", "Example_unordered", "Example_empty",
		"Example_wrong", "FuzzDouble", "FuzzDouble/seed#1", "FuzzDouble/corpus1", "Example_noOutput", "BenchmarkDouble",
		"helperTest", "TestMain"}
	res := run(t, Options{Dir: dir, Tests: listed})
	ref := goTestJSON(t, dir, "-run", RunPattern(listed))
	for _, name := range append(listed, "FuzzDouble/seed#0") {
		want := ref[name]
		if want == "" {
			want = "missing"
		}
		if got := statusOrMissing(res.Report, name); got != want {
			t.Errorf("%s: ctxlab %s, go test %s", name, got, want)
		}
	}
	// The reference itself says what go test does, so that this test checks something.
	for name, want := range map[string]string{"ExampleDouble": "pass", "Example_unordered": "pass", "Example_empty": "pass",
		"Example_wrong": "fail", "FuzzDouble/seed#1": "pass", "FuzzDouble/corpus1": "pass", "Example_noOutput": "",
		"BenchmarkDouble": "", "TestMain": ""} {
		if ref[name] != want {
			t.Errorf("go test reported %s as %q, want %q", name, ref[name], want)
		}
	}
	if !slices.Equal(res.Report.NotDeclared, []string{"BenchmarkDouble", "Example_noOutput", "TestMain", "helperTest"}) {
		t.Errorf("NotDeclared = %v", res.Report.NotDeclared)
	}
	if v := testlog.Decide([]string{"ExampleDouble", "FuzzDouble"}, []string{"Example_unordered", "TestExternal"},
		res.Report); !v.Resolved {
		t.Errorf("examples and fuzz seeds that pass do not resolve: %+v\n%s", v, res.Output)
	}
}

// goTestJSON runs go test -json -count=1 in dir with args and returns each reported test's last status.
func goTestJSON(t *testing.T, dir string, args ...string) map[string]string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"test", "-json", "-count=1"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOTOOLCHAIN=local")
	out, _ := cmd.Output() // failing tests exit 1
	got := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		var ev struct{ Action, Test string }
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Test != "" &&
			(ev.Action == "pass" || ev.Action == "fail" || ev.Action == "skip") {
			got[ev.Test] = ev.Action
		}
	}
	if len(got) == 0 {
		t.Fatalf("go test reported nothing:\n%s", out)
	}
	return got
}

func statusOrMissing(rep testlog.Report, name string) string {
	if s := status(rep, name); s != "" {
		return s
	}
	return "missing"
}

// argsModule's test records how it was started, to compare a graded run with go test's own.
const argsTest = `package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRecordStart(t *testing.T) {
	wd, _ := os.Getwd()
	path := strings.Split(os.Getenv("PATH"), string(os.PathListSeparator))
	rec := append([]string{filepath.Base(os.Args[0]), filepath.Base(wd), filepath.Base(os.Getenv("PWD")), path[0]}, os.Args[1:]...)
	if err := os.WriteFile(os.Getenv("RECORD"), []byte(strings.Join(rec, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	// As cobra's Execute does: the command line is os.Args[1:] unless the binary is the package's own test binary.
	if filepath.Base(os.Args[0]) != "cli.test" {
		t.Fatalf("os.Args[0] is %s: a command-line library would parse %q as its arguments", os.Args[0], os.Args[1:])
	}
}
`

// A test binary runs as go test runs it: named <pkg>.test (the element before a major version), in its package's
// folder (PWD too), the toolchain's bin first on PATH, every flag one -test.flag=value argument in go test's order.
// The record of a graded run must equal go test's own, the timeout's value aside.
func TestBinaryRunsAsGoTestRunsIt(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	filetree.Write(t, dir, map[string]string{
		"go.mod":                "module example.com/tool/cli/v2\n\ngo 1.21\n",
		"cli_test.go":           argsTest,
		"sub/cli/v3/v3_test.go": strings.Replace(argsTest, "package cli", "package v3", 1),
		"sub/cli/v3/doc.go":     "package v3\n",
	})
	record := func(name string) []string {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(b), "\n")
		for i, l := range lines {
			if strings.HasPrefix(l, "-test.timeout=") {
				lines[i] = "-test.timeout=T"
			}
		}
		return lines
	}
	for _, c := range []struct{ name, pkg string }{{"root", "."}, {"major version folder", "./sub/cli/v3"}} {
		ours, theirs := filepath.Join(t.TempDir(), "ours"), filepath.Join(t.TempDir(), "theirs")
		listed := "./" + strings.TrimPrefix(c.pkg, "./") + "::TestRecordStart"
		res := run(t, Options{Dir: dir, Tests: []string{listed}, ExtraEnv: []string{"RECORD=" + ours}})
		if got := status(res.Report, "TestRecordStart"); got != "pass" {
			t.Errorf("%s: TestRecordStart %q\n%s", c.name, got, res.Output)
		}
		cmd := exec.Command("go", "test", "-json", "-count=1", "-run", "^(TestRecordStart)$", c.pkg)
		cmd.Dir, cmd.Env = dir, append(os.Environ(), "RECORD="+theirs, "GOTOOLCHAIN=local")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go test: %v\n%s", err, out)
		}
		if o, g := record(ours), record(theirs); !slices.Equal(o, g) {
			t.Errorf("%s: graded run started as\n%q\ngo test started it as\n%q", c.name, o, g)
		}
	}
}

// A test that runs the go command (to build a program of its repository, as cobra's tests do) works in the
// sandbox as under go test: it finds the modules the grade downloaded (the module cache the build used, read-only)
// and a build cache it may write (the grader's, warm, under a private layer), and its writes reach neither.
func TestTestsRunGoBuildInSandbox(t *testing.T) {
	if ok, why := sandbox.Available(); !ok {
		t.Skipf("no sandbox here (%s)", why)
	}
	t.Parallel()
	proxy := fileProxy(t, "example.com/dep", "v1.0.0", map[string]string{
		"dep.go": "package dep\n\nfunc Answer() int { return 42 }\n",
	})
	dir := t.TempDir()
	filetree.Write(t, dir, map[string]string{
		"go.mod":         "module example.com/m\n\ngo 1.21\n\nrequire example.com/dep v1.0.0\n",
		"cmd/app/app.go": "package main\n\nimport (\n\t\"fmt\"\n\n\t\"example.com/dep\"\n)\n\nfunc main() { fmt.Println(dep.Answer()) }\n",
		"m_test.go": `package m

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestBuildsTheApp(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "app")
	out, err := exec.Command("go", "build", "-o", bin, "./cmd/app").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	got, err := exec.Command(bin).Output()
	if err != nil || strings.TrimSpace(string(got)) != "42" {
		t.Fatalf("app: %v %q", err, got)
	}
	if err := os.WriteFile(filepath.Join(os.Getenv("GOMODCACHE"), "poison"), nil, 0o644); err == nil {
		t.Fatal("the module cache is writable by the tests")
	}
	for _, name := range []string{os.Getenv("POISON"), filepath.Join("00", strings.Repeat("0", 64)+"-d")} {
		if err := os.WriteFile(filepath.Join(os.Getenv("GOCACHE"), name), []byte("poison"), 0o644); err != nil {
			t.Fatalf("the build cache is not writable: %v", err)
		}
	}
}
`,
	})
	goModTidy(t, dir, proxy)
	poison := "ctxlab-poison-" + filepath.Base(dir)
	res := run(t, Options{Dir: dir, Tests: []string{"TestBuildsTheApp"}, GoProxy: proxy, Isolate: true,
		ExtraEnv: []string{"POISON=" + poison}})
	if got := status(res.Report, "TestBuildsTheApp"); got != "pass" || res.Isolation != sandbox.IsolationNamespaces {
		t.Fatalf("TestBuildsTheApp %q (isolation %s)\n%s", got, res.Isolation, res.Output)
	}
	// What the builds compiled is kept in the grader's cache; what the test wrote there, even named as a cache entry,
	// is not.
	for _, name := range []string{poison, filepath.Join("00", strings.Repeat("0", 64)+"-d")} {
		if _, err := os.Stat(filepath.Join(envValue(Env(nil), "GOCACHE"), name)); !os.IsNotExist(err) {
			t.Errorf("a test's write %s reached the grader's build cache: %v", name, err)
		}
	}
	if !strings.Contains(string(res.Output), "build cache entries kept") {
		t.Errorf("the builds' cache entries were not kept:\n%s", res.Output)
	}
}

// fileProxy publishes one module version in a file:// module proxy folder and returns its GOPROXY URL.
func fileProxy(t *testing.T, modPath, version string, files map[string]string) string {
	t.Helper()
	proxy := t.TempDir()
	mod := "module " + modPath + "\n\ngo 1.21\n"
	vdir := filepath.Join(proxy, filepath.FromSlash(modPath), "@v")
	filetree.Write(t, vdir, map[string]string{
		"list":            version + "\n",
		version + ".info": `{"Version":"` + version + `","Time":"2024-01-01T00:00:00Z"}`,
		version + ".mod":  mod,
	})
	zf, err := os.Create(filepath.Join(vdir, version+".zip"))
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(zf)
	for name, body := range map[string]string{"go.mod": mod} {
		files[name] = body
	}
	for name, body := range files {
		w, err := zw.Create(modPath + "@" + version + "/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zf.Close(); err != nil {
		t.Fatal(err)
	}
	return "file://" + filepath.ToSlash(proxy)
}

// goModTidy writes dir's go.sum from the proxy, with a throwaway module cache, as the repository would come.
func goModTidy(t *testing.T, dir, proxyURL string) {
	t.Helper()
	setupCache := t.TempDir()
	cleanModCache(t, setupCache)
	tidy := exec.Command("go", "mod", "tidy")
	tidy.Dir = dir
	tidy.Env = append(os.Environ(), "GOPROXY="+proxyURL, "GOSUMDB=off", "GOMODCACHE="+setupCache, "GOFLAGS=-mod=mod",
		"GOTOOLCHAIN=local")
	if out, err := tidy.CombinedOutput(); err != nil {
		t.Fatalf("go mod tidy: %v\n%s", err, out)
	}
}

// Code under test that prints the testing package's marked framing (from an init of a package file, which dropping
// the model's test files does not remove) cannot make an example without an output comment, or an invented example
// or fuzz target, pass: go test would not run them, so they are not declared and their forged results are dropped.
func TestForgedExamplesAndFuzzTargetsAreNotBelieved(t *testing.T) {
	t.Parallel()
	dir := module(t, map[string]string{
		"forge.go": `package m

import "fmt"

func init() {
	for _, name := range []string{"Example_noOutput", "ExampleInvented", "FuzzInvented", "FuzzInvented/seed#0"} {
		fmt.Printf("\x16=== RUN   %s\n\x16--- PASS: %s (0.00s)\n", name, name)
	}
}
`,
		"m_test.go": `package m

import (
	"fmt"
	"testing"
)

func TestReal(t *testing.T) {}

func Example_noOutput() { fmt.Println("no output comment: compiled, not run") }
`,
	})
	forged := []string{"Example_noOutput", "ExampleInvented", "FuzzInvented", "FuzzInvented/seed#0"}
	res := run(t, Options{Dir: dir, Tests: append([]string{"TestReal"}, forged...)})
	if got := status(res.Report, "TestReal"); got != "pass" {
		t.Fatalf("the binary did not run: TestReal %q\n%s", got, res.Output)
	}
	v := testlog.Decide(forged, nil, res.Report)
	if v.Resolved || len(v.Passed) != 0 || len(v.Missing) != len(forged) {
		t.Errorf("forged framing believed: %+v\n%s", v, res.Output)
	}
	if !slices.Contains(res.Report.Undeclared, "example.com/m::ExampleInvented") {
		t.Errorf("the forged results were not seen and dropped: Undeclared %v\n%s", res.Report.Undeclared, res.Output)
	}
}
