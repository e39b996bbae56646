package testrun

import (
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"ctxlab/grading/testlog"
	"ctxlab/testkit/filetree"
)

// nestedRepo is a repository whose tests live in a module of a subfolder that replaces its parent with ../, as
// upstream repositories test it with `cd sub && go test ./...`. TestShared is declared by both modules: the root's
// fails, the nested module's passes.
var nestedRepo = map[string]string{
	"go.mod":       "module example.com/root\n\ngo 1.21\n",
	"root.go":      "package root\n\nfunc Answer() int { return 42 }\n",
	"root_test.go": "package root\n\nimport \"testing\"\n\nfunc TestShared(t *testing.T) { t.Fatal(\"the root module's TestShared\") }\n",
	"sub/go.mod": "module example.com/root/sub\n\ngo 1.21\n\nrequire example.com/root v0.0.0\n\n" +
		"replace example.com/root => ../\n",
	"sub/pkg/pkg.go": "package pkg\n\nimport \"example.com/root\"\n\nfunc Twice() int { return 2 * root.Answer() }\n",
	"sub/pkg/pkg_test.go": `package pkg

import "testing"

func TestNested(t *testing.T) {
	if Twice() != 84 {
		t.Fatal("wrong")
	}
}

func TestShared(t *testing.T) {}
`,
}

// Tests of a nested module (its own go.mod, a replace of its parent) are found, built and run in their module, as
// `cd sub && go test ./...` runs them, under a bare name, their import path or their folder; a bare name that both
// modules declare runs in the module the test patch touched.
func TestNestedModuleTests(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	filetree.Write(t, dir, nestedRepo)
	ref := goTestJSON(t, filepath.Join(dir, "sub"), "./...")
	if ref["TestNested"] != "pass" || ref["TestShared"] != "pass" {
		t.Fatalf("go test in the nested module: %v", ref)
	}
	names := []string{"TestNested", "example.com/root/sub/pkg::TestNested", "./sub/pkg::TestNested", "TestShared"}
	res := run(t, Options{Dir: dir, Tests: names, TestPatchFiles: []string{"sub/pkg/pkg_test.go"}})
	if v := testlog.Decide(names, nil, res.Report); !v.Resolved {
		t.Fatalf("the nested module's tests: %+v (not declared %v)\n%s", v, res.Report.NotDeclared, res.Output)
	}
	for _, r := range res.Report.Tests["TestShared"] {
		if r.Package != "example.com/root/sub/pkg" || r.Dir != "sub/pkg" {
			t.Errorf("TestShared ran in %s (%s), not only in the module the test patch touched", r.Package, r.Dir)
		}
	}
	// Without a test patch in either module, a bare name runs wherever it is declared, and must pass in each.
	res = run(t, Options{Dir: dir, Tests: []string{"TestShared"}})
	if got := status(res.Report, "TestShared"); !slices.Contains([]string{"fail,pass", "pass,fail"}, got) {
		t.Errorf("TestShared in both modules: %q\n%s", got, res.Output)
	}
}

// A repository whose go.work at the root joins its modules builds them in workspace mode, as go test does there
// (which refuses -mod=mod): the nested module finds its parent through the workspace, with no replace.
func TestWorkspaceModules(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := maps.Clone(nestedRepo)
	files["sub/go.mod"] = "module example.com/root/sub\n\ngo 1.21\n\nrequire example.com/root v0.0.0\n"
	files["go.work"] = "go 1.21\n\nuse (\n\t.\n\t./sub\n)\n"
	filetree.Write(t, dir, files)
	ref := exec.Command("go", "test", "-count=1", "-run", "^TestNested$", "./...")
	ref.Dir, ref.Env = filepath.Join(dir, "sub"), append(os.Environ(), "GOFLAGS=", "GOPROXY=off", "GOTOOLCHAIN=local")
	if out, err := ref.CombinedOutput(); err != nil {
		t.Fatalf("go test in the workspace: %v\n%s", err, out)
	}
	res := run(t, Options{Dir: dir, Tests: []string{"TestNested"}})
	if got := status(res.Report, "TestNested"); got != "pass" {
		t.Fatalf("TestNested in a workspace: %q\n%s", got, res.Output)
	}
}
