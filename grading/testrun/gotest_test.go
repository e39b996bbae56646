package testrun

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"ctxlab/grading/testlog"
	"ctxlab/testkit/filetree"
)

func run(t *testing.T, o Options) Result {
	t.Helper()
	if o.Timeout == 0 {
		o.Timeout = 3 * time.Minute
	}
	res, err := Go(context.Background(), o)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, res.Output)
	}
	return res
}

// A model test file whose TestMain prints go test's framing for every listed test and exits 0 without running
// anything must not make those tests pass, and a name no kept test file declares must stay missing.
func TestForgedFramingIsNotBelieved(t *testing.T) {
	t.Parallel()
	const real = "package m\n\nimport \"testing\"\n\nfunc TestReal(t *testing.T) { t.Fatal(\"not fixed\") }\n"
	plain := module(t, map[string]string{
		"m_test.go": real,
		"zz_model_test.go": `package m

import (
	"fmt"
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	for _, name := range []string{"TestReal", "TestInvented"} {
		fmt.Printf("=== RUN   %s\n--- PASS: %s (0.00s)\n", name, name)
	}
	fmt.Println("PASS")
	os.Exit(0)
}
`,
	})
	res := run(t, Options{Dir: plain, Tests: []string{"TestReal", "TestInvented"}, ExcludeTestFiles: []string{"zz_model_test.go"}})
	if v := testlog.Decide([]string{"TestReal", "TestInvented"}, nil, res.Report); v.Resolved || len(v.Passed) != 0 {
		t.Errorf("plain forged framing believed: %+v\n%s", v, res.Output)
	}

	// With the framing marker the forger can fake a declared test (documented), but not invent one.
	marked := module(t, map[string]string{
		"m_test.go": real,
		"zz_model_test.go": `package m

import (
	"fmt"
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	fmt.Print("\x16=== RUN   TestInvented\n\x16--- PASS: TestInvented (0.00s)\n\x16PASS\n")
	os.Exit(0)
}

func TestModelOwn(t *testing.T) {}
`,
	})
	res = run(t, Options{Dir: marked, Tests: []string{"TestReal", "TestInvented", "TestModelOwn"},
		ExcludeTestFiles: []string{"zz_model_test.go"}})
	v := testlog.Decide([]string{"TestInvented", "TestModelOwn"}, nil, res.Report)
	if v.Resolved || !slices.Equal(v.Missing, []string{"TestInvented", "TestModelOwn"}) {
		t.Errorf("invented names not missing: %+v\n%s", v, res.Output)
	}
	if !slices.Contains(res.Report.Undeclared, "example.com/m::TestInvented") {
		t.Errorf("Undeclared = %v, want the invented test", res.Report.Undeclared)
	}
	if !slices.Contains(res.Report.NotDeclared, "TestModelOwn") {
		t.Errorf("NotDeclared = %v, want the excluded file's test", res.Report.NotDeclared)
	}
}

// The same test name in two packages: a qualified name is run and graded in its package only; a bare name must pass
// in every package that declares it.
func TestQualifiedNames(t *testing.T) {
	t.Parallel()
	dir := module(t, map[string]string{
		"m_test.go": `package m

import "testing"

func TestSame(t *testing.T)     {}
func TestRootOnly(t *testing.T) {}
`,
		"sub/sub_test.go": `package sub

import "testing"

func TestSame(t *testing.T)     { t.Fatal("sub differs") }
func TestRootOnly(t *testing.T) { t.Fatal("must not run: only the root's was listed") }
func TestTable(t *testing.T) {
	t.Run("inner case", func(t *testing.T) {})
	t.Run("other", func(t *testing.T) { t.Fatal("other") })
}
`,
	})
	listed := []string{"example.com/m::TestSame", "./sub::TestSame", "example.com/m::TestRootOnly", "sub::TestTable/inner case"}
	res := run(t, Options{Dir: dir, Tests: listed})
	if rs := res.Report.Tests["TestRootOnly"]; len(rs) != 1 || rs[0].Package != "example.com/m" {
		t.Errorf("TestRootOnly ran as %+v; want only in the root package\n%s", rs, res.Output)
	}
	for _, c := range []struct {
		name string
		want string // passed, failed, missing
	}{
		{"example.com/m::TestSame", "passed"}, {".::TestSame", "passed"}, {"./::TestSame", "passed"},
		{"./sub::TestSame", "failed"}, {"sub::TestSame", "failed"}, {"example.com/m/sub::TestSame", "failed"},
		{"TestSame", "failed"}, {"sub::TestTable/inner case", "passed"}, {"TestTable/inner_case", "passed"},
		{"other::TestSame", "missing"}, {"example.com/m::TestTable/inner case", "missing"},
	} {
		v := testlog.Decide([]string{c.name}, nil, res.Report)
		got := map[bool]string{true: "passed"}[len(v.Passed) == 1]
		if len(v.Failed) == 1 {
			got = "failed"
		} else if len(v.Missing) == 1 {
			got = "missing"
		}
		if got != c.want {
			t.Errorf("%s: %s (%+v), want %s", c.name, got, v, c.want)
		}
	}
}

