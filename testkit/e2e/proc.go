// Package e2e holds the helpers the end-to-end tests share: processes killed as a crash would kill them, output read
// while it is written, a run's rows read and compared, and the module's paths. Only tests import it.
package e2e

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// SyncBuffer is a process's output, read by the test while the process writes it.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Tail returns the last n bytes of s: the end of a long output, where a failure shows.
func Tail(s string, n int) string { return s[max(0, len(s)-n):] }

// Proc is a process in its own process group, so that a kill also ends the commands it started (a grade's tests),
// as a crash of the machine would.
type Proc struct {
	Name string
	Cmd  *exec.Cmd
	Out  SyncBuffer    // stdout and stderr as written
	Done chan struct{} // closed once the process has exited
	Err  error         // what Wait returned; read it after Done is closed
}

// StartGroup starts cmd as a Proc named name; the test's cleanup kills it.
func StartGroup(t testing.TB, name string, cmd *exec.Cmd) *Proc {
	t.Helper()
	p := &Proc{Name: name, Cmd: cmd, Done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = &p.Out, &p.Out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	go func() { p.Err = cmd.Wait(); close(p.Done) }()
	t.Cleanup(p.Kill)
	return p
}

// Kill sends SIGKILL to the process group and waits for the process to die.
func (p *Proc) Kill() {
	if p.Exited() {
		return
	}
	_ = syscall.Kill(-p.Cmd.Process.Pid, syscall.SIGKILL)
	<-p.Done
}

// Exited reports whether the process has ended.
func (p *Proc) Exited() bool {
	select {
	case <-p.Done:
		return true
	default:
		return false
	}
}

// WaitFor polls cond every 5 ms until it holds, failing the test after timeout, or as soon as p (when not nil)
// exits first.
func WaitFor(t testing.TB, what string, timeout time.Duration, p *Proc, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if p != nil && p.Exited() {
			t.Fatalf("the %s exited (%v) before %s\n%s", p.Name, p.Err, what, Tail(p.Out.String(), 4000))
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s in %s", what, timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// EnvWithout is the test's environment without the variables whose names start with one of prefixes: the host's
// settings that would reach a subprocess otherwise.
func EnvWithout(prefixes ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		if !hasAnyPrefix(kv, prefixes) {
			out = append(out, kv)
		}
	}
	return out
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// FreePort picks a free local port below Linux's ephemeral range, so that no outgoing connection takes it as its
// source port while a server that listens on it is down between a kill and its restart.
func FreePort() (int, error) {
	for range 100 {
		port := 20000 + rand.IntN(12768)
		if l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err == nil {
			l.Close()
			return port, nil
		}
	}
	return 0, errors.New("no free port between 20000 and 32767")
}

// KillWhen starts cmd, waits until cond holds (polled every interval), then kills cmd with SIGKILL and waits for it:
// a crash at a chosen point of a run. When cond does not hold within timeout, it kills cmd and fails the test with
// what and cmd's stderr.
func KillWhen(t testing.TB, cmd *exec.Cmd, what string, timeout, interval time.Duration, cond func() bool) {
	t.Helper()
	var stderr SyncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("%s; stderr:\n%s", what, stderr.String())
		}
		time.Sleep(interval)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
}
