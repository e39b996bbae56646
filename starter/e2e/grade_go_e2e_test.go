package e2e

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"ctxlab/dataset/swebench"
	"ctxlab/patch/diff"
	"ctxlab/results"
	"ctxlab/specs"
	"ctxlab/starter/cli"
	"ctxlab/testkit/filetree"
)

// greetBase is a repository whose command line is read the way cobra reads it: from os.Args[1:], unless the binary
// is the package's own test binary, as go test names it. Greeting forgets its "!".
var greetBase = map[string]string{
	"go.mod":   "module example.com/greet\n\ngo 1.21\n",
	"greet.go": "package greet\n\n// Greeting greets name.\nfunc Greeting(name string) string { return \"Hello, \" + name }\n",
	"cli.go": `package greet

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Execute greets the names on the command line (os.Args[1:], except under the package's own tests), or the world.
func Execute(w io.Writer) error {
	args := []string{}
	if filepath.Base(os.Args[0]) != "greet.test" {
		args = os.Args[1:]
	}
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			return fmt.Errorf("unknown flag %s", a)
		}
	}
	if len(args) == 0 {
		args = []string{"world"}
	}
	for _, a := range args {
		fmt.Fprintln(w, Greeting(a))
	}
	return nil
}
`,
	"cli_test.go": `package greet

import (
	"strings"
	"testing"
)

func TestExecuteDefault(t *testing.T) {
	var b strings.Builder
	if err := Execute(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), "Hello, world") {
		t.Fatalf("got %q", b.String())
	}
}
`,
}

// greetTests is the test patch: an example with an output comment and a fuzz target with a seed and a corpus file.
var greetTests = map[string]string{
	"example_test.go": `package greet_test

import (
	"fmt"

	"example.com/greet"
)

func ExampleGreeting() {
	fmt.Println(greet.Greeting("Gopher"))
	// Output: Hello, Gopher!
}
`,
	"fuzz_test.go": `package greet

import (
	"strings"
	"testing"
)

func FuzzGreeting(f *testing.F) {
	f.Add("Gopher")
	f.Fuzz(func(t *testing.T, name string) {
		if !strings.HasSuffix(Greeting(name), "!") {
			t.Fatalf("%q is not exclaimed", Greeting(name))
		}
	})
}
`,
	"testdata/fuzz/FuzzGreeting/empty-name": "go test fuzz v1\nstring(\"\")\n",
}

// helloBase is a command built on cobra (the real module, from the module cache) whose test builds the program with
// the go command and runs it: the modules the grade downloaded and a writable build cache must be visible to it.
func helloBase(cobraVersion, pflagVersion string) map[string]string {
	return map[string]string{
		"go.mod": "module example.com/hello\n\ngo 1.21\n\nrequire (\n\tgithub.com/spf13/cobra " + cobraVersion +
			"\n\tgithub.com/spf13/pflag " + pflagVersion + "\n)\n",
		"hello.go": `package hello

import (
	"fmt"

	"github.com/spf13/cobra"
)

// Command says hello to its argument.
func Command() *cobra.Command {
	return &cobra.Command{Use: "hello NAME", Args: cobra.ExactArgs(1), RunE: func(cmd *cobra.Command, args []string) error {
		fmt.Fprintf(cmd.OutOrStdout(), "hello %s\n", args[0])
		return nil
	}}
}
`,
		"cmd/hello/main.go": `package main

import (
	"os"

	"example.com/hello"
)

func main() {
	if err := hello.Command().Execute(); err != nil {
		os.Exit(1)
	}
}
`,
	}
}

const helloTest = `package hello

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestBuiltProgram(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "hello")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/hello").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "Gopher").Output()
	if err != nil || strings.TrimSpace(string(out)) != "Hello, Gopher!" {
		t.Fatalf("hello Gopher: %v %q", err, out)
	}
}
`

