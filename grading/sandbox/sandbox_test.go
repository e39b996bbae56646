package sandbox_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"ctxlab/grading/sandbox"
)

// helperEnv makes the test binary act as a grader (or another helper process) instead of running tests.
const helperEnv = "SANDBOX_TEST_HELPER"

// graderJob is what a grader helper is asked to run, as JSON in graderJobEnv.
type graderJob struct {
	Worktree string
	Argv     []string
	Env      []string
	Disable  bool // run without isolation: the attack must then succeed
}

const graderJobEnv = "SANDBOX_TEST_JOB"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "grader":
		os.Exit(grader())
	case "dial":
		// Reach the grader's listener, then check that loopback works for the tests' own servers.
		if c, err := net.DialTimeout("tcp", os.Getenv("SANDBOX_TEST_ADDR"), time.Second); err == nil {
			fmt.Println("reached the grader's listener")
			c.Close()
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err == nil {
			if c, err := net.Dial("tcp", l.Addr().String()); err == nil {
				fmt.Println("loopback ok")
				c.Close()
			}
		}
		os.Exit(0)
	case "walk":
		os.Exit(walkBox())
	case "dialunix":
		// Connect to each unix socket named, and say which answered.
		for _, addr := range strings.Split(os.Getenv("SANDBOX_TEST_ADDRS"), ",") {
			c, err := net.DialTimeout("unix", addr, time.Second)
			if err != nil {
				fmt.Printf("%s: %v\n", addr, err)
				continue
			}
			fmt.Printf("reached %s\n", addr)
			c.Close()
		}
		os.Exit(0)
	case "nondumpable-target":
		// A process of a non-root uid that holds a secret in its environment and waits to be read.
		if os.Getenv("SANDBOX_TEST_NONDUMPABLE") == "1" {
			if err := sandbox.NonDumpable(); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
		}
		fmt.Println("ready")
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// grader is a process whose own environment holds a secret (as the worker's holds API keys) and that runs one
// command through a Box, copying its output to stdout.
func grader() int {
	// As the worker does: the grader's environment holds the secret, so it is not dumpable.
	if err := sandbox.NonDumpable(); err != nil {
		fmt.Fprintln(os.Stderr, "grader:", err)
		return 2
	}
	var job graderJob
	if err := json.Unmarshal([]byte(os.Getenv(graderJobEnv)), &job); err != nil {
		fmt.Fprintln(os.Stderr, "grader:", err)
		return 2
	}
	box, err := sandbox.New(job.Worktree, sandbox.Options{Disable: job.Disable})
	if err != nil {
		fmt.Fprintln(os.Stderr, "grader:", err)
		return 2
	}
	defer box.Close()
	cmd, err := box.Command(context.Background(), job.Argv, job.Env, job.Worktree)
	if err != nil {
		fmt.Fprintln(os.Stderr, "grader:", err)
		return 2
	}
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	err = cmd.Run()
	fmt.Printf("grader: isolation=%s exit=%v\n", box.Isolation(), err)
	return 0
}

// startGrader starts the test binary as a grader holding secret in its environment.
func startGrader(t *testing.T, job graderJob, secret string, stdout *bytes.Buffer) *exec.Cmd {
	t.Helper()
	data, err := json.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), helperEnv+"=grader", graderJobEnv+"="+string(data), "OPENAI_API_KEY="+secret)
	cmd.Stdout, cmd.Stderr = stdout, stdout
	// Without isolation, processes that outlive the grader hold its output open.
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

// checkIsolation fails t unless the grader's output says it ran with the isolation the test asked for.
func checkIsolation(t *testing.T, out string, disable bool) {
	t.Helper()
	want := "grader: isolation=" + map[bool]string{true: sandbox.IsolationNone, false: sandbox.IsolationNamespaces}[disable]
	if !strings.Contains(out, want) {
		t.Fatalf("want %q in the grader's output:\n%s", want, out)
	}
}

func requireNamespaces(t *testing.T) {
	t.Helper()
	if ok, why := sandbox.Available(); !ok {
		t.Skipf("isolation unavailable here: %s", why)
	}
}

// modes runs f without isolation, where the attack must succeed (so the test can fail), then with it.
func modes(t *testing.T, f func(t *testing.T, disable bool) (escaped bool, how string)) {
	requireNamespaces(t)
	for _, disable := range []bool{true, false} {
		name := map[bool]string{true: "none", false: "namespaces"}[disable]
		t.Run(name, func(t *testing.T) {
			escaped, how := f(t, disable)
			if disable && !escaped {
				t.Fatalf("without isolation the attack should succeed, but: %s", how)
			}
			if !disable && escaped {
				t.Fatalf("the sandboxed attack succeeded: %s", how)
			}
		})
	}
}