// A package that does not compile is reported as a build failure with the compiler's text; other packages still run.
func TestBuildFailureReported(t *testing.T) {
	t.Parallel()
	dir := module(t, map[string]string{
		"m_test.go":       "package m\n\nimport \"testing\"\n\nfunc TestGood(t *testing.T) {}\n",
		"sub/sub.go":      "package sub\n\nfunc F() int { return undefinedThing }\n",
		"sub/sub_test.go": "package sub\n\nimport \"testing\"\n\nfunc TestSub(t *testing.T) { F() }\n",
	})
	res := run(t, Options{Dir: dir, Tests: []string{"TestGood", "./sub::TestSub"}})
	if !slices.Equal(res.Report.BuildFailed, []string{"example.com/m/sub"}) || !strings.Contains(res.Report.BuildOutput, "undefinedThing") {
		t.Errorf("BuildFailed %v, BuildOutput %q", res.Report.BuildFailed, res.Report.BuildOutput)
	}
	if v := testlog.Decide([]string{"TestGood"}, []string{"./sub::TestSub"}, res.Report); !slices.Equal(v.Passed, []string{"TestGood"}) ||
		!slices.Equal(v.Missing, []string{"./sub::TestSub"}) {
		t.Errorf("verdict %+v", v)
	}
}

// cleanModCache removes a module cache the go command made read-only.
func cleanModCache(t *testing.T, cache string) {
	t.Cleanup(func() {
		cmd := exec.Command("go", "clean", "-modcache")
		cmd.Env = append(os.Environ(), "GOMODCACHE="+cache, "GOFLAGS=")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Logf("cleaning %s: %v\n%s", cache, err, out)
		}
	})
}

// A module with a third-party requirement grades on a machine whose module cache is empty: its requirements are
// downloaded from the configured GOPROXY (a file:// folder here) once per go.sum, then the build is offline.
func TestModuleRequirementsDownloaded(t *testing.T) {
	t.Parallel()
	proxyURL := fileProxy(t, "example.com/dep", "v1.0.0", map[string]string{
		"dep.go": "package dep\n\nfunc Answer() int { return 42 }\n",
	})
	proxy := strings.TrimPrefix(proxyURL, "file://")
	dir := t.TempDir()
	filetree.Write(t, dir, map[string]string{
		"go.mod":    "module example.com/m\n\ngo 1.21\n\nrequire example.com/dep v1.0.0\n",
		"m_test.go": "package m\n\nimport (\n\t\"testing\"\n\n\t\"example.com/dep\"\n)\n\nfunc TestUsesDep(t *testing.T) {\n\tif dep.Answer() != 42 {\n\t\tt.Fatal(\"wrong\")\n\t}\n}\n",
	})
	// The repository comes with its go.sum.
	goModTidy(t, dir, proxyURL)

	cache := t.TempDir()
	cleanModCache(t, cache)
	o := Options{Dir: dir, Tests: []string{"TestUsesDep"}, GoProxy: proxyURL, ExtraEnv: []string{"GOMODCACHE=" + cache}}
	res := run(t, o)
	if v := testlog.Decide([]string{"TestUsesDep"}, nil, res.Report); !v.Resolved {
		t.Fatalf("not resolved with an empty module cache: %+v\n%s", v, res.Output)
	}
	// Downloaded once: without the proxy the second run still builds, from the cache.
	if err := os.RemoveAll(proxy); err != nil {
		t.Fatal(err)
	}
	res = run(t, o)
	if v := testlog.Decide([]string{"TestUsesDep"}, nil, res.Report); !v.Resolved {
		t.Fatalf("second run: %+v\n%s", v, res.Output)
	}
	if !strings.Contains(string(res.Output), "already downloaded") {
		t.Errorf("second run downloaded again:\n%s", res.Output)
	}
}

// A module that comes without go.sum (an older module: a go.mod with requirements, as gopkg.in ones come) builds as
// go test with a proxy builds it: its requirements are downloaded before the offline build, once per content of the
// module files, and a second grade of the same repository builds from the module cache alone (with the go.sum lines
// the download got from the checksum database, which the offline build cannot ask).
func TestModuleWithoutGoSum(t *testing.T) {
	// The worker's own GOSUMDB reaches only the download (the test proxy's module is in no checksum database).
	t.Setenv("GOSUMDB", "off")
	proxyURL := fileProxy(t, "example.com/dep", "v1.0.0", map[string]string{
		"dep.go": "package dep\n\nfunc Answer() int { return 42 }\n",
	})
	files := map[string]string{
		"go.mod":    "module example.com/m\n\ngo 1.21\n\nrequire example.com/dep v1.0.0\n",
		"m_test.go": "package m\n\nimport (\n\t\"testing\"\n\n\t\"example.com/dep\"\n)\n\nfunc TestUsesDep(t *testing.T) {\n\tif dep.Answer() != 42 {\n\t\tt.Fatal(\"wrong\")\n\t}\n}\n",
	}
	cache := t.TempDir()
	cleanModCache(t, cache)
	for i, want := range []string{"module requirements downloaded", "already downloaded"} {
		dir := t.TempDir()
		filetree.Write(t, dir, files)
		res := run(t, Options{Dir: dir, Tests: []string{"TestUsesDep"}, GoProxy: proxyURL,
			ExtraEnv: []string{"GOMODCACHE=" + cache}})
		if v := testlog.Decide([]string{"TestUsesDep"}, nil, res.Report); !v.Resolved {
			t.Fatalf("grade %d: not resolved without go.sum: %+v\n%s", i+1, v, res.Output)
		}
		if !strings.Contains(string(res.Output), want) {
			t.Errorf("grade %d: the log does not say %q:\n%s", i+1, want, res.Output)
		}
	}
}