// SWE-bench-style Go rows whose FAIL_TO_PASS names an example and a fuzz target (and one of its seeds), with a
// PASS_TO_PASS test that reads os.Args as cobra does, and a row whose test builds a cobra program with the go
// command: `starter grade --predictions gold` resolves both, `--predictions empty` neither.
func TestGradeGoRowsWithExamplesFuzzAndCommandLines(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	modCache := goEnvValue(t, "GOMODCACHE")
	proxy := "file://" + filepath.ToSlash(filepath.Join(modCache, "cache", "download"))
	// ctxlab's build leaves only the go.mod of a module it never compiles here (cobra's mousetrap is Windows-only),
	// while go mod tidy reads every module's source: the rest comes from the machine's own proxy.
	if p := goEnvValue(t, "GOPROXY"); p != "" && p != "off" {
		proxy += "," + p
	}
	cobraVersion, pflagVersion := moduleVersion(t, "github.com/spf13/cobra"), moduleVersion(t, "github.com/spf13/pflag")

	greetFix := strings.Replace(greetBase["greet.go"], `"Hello, " + name`, `"Hello, " + name + "!"`, 1)
	greet := swebench.Instance{InstanceID: "acme__greet-1", Repo: "acme/greet", ProblemStatement: "no !",
		Patch:      diff.Unified("greet.go", []byte(greetBase["greet.go"]), []byte(greetFix)),
		TestPatch:  newFilesPatch(greetTests),
		FailToPass: []string{"ExampleGreeting", "FuzzGreeting", "FuzzGreeting/seed#0", "FuzzGreeting/empty-name"},
		PassToPass: []string{"TestExecuteDefault"}}
	greet.BaseCommit = commitRepo(t, filepath.Join(root, "repos", "acme", "greet"), greetBase, "")

	hello := helloBase(cobraVersion, pflagVersion)
	helloDir := filepath.Join(root, "repos", "acme", "hello")
	helloFix := strings.Replace(hello["hello.go"], `"hello %s\n"`, `"Hello, %s!\n"`, 1)
	in := swebench.Instance{InstanceID: "acme__hello-1", Repo: "acme/hello", ProblemStatement: "greet politely",
		Patch:      diff.Unified("hello.go", []byte(hello["hello.go"]), []byte(helloFix)),
		TestPatch:  newFilesPatch(map[string]string{"hello_test.go": helloTest}),
		FailToPass: []string{"TestBuiltProgram"}}
	in.BaseCommit = commitRepo(t, helloDir, hello, proxy)

	dataset := filepath.Join(root, "go-rows.jsonl")
	var rows bytes.Buffer
	for _, r := range []swebench.Instance{greet, in} {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		rows.Write(append(b, '\n'))
	}
	if err := os.WriteFile(dataset, rows.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for mode, want := range map[string]int{"gold": 2, "empty": 0} {
		runs := filepath.Join(root, "runs")
		var out, errb bytes.Buffer
		code := cli.Main([]string{"grade", "--dataset", dataset, "--predictions", mode, "--name", "go-" + mode, "--runs", runs,
			"--quiet", "--repos", filepath.Join(root, "repos", "{repo}"), "--goproxy", proxy}, &out, &errb)
		got, bad, err := results.ReadFile(filepath.Join(runs, "go-"+mode, "results.jsonl"))
		if err != nil || len(bad) > 0 || len(got) != 2 {
			t.Fatalf("%s: %d rows, %v %v\n%s", mode, len(got), bad, err, errb.String())
		}
		resolved := 0
		for _, r := range got {
			if v, _ := r.Bool(specs.Resolved.Name); v {
				resolved++
			} else if mode == "gold" {
				t.Errorf("gold %s: %s, failed %v, missing %v, build %q", r.String(results.FieldInstance),
					r.String("grade_status"), r["tests_failed"], r["tests_missing"], r.String("grade_build_error"))
			}
			if mode == "empty" && r.String("grade_status") != "unresolved" {
				t.Errorf("empty %s: %s, want the tests run and failing (tests_missing %v)", r.String(results.FieldInstance),
					r.String("grade_status"), r["tests_missing"])
			}
		}
		// Both validate the dataset: every gold patch resolves, no run without a fix does.
		if resolved != want || code != 0 {
			t.Errorf("%s: %d of 2 resolved, exit %d; want %d\n%s%s", mode, resolved, code, want, out.String(), errb.String())
		}
	}
}

// newFilesPatch is a git diff creating files.
func newFilesPatch(files map[string]string) string {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(files)) {
		b.WriteString(diff.Unified(name, nil, []byte(files[name])))
	}
	return b.String()
}

// commitRepo writes files into a new git repository at dir (its go.sum first made from proxy when set) and returns
// the commit.
func commitRepo(t *testing.T, dir string, files map[string]string, proxy string) string {
	t.Helper()
	filetree.Write(t, dir, files)
	run := func(env []string, name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		cmd.Env = append(append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GOTOOLCHAIN=local"), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if proxy != "" {
		run([]string{"GOPROXY=" + proxy, "GOSUMDB=off", "GOFLAGS=-mod=mod"}, "go", "mod", "tidy")
	}
	run(nil, "git", "init", "-q")
	run(nil, "git", "add", "-A")
	run(nil, "git", "commit", "-qm", "base")
	return run(nil, "git", "rev-parse", "HEAD")
}

// moduleVersion is the version of a module ctxlab's own build selects (so the module cache has it).
func moduleVersion(t *testing.T, mod string) string {
	t.Helper()
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Version}}", mod)
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOTOOLCHAIN=local")
	out, err := cmd.Output()
	if err != nil || len(bytes.TrimSpace(out)) == 0 {
		t.Fatalf("go list -m %s: %v %s", mod, err, out)
	}
	return strings.TrimSpace(string(out))
}

func goEnvValue(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		t.Fatalf("go env %s: %v", name, err)
	}
	return strings.TrimSpace(string(out))
}
