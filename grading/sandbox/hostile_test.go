package sandbox_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ctxlab/grading/sandbox"
	"ctxlab/testkit/filetree"
)

// scratchTMPDIR makes a folder on the root file system, outside /tmp, /var/tmp, /dev/shm and the home (a cluster's
// scratch disk), points TMPDIR at it as a worker there runs, and removes it when the test ends.
func scratchTMPDIR(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/", "ctxlab-test-scratch-")
	if err != nil {
		t.Fatalf("a scratch folder outside /tmp: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o1777); err != nil { // as /tmp: every user may make folders there
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", dir)
	return dir
}

// boxFor makes a Box for wt (isolated unless disable), closed when the test ends.
func boxFor(t *testing.T, wt string, disable bool, o sandbox.Options) *sandbox.Box {
	t.Helper()
	o.Disable = disable
	box, err := sandbox.New(wt, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { box.Close() })
	if want := map[bool]string{true: sandbox.IsolationNone, false: sandbox.IsolationNamespaces}[disable]; box.Isolation() != want {
		t.Fatalf("isolation %q (%s), want %q", box.Isolation(), box.Why(), want)
	}
	return box
}

// Issue 39, defects 2 and 3: with the worker's TMPDIR on a scratch disk, every grade's worktree lies in one folder.
// A graded command must see neither that folder nor another grade's worktree while it is graded, and what it writes
// there (a conftest.py every later pytest grade without an ini file would load) must not reach the host.
func TestGradesUnderScratchTMPDIRDoNotMeet(t *testing.T) {
	modes(t, func(t *testing.T, disable bool) (bool, string) {
		scratch := scratchTMPDIR(t)
		other, err := os.MkdirTemp(scratch, "ctxlab-grade-1-")
		if err != nil {
			t.Fatal(err)
		}
		secret := "gold-" + token()
		filetree.Write(t, other, map[string]string{"gold.py": secret + "\n"})
		boxFor(t, other, disable, sandbox.Options{}) // the other grade, under way: its worktree is the uid's
		wt, err := os.MkdirTemp(scratch, "ctxlab-grade-2-")
		if err != nil {
			t.Fatal(err)
		}
		box := boxFor(t, wt, disable, sandbox.Options{})
		script := `ls "$1" | sed 's/^/entry: /'; cat "$2/gold.py" 2>&1; echo pwned > "$2/gold.py" 2>&1; echo 'import pytest' > "$1/conftest.py" 2>&1
echo pwned > ./inside && echo "inside ok"`
		out, err := run(t, box, context.Background(), []string{"sh", "-c", script, "sh", scratch, other},
			[]string{"PATH=/usr/bin:/bin"})
		if err != nil || !strings.Contains(out, "inside ok") {
			t.Fatalf("the command could not write its own worktree: %v\n%s", err, out)
		}
		var how []string
		if strings.Contains(out, secret) || strings.Contains(out, "entry: "+filepath.Base(other)) {
			how = append(how, "saw the other grade's worktree")
		}
		if b, _ := os.ReadFile(filepath.Join(other, "gold.py")); string(b) != secret+"\n" {
			how = append(how, fmt.Sprintf("rewrote the other grade's file to %q", b))
		}
		if _, err := os.Stat(filepath.Join(scratch, "conftest.py")); err == nil {
			how = append(how, "left conftest.py in the worktrees' folder")
		}
		return len(how) > 0, strings.Join(how, "; ") + "\n" + out
	})
}

// Issue 39, defect 4: a graded command writes under /run/lock (a world-writable folder of the host) and reads a
// world-readable run folder (gold patches, temporal.db, the call ledger) that lies in no folder of its run.
func TestHostFoldersUnseen(t *testing.T) {
	modes(t, func(t *testing.T, disable bool) (bool, string) {
		tok := token()
		lock := filepath.Join("/run/lock", "ctxlab-test-"+tok)
		t.Cleanup(func() { os.Remove(lock) })
		runs, err := os.MkdirTemp("/", "ctxlab-test-runs-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(runs) })
		if err := os.Chmod(runs, 0o755); err != nil {
			t.Fatal(err)
		}
		gold := "gold-patch-" + tok
		filetree.Write(t, runs, map[string]string{"demo/dataset/instances.jsonl": gold + "\n"})
		box := boxFor(t, worktree(t), disable, sandbox.Options{})
		out, err := run(t, box, context.Background(), []string{"sh", "-c", `echo pwned > "$1"; cat "$2" 2>&1; true`, "sh",
			lock, filepath.Join(runs, "demo", "dataset", "instances.jsonl")}, []string{"PATH=/usr/bin:/bin"})
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		var how []string
		if _, err := os.Stat(lock); err == nil {
			how = append(how, "left a file in /run/lock")
		}
		if strings.Contains(out, gold) {
			how = append(how, "read the run folder")
		}
		return len(how) > 0, strings.Join(how, "; ") + "\n" + out
	})
}

// Issue 39, defect 5: the network namespace does not cover unix sockets bound to a path. A host service's
// world-connectable socket in /run (D-Bus, a resolver, PostgreSQL) must be out of reach, as an abstract socket is.
func TestHostUnixSocketsUnreachable(t *testing.T) {
	tok := token()
	path := filepath.Join("/run", "ctxlab-test-"+tok+".sock")
	abstract := "@ctxlab-test-" + tok
	for _, addr := range []string{path, abstract} {
		l, err := net.Listen("unix", addr)
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
				c.Write([]byte("hello from the host\n"))
				c.Close()
			}
		}()
	}
	if err := os.Chmod(path, 0o777); err != nil {
		t.Fatal(err)
	}
	modes(t, func(t *testing.T, disable bool) (bool, string) {
		wt := worktree(t)
		prog := copyTestBinary(t, wt, "dial")
		box := boxFor(t, wt, disable, sandbox.Options{})
		out, err := run(t, box, context.Background(), []string{prog},
			[]string{helperEnv + "=dialunix", "SANDBOX_TEST_ADDRS=" + path + "," + abstract})
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return strings.Contains(out, "reached"), out
	})
}
