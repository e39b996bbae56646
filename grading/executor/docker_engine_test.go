package executor

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"ctxlab/dataset/swebench"
	"ctxlab/grading/testlog"
	"ctxlab/internal/images"
	"ctxlab/patch/diff"
	"ctxlab/testkit/dockertest"
	"ctxlab/testkit/filetree"
)

// These tests grade in a real Docker engine (testkit/dockertest: skipped by plain go test when none answers,
// failed under scripts/test). Their instance images are built here, from ctxlab's debootstrap base images.

// engineNamespace holds this test process's instance images: the pid keeps two concurrent runs of these tests
// (two checkouts, or CI beside a developer) from building, grading and removing each other's images.
var engineNamespace = fmt.Sprintf("ctxlabtest%d", os.Getpid())

// The test patch of the Python instance adds, beside the failing test, two tests that hold only in a contained
// run: the container has no network interface but loopback, and none of the grader's variables.
const graderSecretEnv = "CTXLAB_GRADER_SECRET_FOR_TEST"

// The grader's secret is in the whole test process's environment (TestDockerEngine runs in parallel with the
// package's other slow tests, so that building its images overlaps their work, and t.Setenv cannot be used there):
// every grade of the package runs with it, and none of their runs may see it.
func init() {
	if err := os.Setenv(graderSecretEnv, "sk-should-never-reach-the-container"); err != nil {
		panic(err)
	}
}

// enginePythonTests is the test file the Python instance's test patch writes.
const enginePythonTests = "import os\n\nfrom calc.ops import add, mul\n\n\ndef test_mul_zero():\n    assert mul(0, 3) == 0\n\n\n" +
	"def test_add():\n    assert add(2, 3) == 5\n\n\n" +
	"def test_no_network():\n    assert sorted(os.listdir('/sys/class/net')) == ['lo']\n\n\n" +
	"def test_no_grader_variables():\n    assert '" + graderSecretEnv + "' not in os.environ\n"

func enginePythonInstance() swebench.Instance {
	in := calcInstance()
	in.InstanceID = "acme__calc-engine-1"
	in.TestPatch = diff.Unified("tests/test_calc.py", []byte(calcBase["tests/test_calc.py"]), []byte(enginePythonTests))
	in.PassToPass = []string{"tests/test_calc.py::test_mul_zero", "tests/test_calc.py::test_no_network",
		"tests/test_calc.py::test_no_grader_variables"}
	return in
}

// A small Go module with a bug in Reverse and a test patch that tests it.
var strsBase = map[string]string{
	"go.mod":               "module example.com/strs\n\ngo 1.21\n",
	"strs/strs.go":         "package strs\n\nimport \"strings\"\n\nfunc Upper(s string) string { return strings.ToUpper(s) }\n\nfunc Reverse(s string) string { return s }\n",
	"strs/strs_test.go":    "package strs\n\nimport \"testing\"\n\nfunc TestUpper(t *testing.T) {\n\tif Upper(\"a\") != \"A\" {\n\t\tt.Fatal(Upper(\"a\"))\n\t}\n}\n",
	"README.md":            "strs\n",
	"strs/doc_internal.go": "// Package strs transforms strings.\npackage strs\n",
}

func engineGoInstance() swebench.Instance {
	fixed := strings.Replace(strsBase["strs/strs.go"], "func Reverse(s string) string { return s }",
		"func Reverse(s string) string {\n\tr := []rune(s)\n\tfor i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {\n\t\tr[i], r[j] = r[j], r[i]\n\t}\n\treturn string(r)\n}", 1)
	tp := diff.Unified("strs/strs_test.go", []byte(strsBase["strs/strs_test.go"]),
		[]byte(strsBase["strs/strs_test.go"]+"\nfunc TestReverse(t *testing.T) {\n\tif got := Reverse(\"abc\"); got != \"cba\" {\n\t\tt.Fatal(got)\n\t}\n}\n"))
	return swebench.Instance{
		InstanceID: "acme__strs-engine-1", Repo: "acme/strs", ProblemStatement: "Reverse does nothing",
		Patch:     diff.Unified("strs/strs.go", []byte(strsBase["strs/strs.go"]), []byte(fixed)),
		TestPatch: tp, FailToPass: []string{"TestReverse"}, PassToPass: []string{"TestUpper"},
	}
}

