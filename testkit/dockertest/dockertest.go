// Package dockertest finds the Docker engine for tests that grade in real containers. Plain `go test` skips those
// tests when no engine answers; scripts/test sets CTXLAB_REQUIRE_DOCKER=1 (after installing docker.io and starting
// a daemon), and then a missing engine fails them with the commands that provide one.
package dockertest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"ctxlab/internal/images"
)

// RequireEnv names the variable that turns a missing engine from a skip into a failure.
const RequireEnv = "CTXLAB_REQUIRE_DOCKER"

// Engine returns the docker program of a running engine, after logging the engine's version; it skips the test
// (or fails it, under CTXLAB_REQUIRE_DOCKER=1) when none answers.
func Engine(t testing.TB) string {
	t.Helper()
	bin := "docker"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "version", "--format", "{{.Server.Version}} ({{.Server.Os}}/{{.Server.Arch}})").CombinedOutput()
	if err != nil {
		msg := "no Docker engine answers (`docker version`: " + strings.TrimSpace(string(out)) + "): install one " +
			"with `apt-get install -y docker.io debootstrap` and start it with `dockerd --storage-driver=vfs " +
			"--iptables=false --ip6tables=false --bridge=none &`, or run scripts/test, which does both"
		if os.Getenv(RequireEnv) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	t.Logf("Docker engine %s", strings.TrimSpace(string(out)))
	shareEngine(t)
	return bin
}

// Every grade and image build removes the containers of dead ctxlab processes machine-wide
// (executor.RemoveStaleContainers). A test that kills a grader or builder and checks that its container is still
// there until its own next step removes it would fail if another test process graded meanwhile, so test processes
// coordinate through a file lock in ctxlab's cache folder: Engine holds it shared for the test, Alone exclusively.
var engineLock struct {
	sync.Mutex
	file  *os.File
	users int // tests of this process holding it
}

// shareEngine takes the lock shared (once per process) until t ends.
func shareEngine(t testing.TB) {
	t.Helper()
	engineLock.Lock()
	defer engineLock.Unlock()
	if engineLock.users == 0 {
		dir, err := images.CacheDir()
		if err != nil {
			t.Fatalf("the Docker tests' lock: %v", err)
		}
		f, err := os.OpenFile(filepath.Join(dir, "dockertest-engine.lock"), os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			t.Fatalf("the Docker tests' lock: %v", err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH); err != nil {
			f.Close()
			t.Fatalf("locking %s: %v", f.Name(), err)
		}
		engineLock.file = f
	}
	engineLock.users++
	t.Cleanup(func() {
		engineLock.Lock()
		defer engineLock.Unlock()
		if engineLock.users--; engineLock.users == 0 {
			_ = syscall.Flock(int(engineLock.file.Fd()), syscall.LOCK_UN)
			engineLock.file.Close()
			engineLock.file = nil
		}
	})
}

// Alone returns the docker program like Engine, and keeps every other test process from grading or building images
// until t ends (it waits for those that do). It cannot see this process's own tests: a test that calls it must not
// run beside others of its process that use the engine (it is not parallel, or runs after its parallel siblings).
func Alone(t testing.TB) string {
	t.Helper()
	bin := Engine(t)
	engineLock.Lock()
	f := engineLock.file
	engineLock.Unlock()
	start := time.Now()
	// The process's one descriptor is converted to exclusive (other processes' shared holds make it wait), and back.
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatalf("locking %s: %v", f.Name(), err)
	}
	if waited := time.Since(start); waited > time.Second {
		t.Logf("waited %s for other test processes to stop using the Docker engine", waited.Round(time.Second))
	}
	t.Cleanup(func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_SH) })
	return bin
}

// Base returns ctxlab's base image of a language (images.Builder.Base), building it once per machine; failures
// are fatal, since a running engine and debootstrap are all it needs.
func Base(t testing.TB, bin, lang string) string {
	t.Helper()
	if _, err := exec.LookPath("debootstrap"); err != nil {
		if name, nerr := images.BaseName(lang); nerr == nil && (images.Builder{Docker: bin}).Exists(context.Background(), name) {
			return name
		}
		t.Fatalf("debootstrap is needed to build the %s base image: apt-get install -y debootstrap (or run scripts/test)", lang)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	start := time.Now()
	name, err := images.Builder{Docker: bin, Log: logWriter{t}}.Base(ctx, lang)
	if err != nil {
		t.Fatalf("base image for %s: %v", lang, err)
	}
	t.Logf("base image %s ready in %s", name, time.Since(start).Round(time.Millisecond))
	return name
}

type logWriter struct{ t testing.TB }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// Registry starts Debian's docker-registry (the registry API, distribution 2.x) on a loopback port with its storage
// in a folder of t's, and returns its address ("127.0.0.1:PORT"); the engine reaches a loopback registry over plain
// HTTP without configuration. It is stopped when t ends. Without docker-registry on PATH the test skips (or fails
// under CTXLAB_REQUIRE_DOCKER=1, saying how to install it).
func Registry(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("docker-registry")
	if err != nil {
		msg := "no docker-registry on PATH: apt-get install -y docker-registry (or run scripts/test)"
		if os.Getenv(RequireEnv) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	dir := t.TempDir()
	config := fmt.Sprintf("version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: %s\n"+
		"  delete:\n    enabled: true\nhttp:\n  addr: %s\n", filepath.Join(dir, "data"), addr)
	file := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(file, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	logFile, err := os.Create(filepath.Join(dir, "registry.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", file)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logFile.Close()
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/v2/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return addr
			}
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(logFile.Name())
			t.Fatalf("docker-registry on %s did not answer: %v\n%s", addr, err, b)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
