// Package sandbox runs graded code (a repository's tests, with a model's patch applied) so that it cannot read the
// grader's secrets, write outside its worktree and a private temp folder, or outlive its run.
//
// When the process is root and Linux namespaces work, a Box runs each command as an unprivileged dedicated uid/gid
// (DefaultUID, no /etc/passwd entry needed; the worktree and the private temp folder are chowned to it), with no
// supplementary groups and PR_SET_NO_NEW_PRIVS, in a new pid, mount, IPC and (unless Options.Network) network
// namespace:
//   - a fresh /proc shows only the namespace's processes, so no ancestor's /proc/PID/environ can be read;
//   - private tmpfs mounts hide /tmp, /var/tmp, /dev/shm and the grader's home; the worktree, the private temp
//     folder and the folders the caller names are bind-mounted back at their own paths (Options.ReadOnly
//     read-only), so every other write fails on permissions (the uid owns nothing else);
//   - HOME and TMPDIR point into the private temp folder;
//   - the network namespace has only a loopback interface, so nothing on the grader's machine or beyond is reachable;
//   - every process of the run dies with the namespace: when the command ends (its pid 1 exits and the kernel kills
//     the rest, setsid daemons included), when the run is cancelled or times out (the command's Cancel kills pid
//     1), and when the grader dies, even by SIGKILL (pid 1 has Pdeathsig SIGKILL).
//
// The namespace's pid 1 is this same program re-executed (/proc/self/exe) with a marker variable: the package's
// init function sees the marker, reads the command from an inherited file (never from the environment, which the
// tests could read), does the mounts as root inside the namespace, starts the command as the dedicated uid, reaps
// orphans, and exits with the command's status. Running the hook from init() rather than from main means every
// binary that links the package works as its own sandbox init — the worker, the starter, and the test binaries of
// the packages that grade — with no change to their mains. It is safe because it acts only when all three hold:
// the marker variable is set, the process is pid 1 of its pid namespace, and file descriptor 3 holds a readable
// command; any other process returns from init() at once, having read one variable. The inits of packages that run
// before this one run in pid 1 too; they must not have side effects outside the process (ctxlab's have none).
//
// Why a re-executed Go init rather than util-linux's unshare and setpriv: those may be missing (minimal images,
// macOS developers' Linux VMs), their flags differ across versions, and they cannot bind back the folders of the
// run inside a private /tmp without a shell script in between; the re-exec needs nothing but the kernel, and the
// Pdeathsig/pid-1/zombie-reaping behaviour is ours to test.
//
// Where isolation is unavailable (not root, namespaces refused, or Options.Disable), a Box still runs commands, as
// before: in their own process group, killed as a whole on cancel, with the caller's environment; Isolation() then
// says "none" so that graded rows can record `grade_isolation: none`.
//
// What the namespaces do not cover: files that any user may read (world-readable files are readable by the
// dedicated uid), abstract unix sockets and the network when Options.Network shares it, the kernel itself (a
// kernel exploit escapes everything here), and CPU or memory use (no cgroup limits). The docker executor is the isolation to recommend for
// untrusted code.
//
// NonDumpable, called first thing by the worker's and the starter's main, makes the process's memory and
// /proc/PID/environ unreadable by other processes of the same uid.
package sandbox

import (
	"context"
	"os/exec"
)

// Isolation levels reported by Box.Isolation, as written on graded rows (grade_isolation).
const (
	IsolationNamespaces = "namespaces"
	IsolationNone       = "none"
)

// DefaultUID is the uid and gid graded commands run as; no account needs to exist for it.
const DefaultUID = 61000

// DefaultTmpfsSize caps each private tmpfs (/tmp, /var/tmp, /dev/shm, the grader's home) so that a test that writes
// there instead of $TMPDIR cannot use up the machine's memory.
const DefaultTmpfsSize = "256m"

// OverlayTmpfsSize caps the tmpfs that holds an Overlay folder's private layer where the temp folder's own file
// system cannot be an overlay's upper layer (an overlayfs itself, as in a container): a build cache's additions.
const OverlayTmpfsSize = "2g"

// Options configures a Box. The zero value is usable.
type Options struct {
	// UID and GID of the graded commands (DefaultUID when 0; 0 is never used).
	UID, GID int
	// ReadOnly folders are bind-mounted read-only at their own paths, reachable even when they lie under a hidden
	// folder (GOROOT, GOMODCACHE, a virtualenv). They are not chowned. The grader's warm GOCACHE belongs here:
	// `go test` reads it and silently skips its writes, so graded code cannot poison later grades' builds, and
	// tests still start in seconds where a private cold cache rebuilds the standard library each time.
	ReadOnly []string
	// Writable folders are bind-mounted read-write at their own paths and chowned to UID/GID by New (a build cache
	// dedicated to graded runs). Anything written there is seen by later runs that mount the same folder.
	Writable []string
	// Shared folders are bind-mounted read-write at their own paths like Writable, but only the folder itself is
	// given to UID/GID (New makes it when missing), not what is in it: a cache the box's commands fill over many
	// runs (the module cache graded downloads write), too large to walk on every run.
	Shared []string
	// Overlay folders are shown at their own paths as their real contents (read-only underneath) with a private
	// writable layer on top, kept in the private temp folder until Close and shared by the Box's commands: a build
	// cache the commands read warm and add to, while nothing they write reaches the real folder or another Box.
	// Every folder of the real one is UID's in the private layer, so new files can be made anywhere in it; files
	// already there keep their owner and mode.
	Overlay []string
	// Hide lists folders covered by a private tmpfs; default HiddenDefault plus the grader's home (unless it is /).
	Hide []string
	// TempRoot is where the private temp folder is made (default os.TempDir()).
	TempRoot string
	// TmpfsSize caps each private tmpfs (default DefaultTmpfsSize), in mount(8)'s size= syntax.
	TmpfsSize string
	// Network shares the grader's network with the commands. By default they get a network namespace of their own
	// with only a loopback interface: no service of the grader's machine (a Temporal frontend, a model proxy) and
	// no outside address is reachable, while servers the tests start on 127.0.0.1 still work.
	Network bool
	// Disable forces isolation "none" even where namespaces are available.
	Disable bool
}

// HiddenDefault are the shared writable folders every Box covers with a private tmpfs.
var HiddenDefault = []string{"/tmp", "/var/tmp", "/dev/shm"}

// CommandFunc is the shape of Box.Command, for callers that take a Box as a dependency.
type CommandFunc func(ctx context.Context, argv, env []string, dir string) (*exec.Cmd, error)
