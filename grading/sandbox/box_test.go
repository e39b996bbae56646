package sandbox_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"ctxlab/grading/sandbox"
	"ctxlab/testkit/filetree"
)

// run starts argv in box and returns its output and error.
func run(t *testing.T, box *sandbox.Box, ctx context.Context, argv []string, env []string) (string, error) {
	t.Helper()
	cmd, err := box.Command(ctx, argv, env, "")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	return out.String(), err
}

// An isolated command runs as the dedicated uid with no other group, no new privileges, a /proc of its own, its
// own HOME and TMPDIR, read-only folders it cannot change, and its exit status passed through.
func TestCommandRunsUnprivileged(t *testing.T) {
	requireNamespaces(t)
	wt := worktree(t)
	ro := t.TempDir()
	if err := os.WriteFile(filepath.Join(ro, "cached"), []byte("warm\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	box, err := sandbox.New(wt, sandbox.Options{ReadOnly: []string{ro}})
	if err != nil {
		t.Fatal(err)
	}
	if box.Isolation() != sandbox.IsolationNamespaces {
		t.Fatalf("isolation %q (%s)", box.Isolation(), box.Why())
	}
	script := `echo "uid=$(id -u) gid=$(id -g) groups=$(id -G)"
grep NoNewPrivs /proc/self/status
n=0; for p in /proc/[0-9]*; do n=$((n+1)); done; echo "procs=$n"
echo "pid1=$(tr '\0' ' ' < /proc/1/cmdline)"
echo "pwd=$(pwd)"
echo "home=$HOME tmpdir=$TMPDIR marker=${CTXLAB_SANDBOX_INIT:-unset}"
touch "$HOME/a" "$TMPDIR/b" && echo "private writable"
cat "$1/cached"
touch "$1/new" 2>/dev/null || echo "read-only refused"
exit 7`
	out, err := run(t, box, context.Background(), []string{"sh", "-c", script, "sh", ro},
		[]string{"PATH=/usr/bin:/bin", "HOME=/root", "CTXLAB_SANDBOX_INIT=1"})
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 7 {
		t.Fatalf("exit = %v, want status 7\n%s", err, out)
	}
	id := fmt.Sprintf("uid=%d gid=%d groups=%d\n", sandbox.DefaultUID, sandbox.DefaultUID, sandbox.DefaultUID)
	want := []string{id, "NoNewPrivs:\t1", "procs=2\n", "pid1=ctxlab-sandbox-init ", "pwd=" + wt + "\n",
		"home=" + filepath.Join(box.TempDir(), "home") + " tmpdir=" + filepath.Join(box.TempDir(), "tmp") + " marker=unset",
		"private writable", "warm\n", "read-only refused"}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("missing %q in:\n%s", w, out)
		}
	}
	private := box.TempDir()
	if err := box.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(private); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("private temp folder %s left after Close: %v", private, err)
	}
}

