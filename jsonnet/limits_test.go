package jsonnet

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// compileChildEnv makes the test binary compile one spec and exit (see compileInChild): an evaluation that breaks a
// limit is abandoned, not stopped, and only a process's exit ends it, as a starter's exit does.
const compileChildEnv = "CTXLAB_JSONNET_TEST_COMPILE"

type compileJob struct {
	Path    string
	Options Options
}

func TestMain(m *testing.M) {
	if job := os.Getenv(compileChildEnv); job != "" {
		var j compileJob
		if err := json.Unmarshal([]byte(job), &j); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		if _, err := Compile(j.Path, j.Options); err != nil {
			fmt.Print(err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// compileInChild compiles path with opts in a child process and returns its error text, how long it took and the
// most memory it held (its peak resident set).
func compileInChild(t *testing.T, path string, opts Options, wait time.Duration) (string, time.Duration, int64) {
	t.Helper()
	job, err := json.Marshal(compileJob{path, opts})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), compileChildEnv+"="+string(job))
	var out strings.Builder
	cmd.Stdout = &out
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(wait, func() { _ = cmd.Process.Kill() })
	defer timer.Stop()
	err = cmd.Wait()
	took := time.Since(start)
	if took >= wait {
		t.Fatalf("Compile had not returned after %s: killed", wait)
	}
	if err == nil {
		t.Fatalf("the spec compiled")
	}
	rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10 // KiB on Linux
	return out.String(), took, rss
}

// TestHostileSpecsFailInBoundedTimeAndMemory (issue 39, not yet probed): a spec that recurses forever (counted by
// go-jsonnet, or tailstrict, which it does not count), loops for hours, builds gigabytes, manifests a huge output or
// imports a huge file fails with one line naming the limit it hit, within the limit's time and without the process
// growing far past the limit's memory. Before, the tail recursion crashed the process with Go's fatal stack
// overflow after a gigabyte of stack, the loop never returned and the others took what memory they asked for.
func TestHostileSpecsFailInBoundedTimeAndMemory(t *testing.T) {
	dir := t.TempDir()
	huge := filepath.Join(dir, "huge.txt")
	if err := os.WriteFile(huge, make([]byte, MaxImportBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	// A 64 KiB string joined 1,100 times: 68.75 MiB of JSON.
	const bigOutput = "local k = std.join('', std.makeArray(65536, function(i) 'x')); " +
		"{ x: std.join('', std.makeArray(1100, function(i) k)) }"
	for _, c := range []struct {
		name, spec, want string
		opts             Options
	}{
		{"unbounded recursion", "local f(n) = f(n + 1) + 1; { x: f(0) }", "max stack frames exceeded", Options{}},
		{"endless tail recursion", "local f(n) = f(n + 1) tailstrict; f(0)", "recursed past 256 MiB of stack",
			Options{}},
		// A billion additions over small arrays: no stack, little memory, hours.
		{"endless loop", "std.foldl(function(acc, i) acc + std.foldl(function(a, j) a + j, std.range(0, 999), 0), " +
			"std.range(0, 999999), 0)", "took longer than 5s", Options{Timeout: 5 * time.Second}},
		{"gigabytes", "{ x: std.length(std.makeArray(100000000, function(i) i)) }", "more than 256 MiB of memory",
			Options{MaxMemory: 256 << 20}},
		{"huge output", bigOutput, "more than 64 MiB of JSON", Options{}},
		{"huge import", "{ x: importstr 'huge.txt' }", "holds more than 64 MiB", Options{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_")+".jsonnet")
			if err := os.WriteFile(path, []byte(c.spec), 0o644); err != nil {
				t.Fatal(err)
			}
			msg, took, rss := compileInChild(t, path, c.opts, 2*time.Minute)
			t.Logf("%s: %s, peak %d MiB: %s", c.name, took.Round(time.Millisecond), rss>>20, msg)
			if !strings.Contains(msg, c.want) || strings.Contains(msg, "\n") || !strings.HasPrefix(msg, path) {
				t.Errorf("error %q, want one line naming the spec and %q", msg, c.want)
			}
			if limit := c.opts.Timeout; limit > 0 && took > limit+10*time.Second {
				t.Errorf("took %s, past the %s limit", took, limit)
			}
			// The process's own (a test binary's) memory, and one poll's worth of growth past the limit.
			if limit := c.opts.MaxMemory; limit > 0 && rss > 2*limit+256<<20 {
				t.Errorf("peak %d MiB, far past the %d MiB limit", rss>>20, limit>>20)
			}
		})
	}
}
