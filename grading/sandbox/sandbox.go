// Package sandbox runs graded code (a repository's tests, with a model's patch applied) so that it sees of the
// machine only what a test run needs, cannot read the grader's secrets, cannot write outside its worktree and a
// private temp folder, and cannot outlive its run.
//
// When the process is root and Linux namespaces work, a Box runs each command as an unprivileged dedicated uid/gid
// (DefaultUID; the worktree and the private temp folder are chowned to it), with no supplementary groups and
// PR_SET_NO_NEW_PRIVS, in a new pid, mount, IPC and (unless Options.Network) network namespace, on a file system
// built from an allowlist, as bubblewrap and nsjail build theirs: an empty tmpfs for a root, and in it only the
// places Layout declares (the system's programs and libraries read-only, a few files of /etc, private tmpfs
// mounts for /tmp, /var/tmp, /run and /dev/shm, minimal devices, a /proc of its own) and the run's own folders
// (the worktree, the private temp folder, and the folders the caller names). Nothing else of the host is there:
// not the folder that holds the worktree (other grades' worktrees beside it), not /run's sockets, not a run folder
// or a dataset anywhere on the disk. Also:
//   - the fresh /proc shows only the namespace's processes, so no ancestor's /proc/PID/environ can be read;
//   - HOME and TMPDIR point into the private temp folder;
//   - the network namespace has only a loopback interface, so nothing on the grader's machine or beyond is
//     reachable (abstract unix sockets belong to the network namespace; sockets bound to a path are shown only
//     where a shown folder holds them, and /run is a private tmpfs);
//   - every process of the run dies with the namespace: when the command ends (its pid 1 exits and the kernel kills
//     the rest, setsid daemons included), when the run is cancelled or times out (the command's Cancel kills pid
//     1), and when the grader dies, even by SIGKILL (pid 1 has Pdeathsig SIGKILL).
//
// The namespace's pid 1 is this same program re-executed (/proc/self/exe) with a marker variable: the package's
// init function sees the marker, reads the command and the mounts to make from an inherited file (never from the
// environment, which the tests could read), builds the root as root inside the namespace, pivots into it, starts
// the command as the dedicated uid, reaps orphans, and exits with the command's status. Running the hook from
// init() rather than from main means every binary that links the package works as its own sandbox init — the
// worker, the starter, and the test binaries of the packages that grade — with no change to their mains. It is
// safe because it acts only when all three hold: the marker variable is set, the process is pid 1 of its pid
// namespace, and file descriptor 3 holds a readable command; any other process returns from init() at once, having
// read one variable. The inits of packages that run before this one run in pid 1 too; they must not have side
// effects outside the process (ctxlab's have none).
//
// Why a re-executed Go init rather than Debian's bubblewrap (bwrap) or util-linux's unshare and setpriv: those may
// be missing (minimal images, a bare machine running the demo), bwrap run by root switches to another uid only
// inside a user namespace of its own, and none of them brings up loopback, reaps with the command's status, or
// mounts a build cache's overlay; the re-exec needs nothing but the kernel, and the Pdeathsig/pid-1/zombie-reaping
// behaviour is ours to test. The root is built as bwrap builds it (a tmpfs, pivot_root, the old root detached).
//
// Where isolation is unavailable (not root, namespaces refused, or Options.Disable), a Box still runs commands, as
// before: in their own process group, killed as a whole on cancel, with the caller's environment; Isolation() then
// says "none" so that graded rows can record `grade_isolation: none`.
//
// What the sandbox does not cover: code running inside the test process (it can forge what that process reports),
// what the shown places hold (world-readable files of /usr, a socket inside a shown folder), the network when
// Options.Network shares it, the kernel itself (a kernel exploit escapes everything here), and CPU or memory use
// (no cgroup limits). The docker executor is the isolation to recommend for untrusted code.
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

// DefaultTmpfsSize caps each private tmpfs (/tmp, /var/tmp, /run, /dev/shm, the grader's home) so that a test that writes
// there instead of $TMPDIR cannot use up the machine's memory.
const DefaultTmpfsSize = "256m"

// OverlayTmpfsSize caps the tmpfs that holds an Overlay folder's private layer where the temp folder's own file
// system cannot be an overlay's upper layer (an overlayfs itself, as in a container): a build cache's additions.
const OverlayTmpfsSize = "2g"

// Options configures a Box. The zero value is usable.
type Options struct {
	// UID and GID of the graded commands (DefaultUID when 0; 0 is never used).
	UID, GID int
	// ReadOnly folders (or files) are shown read-only at their own paths (GOROOT, GOMODCACHE, a virtualenv, a
	// Python environment's folder), whatever the modes of the folders above them. They are not chowned. The grader's warm GOCACHE belongs here:
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

// CommandFunc is the shape of Box.Command, for callers that take a Box as a dependency.
type CommandFunc func(ctx context.Context, argv, env []string, dir string) (*exec.Cmd, error)