// Cancelling the context (the run's timeout) kills every process of the namespace, setsid daemons included, and
// Wait returns at once.
func TestCancelKillsNamespace(t *testing.T) {
	requireNamespaces(t)
	box, err := sandbox.New(worktree(t), sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer box.Close()
	tok := token()
	t.Cleanup(func() { killAllWith(tok) })
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	out, err := run(t, box, ctx, []string{"sh", "-c", `setsid sleep "$1" </dev/null >/dev/null 2>&1 & sleep "$1"`, "sh", tok},
		[]string{"PATH=/usr/bin:/bin"})
	if err == nil {
		t.Fatalf("the command was not killed:\n%s", out)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("Wait returned after %s", took)
	}
	if left := waitGone(tok, time.Second); len(left) > 0 {
		t.Fatalf("still running after cancel: %v", left)
	}
}

// Without isolation (not root, no namespaces, or disabled) a Box runs the command as before and says so.
func TestDisabledRunsPlain(t *testing.T) {
	wt := worktree(t)
	box, err := sandbox.New(wt, sandbox.Options{Disable: true})
	if err != nil {
		t.Fatal(err)
	}
	defer box.Close()
	if box.Isolation() != sandbox.IsolationNone || box.Why() == "" {
		t.Fatalf("isolation %q, why %q", box.Isolation(), box.Why())
	}
	out, err := run(t, box, context.Background(), []string{"sh", "-c", `id -u; pwd; echo "home=$HOME"`},
		[]string{"PATH=/usr/bin:/bin", "HOME=/nowhere"})
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if want := fmt.Sprintf("%d\n%s\nhome=/nowhere\n", os.Geteuid(), wt); out != want {
		t.Fatalf("output %q, want %q", out, want)
	}
}

// Private temp folders of dead graders are removed; those of live ones are kept.
func TestCleanStale(t *testing.T) {
	root := t.TempDir()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(root, fmt.Sprintf("%s%d-x", sandbox.TempPrefix, dead.Process.Pid))
	live := filepath.Join(root, fmt.Sprintf("%s%d-y", sandbox.TempPrefix, os.Getppid()))
	other := filepath.Join(root, "unrelated")
	for _, d := range []string{stale, live, other} {
		if err := os.MkdirAll(filepath.Join(d, "home"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	n, err := sandbox.CleanStale(root)
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("removed %d, want 1", n)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale folder kept: %v", err)
	}
	for _, d := range []string{live, other} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s removed: %v", d, err)
		}
	}
}

// The folders above a worktree do not matter, since the box makes its own: a worktree under a folder only root
// may enter works. A read-only folder the uid may not enter itself is refused by New, rather than failing inside
// the namespace.
func TestWorktreeBehindClosedFolder(t *testing.T) {
	requireNamespaces(t)
	parent := filepath.Join(t.TempDir(), "private")
	closed := filepath.Join(t.TempDir(), "closed")
	for _, d := range []string{parent, closed} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	wt := filepath.Join(parent, "repo")
	if err := os.Mkdir(wt, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := sandbox.New(wt, sandbox.Options{ReadOnly: []string{closed}}); err == nil ||
		!strings.Contains(err.Error(), "cannot enter") {
		t.Fatalf("err = %v, want cannot enter", err)
	}
	box, err := sandbox.New(wt, sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer box.Close()
	out, err := run(t, box, context.Background(), []string{"sh", "-c", `echo x > f && echo "wrote in $(pwd)"; ls -A ..`},
		[]string{"PATH=/usr/bin:/bin"})
	if err != nil || out != "wrote in "+wt+"\nrepo\n" {
		t.Fatalf("%v %q, want the worktree written and alone in its folder", err, out)
	}
}

// The start overhead of isolation: `true` run plainly and in a Box.
func BenchmarkTrue(b *testing.B) {
	for _, disable := range []bool{true, false} {
		b.Run(map[bool]string{true: "plain", false: "namespaces"}[disable], func(b *testing.B) {
			if !disable {
				if ok, why := sandbox.Available(); !ok {
					b.Skip(why)
				}
			}
			box, err := sandbox.New(b.TempDir(), sandbox.Options{Disable: disable})
			if err != nil {
				b.Fatal(err)
			}
			defer box.Close()
			for b.Loop() {
				cmd, err := box.Command(context.Background(), []string{"true"}, []string{"PATH=/usr/bin:/bin"}, "")
				if err != nil {
					b.Fatal(err)
				}
				if err := cmd.Run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// An Overlay folder (a build cache) is read warm and written by the Box's commands, which share what they wrote
// with each other, while the real folder and every other Box see none of it; a Shared folder (the graded module
// cache) is made, given to the uid without a walk, and keeps what the commands write; a ReadOnlyView shows a folder
// the uid could not walk to, read-only.
func TestOverlaySharedAndViews(t *testing.T) {
	requireNamespaces(t)
	cache := filepath.Join(t.TempDir(), "cache")
	if err := os.MkdirAll(filepath.Join(cache, "00"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cache, "00", "warm"), []byte("warm entry\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	shared := filepath.Join(t.TempDir(), "modcache", "inner")
	hidden := filepath.Join(t.TempDir(), "private")
	proxy := filepath.Join(hidden, "proxy")
	if err := os.MkdirAll(proxy, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(hidden, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(proxy, "list"), []byte("v1.0.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	newBox := func() *sandbox.Box {
		box, err := sandbox.New(worktree(t), sandbox.Options{Overlay: []string{cache}, Shared: []string{shared}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { box.Close() })
		return box
	}
	box := newBox()
	view, err := box.ReadOnlyView(proxy)
	if err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=/usr/bin:/bin"}
	out, err := run(t, box, context.Background(), []string{"sh", "-c", `cat "$1/00/warm" && echo new > "$1/00/added" &&
echo top > "$1/top" && echo mod > "$2/m" && cat "$3/list" && { touch "$3/x" 2>/dev/null || echo view read-only; }`,
		"sh", cache, shared, view}, env)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, w := range []string{"warm entry\n", "v1.0.0\n", "view read-only\n"} {
		if !strings.Contains(out, w) {
			t.Errorf("missing %q in:\n%s", w, out)
		}
	}
	if fi, err := os.Stat(shared); err != nil || fi.Sys().(*syscall.Stat_t).Uid != sandbox.DefaultUID {
		t.Errorf("shared folder %v, want it made and given to uid %d", err, sandbox.DefaultUID)
	}
	// The box's next command sees what the first wrote; the real folder does not.
	if out, err := run(t, box, context.Background(), []string{"cat", filepath.Join(cache, "00", "added"),
		filepath.Join(cache, "top")}, env); err != nil || out != "new\ntop\n" {
		t.Errorf("second command of the box: %v %q", err, out)
	}
	for _, f := range []string{"00/added", "top"} {
		if _, err := os.Stat(filepath.Join(cache, f)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the overlay's write %s reached the real folder: %v", f, err)
		}
	}
	// The grader finds what the commands wrote in the private layer.
	if b, err := os.ReadFile(filepath.Join(box.OverlayUpper(cache), "00", "added")); err != nil || string(b) != "new\n" {
		t.Errorf("the private layer holds %q, %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(shared, "m")); err != nil || string(b) != "mod\n" {
		t.Errorf("shared folder kept %q, %v", b, err)
	}
	other := newBox()
	if out, err := run(t, other, context.Background(), []string{"sh", "-c", `ls "$1/00"; cat "$2/m"`, "sh", cache, shared},
		env); err != nil || out != "warm\nmod\n" {
		t.Errorf("another box: %v %q, want only the real entry and the shared write", err, out)
	}
}

// Where the private temp folder lies on a file system that cannot hold an overlay's upper layer (an overlayfs, as
// /tmp is in a container), each command gets its layer on a tmpfs of its own: the folder still reads warm and takes
// writes, which reach neither the real folder nor the Box's next command.
func TestOverlayOnOverlayfsTempRoot(t *testing.T) {
	requireNamespaces(t)
	base := t.TempDir()
	for _, d := range []string{"lower", "upper", "work", "merged"} {
		if err := os.Mkdir(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	merged := filepath.Join(base, "merged")
	opts := "lowerdir=" + filepath.Join(base, "lower") + ",upperdir=" + filepath.Join(base, "upper") + ",workdir=" +
		filepath.Join(base, "work")
	if err := syscall.Mount("overlay", merged, "overlay", 0, opts); err != nil {
		t.Fatalf("mounting an overlayfs to stand for a container's /tmp: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(merged, syscall.MNT_DETACH) })
	cache := filepath.Join(t.TempDir(), "cache")
	filetree.Write(t, cache, map[string]string{"00/warm": "warm entry\n"})
	box, err := sandbox.New(worktree(t), sandbox.Options{Overlay: []string{cache}, TempRoot: merged})
	if err != nil {
		t.Fatal(err)
	}
	defer box.Close()
	env := []string{"PATH=/usr/bin:/bin"}
	out, err := run(t, box, context.Background(), []string{"sh", "-c", `cat "$1/00/warm" && echo new > "$1/00/added" &&
cat "$1/00/added"`, "sh", cache}, env)
	if err != nil || out != "warm entry\nnew\n" {
		t.Fatalf("%v %q", err, out)
	}
	if out, err := run(t, box, context.Background(), []string{"ls", filepath.Join(cache, "00")}, env); err != nil || out != "warm\n" {
		t.Errorf("the next command: %v %q, want only the real entry", err, out)
	}
	if _, err := os.Stat(filepath.Join(cache, "00", "added")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the write reached the real folder: %v", err)
	}
}