// worktree returns a fresh folder for a run, as the grader's temporary worktree would be.
func worktree(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// token is a random number that marks the processes and files of one attack.
func token() string { return fmt.Sprintf("%d.%06d", 4000+rand.IntN(1000), rand.IntN(1000000)) }

// processesWith returns the pids (of this machine's pid namespace) whose command line contains s.
func processesWith(s string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(cmdline, []byte(s)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// killAllWith kills what an attack without isolation left running.
func killAllWith(s string) {
	for _, pid := range processesWith(s) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// waitGone waits up to d for every process marked with s to end, and returns those still running.
func waitGone(s string, d time.Duration) []int {
	deadline := time.Now().Add(d)
	for {
		left := processesWith(s)
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// (a) The graded command reads every /proc/*/environ it can: the grader's API key must not be among them.
func TestCannotReadAncestorEnviron(t *testing.T) {
	modes(t, func(t *testing.T, disable bool) (bool, string) {
		secret := "sk-canary-" + token()
		script := `for f in /proc/[0-9]*/environ; do tr '\0' '\n' < "$f" 2>/dev/null | grep '^OPENAI_API_KEY=' | sed "s|^|$f |"; done`
		var out bytes.Buffer
		g := startGrader(t, graderJob{Worktree: worktree(t), Argv: []string{"sh", "-c", script},
			Env: []string{"PATH=/usr/bin:/bin"}, Disable: disable}, secret, &out)
		if err := g.Wait(); err != nil && !errors.Is(err, exec.ErrWaitDelay) {
			t.Fatalf("grader: %v\n%s", err, out.String())
		}
		checkIsolation(t, out.String(), disable)
		if !strings.Contains(out.String(), "grader: isolation=") {
			t.Fatalf("the grader did not run the command:\n%s", out.String())
		}
		return strings.Contains(out.String(), secret), out.String()
	})
}

// (b) The graded command writes outside its worktree: a root-owned folder, /tmp, the grader's home. Only its
// worktree and its own temp folder may change.
func TestCannotWriteOutsideWorktree(t *testing.T) {
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	modes(t, func(t *testing.T, disable bool) (bool, string) {
		tok := token()
		outside := t.TempDir() // root-owned, as any folder of the grader
		targets := []string{
			filepath.Join(outside, "pwned"),
			filepath.Join("/tmp", "ctxlab-sandbox-test-pwned-"+tok),
			filepath.Join("/var/tmp", "ctxlab-sandbox-test-pwned-"+tok),
			filepath.Join(home, ".ctxlab-sandbox-test-pwned-"+tok),
		}
		t.Cleanup(func() {
			for _, p := range targets {
				os.Remove(p)
			}
		})
		wt := worktree(t)
		script := `for f in "$@"; do echo pwned > "$f" && echo "wrote $f"; done
echo ok > ./inside && echo > "$HOME/h" && echo > "$TMPDIR/t" && echo "inside ok"`
		var out bytes.Buffer
		g := startGrader(t, graderJob{Worktree: wt, Argv: append([]string{"sh", "-c", script, "sh"}, targets...),
			Env: []string{"PATH=/usr/bin:/bin"}, Disable: disable}, "unused", &out)
		if err := g.Wait(); err != nil && !errors.Is(err, exec.ErrWaitDelay) {
			t.Fatalf("grader: %v\n%s", err, out.String())
		}
		checkIsolation(t, out.String(), disable)
		if !strings.Contains(out.String(), "inside ok") {
			t.Fatalf("the command could not write its worktree, home and temp folder:\n%s", out.String())
		}
		var written []string
		for _, p := range targets {
			if _, err := os.Stat(p); err == nil {
				written = append(written, p)
			}
		}
		return len(written) > 0, fmt.Sprintf("written %v\n%s", written, out.String())
	})
}

// (c) The graded command starts a setsid daemon that writes a heartbeat: once the command has returned, the daemon
// must be gone.
func TestDaemonDiesWithCommand(t *testing.T) {
	modes(t, func(t *testing.T, disable bool) (bool, string) {
		tok := token()
		wt := worktree(t)
		beat := filepath.Join(wt, "heartbeat")
		t.Cleanup(func() { killAllWith(beat) })
		script := `setsid sh -c 'while :; do date +%s%N > "$1"; sleep "$2"; done' daemon "$1" "$2" </dev/null >/dev/null 2>&1 &
while [ ! -s "$1" ]; do sleep 0.05; done; echo started`
		var out bytes.Buffer
		g := startGrader(t, graderJob{Worktree: wt, Argv: []string{"sh", "-c", script, "sh", beat, "0." + tok[5:] + "1"},
			Env: []string{"PATH=/usr/bin:/bin"}, Disable: disable}, "unused", &out)
		// The daemon sleeps 0.<digits of tok>1 seconds between beats, which marks its sleep processes.
		if err := g.Wait(); err != nil && !errors.Is(err, exec.ErrWaitDelay) {
			t.Fatalf("grader: %v\n%s", err, out.String())
		}
		checkIsolation(t, out.String(), disable)
		if !strings.Contains(out.String(), "started") {
			t.Fatalf("the daemon did not start:\n%s", out.String())
		}
		first, _ := os.ReadFile(beat)
		time.Sleep(1500 * time.Millisecond)
		second, _ := os.ReadFile(beat)
		alive := !bytes.Equal(first, second)
		left := processesWith(beat)
		return alive || len(left) > 0, fmt.Sprintf("heartbeat moved: %v, daemon processes %v", alive, left)
	})
}

// (d) The grader is SIGKILLed while its command runs, with a child and a setsid grandchild: all must be gone within
// two seconds.
func TestGraderKilledTakesTestsDown(t *testing.T) {
	modes(t, func(t *testing.T, disable bool) (bool, string) {
		tok := token()
		t.Cleanup(func() {
			killAllWith(tok)
			_, _ = sandbox.CleanStale(os.TempDir()) // the killed grader's private temp folder
		})
		wt := worktree(t)
		ready := filepath.Join(wt, "ready")
		script := `sleep "$1" & setsid sleep "$1" </dev/null >/dev/null 2>&1 & touch "$2"; wait`
		var out bytes.Buffer
		g := startGrader(t, graderJob{Worktree: wt, Argv: []string{"sh", "-c", script, "sh", tok, ready},
			Env: []string{"PATH=/usr/bin:/bin"}, Disable: disable}, "unused", &out)
		deadline := time.Now().Add(10 * time.Second)
		for len(processesWith(tok)) < 3 { // the shell and its two sleeps
			if time.Now().After(deadline) {
				_ = g.Process.Kill()
				t.Fatalf("the command did not start its children:\n%s", out.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err := g.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = g.Wait()
		left := waitGone(tok, 2*time.Second)
		return len(left) > 0, fmt.Sprintf("still running after the grader's SIGKILL: %v", left)
	})
}

// (e) The graded command connects to a service on the grader's loopback (a Temporal frontend, a model proxy):
// it must not reach it, while a server the tests start on their own loopback still works.
func TestCannotReachGraderNetwork(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	modes(t, func(t *testing.T, disable bool) (bool, string) {
		wt := worktree(t)
		prog := copyTestBinary(t, wt, "dial")
		var out bytes.Buffer
		g := startGrader(t, graderJob{Worktree: wt, Argv: []string{prog},
			Env: []string{helperEnv + "=dial", "SANDBOX_TEST_ADDR=" + l.Addr().String()}, Disable: disable}, "unused", &out)
		if err := g.Wait(); err != nil {
			t.Fatalf("grader: %v\n%s", err, out.String())
		}
		checkIsolation(t, out.String(), disable)
		if !strings.Contains(out.String(), "loopback ok") {
			t.Fatalf("the tests' own loopback does not work:\n%s", out.String())
		}
		return strings.Contains(out.String(), "reached the grader's listener"), out.String()
	})
}

// A same-uid process cannot read the environment of a process that called NonDumpable, and can read it otherwise.
func TestNonDumpableHidesEnviron(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the target and the reader as another uid")
	}
	// The test binary must be executable by that uid: copy it into a folder it can reach.
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, data, 0o755); err != nil {
		t.Fatal(err)
	}
	const uid = 61001
	cred := &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid, Groups: []uint32{}}}
	for _, nondumpable := range []bool{false, true} {
		t.Run(fmt.Sprintf("nondumpable=%v", nondumpable), func(t *testing.T) {
			secret := "sk-canary-" + token()
			cmd := exec.Command(target)
			cmd.Env = []string{helperEnv + "=nondumpable-target", "OPENAI_API_KEY=" + secret,
				"SANDBOX_TEST_NONDUMPABLE=" + map[bool]string{true: "1", false: "0"}[nondumpable]}
			cmd.SysProcAttr = cred
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
			buf := make([]byte, 6)
			if _, err := stdout.Read(buf); err != nil || string(buf) != "ready\n" {
				t.Fatalf("target did not start: %q %v", buf, err)
			}
			reader := exec.Command("cat", fmt.Sprintf("/proc/%d/environ", cmd.Process.Pid))
			reader.SysProcAttr = cred
			out, readErr := reader.CombinedOutput()
			leaked := bytes.Contains(out, []byte(secret))
			if nondumpable && leaked {
				t.Fatalf("a same-uid process read the environment of a non-dumpable process")
			}
			if !nondumpable && !leaked {
				t.Fatalf("control: a same-uid process should read a dumpable process's environment: %v %s", readErr, out)
			}
		})
	}
}

// copyTestBinary copies this test binary into dir as name, where the sandbox's uid can run it: the hostile program
// the dialing tests run in the box. It returns the copy's path.
func copyTestBinary(t *testing.T, dir, name string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(dir, name)
	if err := os.WriteFile(prog, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return prog
}