// gitRepo commits files into a fresh repository and returns its folder and commit.
func gitRepo(t *testing.T, files map[string]string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	filetree.Write(t, dir, files)
	git := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t",
			"GIT_COMMITTER_EMAIL=t@example.com", "GIT_AUTHOR_DATE=2024-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2024-01-01T00:00:00Z")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	git("add", "-A")
	git("commit", "-qm", "base")
	return dir, git("rev-parse", "HEAD")
}

// instanceImage builds the image of an instance (its repository at base_commit in /testbed, on ctxlab's base image
// of the language) and sets the instance's base_commit; the image is removed when the test ends.
func instanceImage(t *testing.T, bin, lang string, in *swebench.Instance, files map[string]string) {
	t.Helper()
	if err := startInstanceImage(t, bin, lang, in, files)(); err != nil {
		t.Fatal(err)
	}
}

// startInstanceImage prepares what instanceImage builds and starts the build; wait returns its error. The test's
// goroutine calls it (its failures are fatal), the build runs beside what the test does meanwhile.
func startInstanceImage(t *testing.T, bin, lang string, in *swebench.Instance, files map[string]string) (wait func() error) {
	t.Helper()
	repo, commit := gitRepo(t, files)
	in.BaseCommit = commit
	return startRepoImage(t, bin, lang, InstanceImage(engineNamespace, in.InstanceID), repo)
}

// startRepoImage starts building the image name, a repository's folder (a git repository at its base commit) in
// /testbed on ctxlab's base image of the language, and returns what waits for the build; the image is removed when
// the test ends.
func startRepoImage(t *testing.T, bin, lang, name, repo string) (wait func() error) {
	t.Helper()
	base := dockertest.Base(t, bin, lang)
	var err error
	var took time.Duration
	built := make(chan struct{})
	go func() {
		start := time.Now()
		err = (images.Builder{Docker: bin}).Instance(context.Background(), base, repo, name, nil)
		took = time.Since(start)
		close(built)
	}()
	t.Cleanup(func() {
		<-built // also when the test ended early: the image is removed once it exists
		_ = exec.Command(bin, "image", "rm", "-f", name).Run()
	})
	return func() error {
		<-built
		if err == nil {
			t.Logf("instance image %s built in %s", name, took.Round(time.Millisecond))
		}
		return err
	}
}

// containersOf lists the containers labeled with a grader's pid that grade an instance (their names start with
// the instance id): the Python and Go subtests grade beside each other in this process.
func containersOf(t *testing.T, bin string, pid int, instanceID string) []string {
	t.Helper()
	out, err := exec.Command(bin, "ps", "-a", "--filter", fmt.Sprintf("label=%s=%d", labelPID, pid),
		"--format", "{{.Names}}").Output()
	if err != nil {
		t.Fatalf("docker ps: %v", err)
	}
	var names []string
	for _, name := range strings.Fields(string(out)) {
		if strings.HasPrefix(name, "ctxlab-"+safe(instanceID)+"-") {
			names = append(names, name)
		}
	}
	return names
}

