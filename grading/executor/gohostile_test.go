package executor

import (
	"archive/zip"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"ctxlab/dataset/swebench"
	"ctxlab/patch/diff"
	"ctxlab/testkit/filetree"
)

// hostileGoInstance is a Go instance whose test asserts through a library of the module proxy (as tests assert
// through testify): base_commit has the bug (Answer is 41), the test patch adds TestAnswer, the gold patch fixes
// it. The library's module path is new for each call, so that no module cache holds another copy of it.
func hostileGoInstance(t *testing.T) (in swebench.Instance, files map[string]string, cfg Config, check string) {
	t.Helper()
	check = fmt.Sprintf("example.com/check%x", time.Now().UnixNano())
	checkSrc := "package check\n\nimport \"testing\"\n\nfunc Equal(t *testing.T, got, want int) {\n\tt.Helper()\n" +
		"\tif got != want {\n\t\tt.Fatalf(\"got %d, want %d\", got, want)\n\t}\n}\n"
	proxy := goFileProxy(t, check, "v1.0.0", map[string]string{"check.go": checkSrc})
	files = map[string]string{
		"go.mod": "module example.com/m\n\ngo 1.21\n\nrequire " + check + " v1.0.0\n",
		"m.go":   "package m\n\nfunc Answer() int { return 41 }\n",
	}
	dir := t.TempDir()
	filetree.Write(t, dir, files)
	tidy := exec.Command("go", "mod", "download", check)
	tidy.Dir = dir
	tidy.Env = append(os.Environ(), "GOPROXY="+proxy, "GOSUMDB=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local",
		"GOMODCACHE="+t.TempDir())
	if out, err := tidy.CombinedOutput(); err != nil {
		t.Fatalf("go mod download: %v\n%s", err, out)
	}
	sum, err := os.ReadFile(filepath.Join(dir, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	files["go.sum"] = string(sum)
	test := "package m\n\nimport (\n\t\"testing\"\n\n\t\"" + check + "\"\n)\n\n" +
		"func TestAnswer(t *testing.T) { check.Equal(t, Answer(), 42) }\n"
	in = swebench.Instance{InstanceID: "acme__answer-1", Repo: "acme/answer", BaseCommit: "HEAD",
		Patch:      diff.Unified("m.go", []byte(files["m.go"]), []byte(strings.Replace(files["m.go"], "41", "42", 1))),
		TestPatch:  diff.Unified("m_test.go", nil, []byte(test)),
		FailToPass: []string{"TestAnswer"}}
	return in, files, Config{GoProxy: proxy}, check
}

// goFileProxy publishes one module version in a file:// module proxy folder and returns its GOPROXY URL.
func goFileProxy(t *testing.T, modPath, version string, files map[string]string) string {
	t.Helper()
	proxy := t.TempDir()
	mod := "module " + modPath + "\n\ngo 1.21\n"
	vdir := filepath.Join(proxy, filepath.FromSlash(modPath), "@v")
	filetree.Write(t, vdir, map[string]string{"list": version + "\n", version + ".mod": mod,
		version + ".info": `{"Version":"` + version + `","Time":"2024-01-01T00:00:00Z"}`})
	zf, err := os.Create(filepath.Join(vdir, version+".zip"))
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(zf)
	files["go.mod"] = mod
	for name, body := range files {
		w, err := zw.Create(modPath + "@" + version + "/" + name)
		if err == nil {
			_, err = w.Write([]byte(body))
		}
		if err != nil {
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

// gradeGo grades patch on the instance with the local executor and returns the result and verdict's resolution.
func gradeGo(t *testing.T, in swebench.Instance, files map[string]string, cfg Config, patch string) (Result, bool) {
	t.Helper()
	res, err := Local{}.Run(context.Background(), Request{Instance: in, Patch: patch, Timeout: 5 * time.Minute,
		Config: cfg, Materialize: materializer(files)})
	if err != nil {
		t.Fatalf("grading: %v\n%s", err, res.Output)
	}
	if !res.Ran {
		t.Fatalf("the patch did not apply: %s", res.ApplyErr)
	}
	return res, decide(in, res).Resolved
}

// Issue 39: a model patch that adds vendor/ or a go.work changes what the tests are built from: a vendored copy of
// the assertion library, or a workspace module standing in for it, that never fails. The build mode is the
// repository's at base_commit (no vendor/, no go.work there), so neither is read: the real library fails the
// unfixed test. A go.work the gold patch comes with is ignored too, and the fix still resolves.
func TestLocalGoVendorAndGoWorkOfThePatchAreNotRead(t *testing.T) {
	t.Parallel()
	in, files, cfg, check := hostileGoInstance(t)
	fake := "package check\n\nimport \"testing\"\n\nfunc Equal(t *testing.T, got, want int) {}\n"
	vendor := diff.Unified("vendor/modules.txt", nil, []byte("# "+check+" v1.0.0\n## explicit\n"+check+"\n")) +
		diff.Unified("vendor/"+check+"/check.go", nil, []byte(fake))
	work := diff.Unified("go.work", nil, []byte("go 1.21\n\nuse (\n\t.\n\t./fake\n)\n")) +
		diff.Unified("fake/go.mod", nil, []byte("module "+check+"\n\ngo 1.21\n")) +
		diff.Unified("fake/check.go", nil, []byte(fake))
	for _, c := range []struct {
		name, patch string
		resolved    bool
	}{
		{"vendored fake library", vendor, false},
		{"workspace module standing in for the library", work, false},
		{"the fix with a go.work", in.Patch + work, true},
	} {
		res, resolved := gradeGo(t, in, files, cfg, c.patch)
		if resolved != c.resolved {
			t.Errorf("%s: resolved %v, want %v\n%s", c.name, resolved, c.resolved, res.Output)
		}
	}
	if res, resolved := gradeGo(t, in, files, cfg, in.Patch); !resolved {
		t.Errorf("the fix alone does not resolve:\n%s", res.Output)
	}
}

// Issue 39: a model's code that reaches into the testing package's internals with //go:linkname (the failure
// counter, the test runner), from Go or from assembly, to forge results: the linker refuses the reference (Go 1.23
// and later allow a linkname only to a symbol its package marks), so the tests do not build and the row is the
// patch's build failure.
func TestLocalGoLinknameIntoTestingDoesNotBuild(t *testing.T) {
	t.Parallel()
	in, files, cfg, _ := hostileGoInstance(t)
	goForge := "package m\n\nimport (\n\t\"testing\"\n\t_ \"unsafe\"\n)\n\n//go:linkname numFailed testing.numFailed\n" +
		"var numFailed uint32\n\n//go:linkname tRunner testing.tRunner\nfunc tRunner(t *testing.T, fn func(t *testing.T))\n\n" +
		"func init() { numFailed = 0; _ = tRunner }\n"
	asmForge := "#include \"textflag.h\"\n\nTEXT ·zeroFailed(SB), NOSPLIT, $0-0\n\tMOVL $0, testing·numFailed(SB)\n\tRET\n"
	patches := map[string]string{"go": diff.Unified("forge.go", nil, []byte(goForge))}
	if runtime.GOARCH == "amd64" {
		patches["assembly"] = diff.Unified("forge_amd64.s", nil, []byte(asmForge)) +
			diff.Unified("forge.go", nil, []byte("package m\n\nfunc zeroFailed()\n\nfunc init() { zeroFailed() }\n"))
	}
	for name, patch := range patches {
		res, resolved := gradeGo(t, in, files, cfg, patch)
		if resolved || len(res.Report.BuildFailed) == 0 || !strings.Contains(res.Report.BuildOutput, "invalid reference to testing.") {
			t.Errorf("%s: resolved %v, build failed %v, want the linker's refusal:\n%s", name, resolved,
				res.Report.BuildFailed, res.Report.BuildOutput)
		}
	}
}
