package testrun

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"ctxlab/grading/sandbox"
)

// hostileModule is a module whose package code (not a test file, so dropping the model's test files does not
// remove it) hunts for the grader's secrets in every /proc/PID/environ it can read, and writes outside its worktree; its one
// test then passes. (Daemons and a killed grader are package sandbox's tests.)
func hostileModule(t *testing.T, outside string) string {
	return module(t, map[string]string{
		"hostile.go": `package m

import (
	"os"
	"path/filepath"
	"strings"
)

// Steal prints every secret canary readable in any process's environment and writes a file outside the worktree.
func Steal(outside string) {
	procs, _ := filepath.Glob("/proc/[0-9]*/environ")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		for _, kv := range strings.Split(string(b), "\x00") {
			if strings.HasPrefix(kv, "CTXLAB_CANARY=") {
				println("STOLEN " + kv)
			}
		}
	}
	_ = os.WriteFile(filepath.Join(outside, "escaped"), []byte("x"), 0o644)
}
`,
		"hostile_test.go": `package m

import "testing"

func TestSteal(t *testing.T) { Steal(` + "`" + outside + "`" + `) }
`,
	})
}

// The code under test of a graded run reads no ancestor's environment and writes nothing outside its worktree once
// isolated; without isolation the same code does both, which is what makes the test able to fail.
func TestIsolatedRunCannotStealOrEscape(t *testing.T) {
	if ok, why := sandbox.Available(); !ok {
		t.Skipf("no sandbox here (%s): the row says grade_isolation: none", why)
	}
	// A process of the grader's machine holding a secret in its environment (as the starter holds OPENAI_API_KEY);
	// /proc shows a process's initial environment, so it is set at exec.
	holder := exec.Command("sleep", "120")
	holder.Env = []string{"CTXLAB_CANARY=canary-3f9a1c"}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	for _, isolate := range []bool{false, true} {
		outside := t.TempDir() // owned by root, outside the worktree
		if err := os.Chmod(outside, 0o777); err != nil {
			t.Fatal(err)
		}
		res := run(t, Options{Dir: hostileModule(t, outside), Tests: []string{"TestSteal"}, Isolate: isolate})
		if got := status(res.Report, "TestSteal"); got != "pass" {
			t.Fatalf("isolate=%v: TestSteal %s\n%s", isolate, got, res.Output)
		}
		stole := strings.Contains(string(res.Output), "STOLEN CTXLAB_CANARY=canary-3f9a1c")
		_, err := os.Stat(filepath.Join(outside, "escaped"))
		escaped := err == nil
		if !isolate {
			if !stole || !escaped || res.Isolation != sandbox.IsolationNone {
				t.Fatalf("without isolation the attack must work (stole %v, escaped %v, isolation %q)", stole, escaped,
					res.Isolation)
			}
			continue
		}
		if stole || escaped {
			t.Errorf("isolated run: stole %v, escaped %v\n%s", stole, escaped, res.Output)
		}
		if res.Isolation != sandbox.IsolationNamespaces {
			t.Errorf("Isolation = %q, want %q", res.Isolation, sandbox.IsolationNamespaces)
		}
	}
}

// A test command installed under the worker's home (a pyenv or a virtualenv), or in a folder of its own that no
// place of the sandbox's Layout holds (an interpreter under /opt), stays runnable in the sandbox, which shows its
// folder and nothing else of the home or of /opt.
func TestIsolatedCommandOutsideLayout(t *testing.T) {
	if ok, why := sandbox.Available(); !ok {
		t.Skipf("no sandbox here (%s)", why)
	}
	opt, err := os.MkdirTemp("/", "ctxlab-test-opt-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(opt) })
	if err := os.Chmod(opt, 0o755); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(t.TempDir(), "home")
	for name, tool := range map[string]string{"home": filepath.Join(home, ".venv", "bin", "runtests"),
		"prefix": filepath.Join(opt, "python", "bin", "runtests")} {
		t.Run(name, func(t *testing.T) {
			prefix := filepath.Dir(filepath.Dir(tool))
			writeFile(t, tool, "#!/bin/sh\necho ran-from-$(cat \"$(dirname \"$0\")/../marker\"); ls -A \"$1\"\n", 0o755)
			writeFile(t, filepath.Join(prefix, "marker"), name+"\n", 0o644)
			writeFile(t, filepath.Join(filepath.Dir(prefix), "other", "secret"), "other\n", 0o644)
			t.Setenv("HOME", home)
			res, err := Run(context.Background(), Options{Dir: t.TempDir(), Command: []string{tool, filepath.Dir(prefix)},
				Parser: "pytest", Isolate: true})
			if err != nil || res.Isolation != sandbox.IsolationNamespaces {
				t.Fatalf("err %v, isolation %q, output:\n%s", err, res.Isolation, res.Output)
			}
			want := "ran-from-" + name + "\n" + filepath.Base(prefix) + "\n"
			if string(res.Output) != want {
				t.Fatalf("output %q, want %q: the command's folder alone", res.Output, want)
			}
		})
	}
}

func writeFile(t *testing.T, name, body string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
}