func TestDockerEngine(t *testing.T) {
	t.Parallel()
	bin := dockertest.Engine(t)
	cfg := Config{Docker: bin, Namespace: engineNamespace}
	run := func(t *testing.T, in swebench.Instance, patch string, timeout time.Duration) (Result, time.Duration) {
		t.Helper()
		start := time.Now()
		res, err := Docker{}.Run(context.Background(), Request{Instance: in, Patch: patch, Timeout: timeout, Config: cfg})
		if err != nil {
			t.Fatalf("%s: %v\n%s", in.InstanceID, err, res.Output)
		}
		return res, time.Since(start)
	}

	// The Go image (the slowest to build) builds from the start. The SIGKILL subtest runs first, alone: every grade
	// removes dead graders' containers, its killed grader's among them. Then the Go subtest (its two grades compile
	// in the container) runs beside the Python ones, which stay in order among themselves; their container checks
	// count only their own instance's.
	gi := engineGoInstance()
	goImage := startInstanceImage(t, bin, images.LangGo, &gi, strsBase)
	py := enginePythonInstance()
	instanceImage(t, bin, images.LangPython, &py, calcBase)
	t.Run("SIGKILLedGraderContainerRemovedByTheNextGrade", func(t *testing.T) {
		dockertest.Alone(t) // no other test process grades meanwhile (this one does not yet)
		hang := diff.Unified("calc/ops.py", []byte(calcBase["calc/ops.py"]),
			[]byte(strings.Replace(calcBase["calc/ops.py"], "    return a - b", "    while True:\n        pass", 1)))
		job, err := json.Marshal(childJob{Instance: py, Patch: hang, Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		child := exec.Command(os.Args[0], "-test.run=^TestDockerEngineChildGrader$", "-test.v")
		child.Env = append(os.Environ(), childJobEnv+"="+string(job))
		out, err := os.CreateTemp(t.TempDir(), "child")
		if err != nil {
			t.Fatal(err)
		}
		child.Stdout, child.Stderr = out, out
		if err := child.Start(); err != nil {
			t.Fatal(err)
		}
		pid := child.Process.Pid
		// Wait until the child's container runs the tests (the eval script is copied in just before).
		deadline := time.Now().Add(3 * time.Minute)
		var names []string
		for time.Now().Before(deadline) {
			if names = containersOf(t, bin, pid, py.InstanceID); len(names) == 1 {
				if exec.Command(bin, "exec", names[0], "test", "-f", "/eval.sh").Run() == nil {
					break
				}
			}
			time.Sleep(300 * time.Millisecond)
		}
		if len(names) != 1 {
			_ = child.Process.Kill()
			b, _ := os.ReadFile(out.Name())
			t.Fatalf("the child grader's container never appeared (%v)\n%s", names, b)
		}
		time.Sleep(time.Second)
		if err := child.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = child.Wait()
		if left := containersOf(t, bin, pid, py.InstanceID); len(left) != 1 {
			t.Fatalf("after the SIGKILL the container should still be there (nothing removed it): %v", left)
		}
		t.Logf("container %s outlived its grader (pid %d)", names[0], pid)
		res, _ := run(t, py, py.Patch, 5*time.Minute)
		if !decide(py, res).Resolved {
			t.Errorf("gold not resolved after the sweep:\n%s", res.Output)
		}
		if left := containersOf(t, bin, pid, py.InstanceID); len(left) != 0 {
			t.Errorf("the dead grader's container survived the next grade: %v", left)
		}
	})
	// Rows whose environment fails, in the Python instance's image, side by side.
	t.Run("PythonEnvironment", func(t *testing.T) {
		t.Parallel()
		dockerEnvironmentSubtests(t, cfg, py)
	})
	goErr := goImage()
	t.Run("Go", func(t *testing.T) {
		t.Parallel()
		if goErr != nil {
			t.Fatal(goErr)
		}
		// Its two grades are independent containers of one image, each compiling the tests: graded side by side.
		t.Run("GoldResolves", func(t *testing.T) {
			t.Parallel()
			res, took := run(t, gi, gi.Patch, 5*time.Minute)
			if v := decide(gi, res); !v.Resolved {
				t.Fatalf("Go gold not resolved: %+v\n%s", v, res.Output)
			}
			t.Logf("graded in %s", took.Round(time.Millisecond))
		})
		t.Run("ReadmeOnlyPatchDoesNot", func(t *testing.T) {
			t.Parallel()
			readme := diff.Unified("README.md", []byte(strsBase["README.md"]), []byte("strs, documented\n"))
			res, took := run(t, gi, readme, 5*time.Minute)
			if v := decide(gi, res); !res.Ran || v.Resolved {
				t.Fatalf("README-only patch: ran %v, %+v\n%s", res.Ran, v, res.Output)
			}
			if rs := res.Report.Tests["TestUpper"]; len(rs) != 1 || rs[0].Status != testlog.StatusPass {
				t.Errorf("TestUpper = %+v\n%s", rs, res.Output)
			}
			t.Logf("graded in %s", took.Round(time.Millisecond))
		})
	})
	t.Run("Python", func(t *testing.T) {
		t.Parallel()
		// The gold grade's time, the same container start and test run as a hang's up to its timeout: the hang's
		// bound is measured against it, as the machine's load stretches both.
		goldTook := time.Minute
		t.Run("PythonGoldResolves", func(t *testing.T) {
			res, took := run(t, py, py.Patch, 5*time.Minute)
			goldTook = took
			v := decide(py, res)
			if !v.Resolved || res.Isolation != "container" {
				t.Fatalf("gold not resolved: %+v\n%s", v, res.Output)
			}
			t.Logf("graded in %s", took.Round(time.Millisecond))
			if strings.Contains(string(res.Output), "sk-should-never") {
				t.Error("the grader's secret appears in the container's output")
			}
		})
		t.Run("PythonGradedThroughTableEntry", func(t *testing.T) {
			// Labelled seaborn 0.12, the instance is graded by that entry of SWE-bench's table: its command, install
			// step and parser run.
			in := py
			in.Repo, in.Version = "mwaskom/seaborn", "0.12"
			res, took := run(t, in, in.Patch, 5*time.Minute)
			if v := decide(in, res); !v.Resolved {
				t.Fatalf("gold not resolved through the table: %+v\n%s", v, res.Output)
			}
			t.Logf("graded in %s", took.Round(time.Millisecond))
			out := string(res.Output)
			if !strings.Contains(out, "+ pytest -p ctxlab_results --no-header -rA tests/test_calc.py") ||
				!strings.Contains(out, "+ python -m pip install -e '.[dev]'") {
				t.Errorf("the table's commands did not run:\n%s", out)
			}
			// ctxlab's base image has no conda: the guarded activation leaves no error in the log.
			if strings.Contains(out, "miniconda3/bin/activate: No such file") || strings.Contains(out, "conda: command not found") {
				t.Errorf("conda noise in the log:\n%s", out)
			}
		})
		t.Run("PythonEmptyAndUnrelatedPatchesDoNot", func(t *testing.T) {
			res, _ := run(t, py, "", time.Minute)
			if res.Ran || decide(py, res).Resolved {
				t.Errorf("empty patch: ran %v, %+v", res.Ran, decide(py, res))
			}
			readme := diff.Unified("README.md", []byte(calcBase["README.md"]), []byte("calc, documented\n"))
			res, _ = run(t, py, readme, 5*time.Minute)
			v := decide(py, res)
			if !res.Ran || v.Resolved {
				t.Fatalf("README-only patch: ran %v, %+v\n%s", res.Ran, v, res.Output)
			}
			// The contained-run tests passed even though the fix is missing: the failure is the bug's alone.
			for _, id := range py.PassToPass {
				if rs := res.Report.Tests[id]; len(rs) != 1 || rs[0].Status != testlog.StatusPass {
					t.Errorf("%s = %+v\n%s", id, rs, res.Output)
				}
			}
		})
		t.Run("EscapingPatchRefusedBeforeAnyContainer", func(t *testing.T) {
			// A wrapper docker that records its calls: an escaping patch must make none.
			dir := t.TempDir()
			calls := filepath.Join(dir, "calls")
			wrapper := filepath.Join(dir, "docker")
			real, err := exec.LookPath(bin)
			if err != nil {
				t.Fatal(err)
			}
			script := fmt.Sprintf("#!/bin/sh\necho \"$*\" >> %q\nexec %q \"$@\"\n", calls, real)
			if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			for _, patch := range []string{
				"--- /dev/null\n+++ /etc/ctxlab-escaped\n@@ -0,0 +1 @@\n+x\n",
				diff.Unified("../outside.py", nil, []byte("x = 1\n")),
			} {
				c := cfg
				c.Docker = wrapper
				res, err := Docker{}.Run(context.Background(), Request{Instance: py, Patch: patch, Timeout: time.Minute, Config: c})
				if err != nil || res.Ran || res.Apply.Outcome != diff.Escapes {
					t.Errorf("%q: ran %v, outcome %v, err %v", patch, res.Ran, res.Apply.Outcome, err)
				}
			}
			if b, err := os.ReadFile(calls); err == nil || !os.IsNotExist(err) {
				t.Errorf("docker was called for an escaping patch: %s", b)
			}
		})
		t.Run("HangKilledAtTimeoutContainerRemoved", func(t *testing.T) {
			hang := diff.Unified("calc/ops.py", []byte(calcBase["calc/ops.py"]),
				[]byte(strings.Replace(calcBase["calc/ops.py"], "    return a - b", "    while True:\n        pass", 1)))
			res, took := run(t, py, hang, 15*time.Second)
			if !res.TimedOut || decide(py, res).Resolved {
				t.Fatalf("hang: timed out %v, %+v\n%s", res.TimedOut, decide(py, res), res.Output)
			}
			if bound := 15*time.Second + 2*goldTook + 30*time.Second; took > bound {
				t.Errorf("a 15 s timeout took %s, over 15 s + twice the gold grade's %s + 30 s", took, goldTook)
			}
			if left := containersOf(t, bin, os.Getpid(), py.InstanceID); len(left) != 0 {
				t.Errorf("containers left after the timeout: %v", left)
			}
		})
		t.Run("MissingImageIsARowErrorNamingThePull", func(t *testing.T) {
			in := py
			in.InstanceID = "acme__absent-1"
			start := time.Now()
			_, err := Docker{}.Run(context.Background(), Request{Instance: in, Patch: py.Patch, Timeout: time.Minute, Config: cfg})
			want := "docker pull " + InstanceImage(engineNamespace, in.InstanceID)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("err = %v, want one naming %q", err, want)
			}
			if d := time.Since(start); d > 30*time.Second {
				t.Errorf("took %s", d)
			}
			if left := containersOf(t, bin, os.Getpid(), in.InstanceID); len(left) != 0 {
				t.Errorf("containers created for a missing image: %v", left)
			}
		})

	})
}

const childJobEnv = "CTXLAB_DOCKER_CHILD_JOB"

// childJob is the grade the child grader runs.
type childJob struct {
	Instance swebench.Instance
	Patch    string
	Config   Config
}

// TestDockerEngineChildGrader is the grader TestDockerEngine kills: it grades the job of its variable, if any.
func TestDockerEngineChildGrader(t *testing.T) {
	job := os.Getenv(childJobEnv)
	if job == "" {
		t.Skip("run by TestDockerEngine as the grader it kills")
	}
	var j childJob
	if err := json.Unmarshal([]byte(job), &j); err != nil {
		t.Fatal(err)
	}
	res, err := Docker{}.Run(context.Background(), Request{Instance: j.Instance, Patch: j.Patch, Config: j.Config,
		Timeout: 10 * time.Minute})
	t.Fatalf("the grade returned (%v, timed out %v) before the parent killed it", err, res.TimedOut)
}

func TestInstanceImage(t *testing.T) {
	for _, c := range []struct{ ns, id, want string }{
		{"", "django__django-11099", "swebench/sweb.eval.x86_64.django_1776_django-11099:latest"},
		{"swerebench", "Acme__Tool-7", "swerebench/sweb.eval.x86_64.acme_1776_tool-7:latest"},
		{"mswebench", "cli__cli-513", "mswebench/cli_m_cli:pr-513"},
		{"mswebench", "zeromicro__go-zero-2787", "mswebench/zeromicro_m_go-zero:pr-2787"},
	} {
		if got := InstanceImage(c.ns, c.id); got != c.want {
			t.Errorf("InstanceImage(%q, %q) = %q, want %q", c.ns, c.id, got, c.want)
		}
	}
}
