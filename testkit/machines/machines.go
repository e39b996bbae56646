// Package machines runs processes as if each were on a machine of its own, for the tests of a deployment whose
// workers share only the Temporal server and the object store with the starter: each process gets its own mount
// namespace (unshare --mount) in which a private, empty tmpfs covers its run folders and /tmp, and its own UTS
// namespace with its own host name, so no file one machine writes there is seen by another, and the Temporal
// identities of its workers name it. What a deployment does share (the binaries, a spec file, a file:// store's
// folder standing for a network file system) is kept visible by bind mounts made before the private folders cover
// it. The network is the host's: the Temporal server, the S3 server and the model endpoints are reached on
// loopback ports, as machines reach them over a network.
//
// It needs root and util-linux's unshare; Require skips a test without them, or fails it when
// CTXLAB_REQUIRE_MACHINES=1 (scripts/test sets it).
package machines

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// RequireEnv makes Require fail instead of skip when the machines cannot be made.
const RequireEnv = "CTXLAB_REQUIRE_MACHINES"

// Require skips (or with RequireEnv=1 fails) a test that cannot make machines here.
func Require(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("unshare"); err == nil && os.Geteuid() == 0 {
		return
	}
	msg := "separate machines need root and unshare (util-linux) for their mount namespaces"
	if os.Getenv(RequireEnv) == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg + "; " + RequireEnv + "=1 makes this a failure")
}

// Machine is one machine of a deployment.
type Machine struct {
	// Name is its host name (and the name its processes are logged by).
	Name string
	// Private folders start empty on this machine and are its own (its run folders); /tmp always is.
	Private []string
	// Shared paths (files or folders) are the host's, seen at the same path, although they may lie inside a private
	// folder: what the machine is given (the binaries, the spec) or shares on purpose (a file:// store's folder).
	Shared []string
}

// script makes the machine's mounts, names it and becomes the command. Its arguments: the host name, then the shared
// paths, "--", the private folders, "--", the command.
const script = `set -e
host=$1; shift
shared=()
while [ "$1" != -- ]; do shared+=("$1"); shift; done; shift
private=()
while [ "$1" != -- ]; do private+=("$1"); shift; done; shift
# The stage is a tmpfs of this mount namespace only: a machine killed while it starts leaves nothing on the host.
stage=/run/ctxlab-machines
mkdir -p "$stage"
mount -t tmpfs -o mode=0700 ctxlab-stage "$stage"
for i in "${!shared[@]}"; do
  if [ -d "${shared[$i]}" ]; then mkdir "$stage/$i"; else touch "$stage/$i"; fi
  mount --bind "${shared[$i]}" "$stage/$i"
done
for p in "${private[@]}"; do
  mkdir -p "$p"
  mount -t tmpfs -o mode=0755 ctxlab-machine "$p"
done
for i in "${!shared[@]}"; do
  p=${shared[$i]}
  if [ -d "$stage/$i" ]; then mkdir -p "$p"; else mkdir -p "$(dirname "$p")"; touch "$p"; fi
  mount --bind "$stage/$i" "$p"
  umount "$stage/$i"
done
umount "$stage"
hostname "$host"
exec "$@"`

// Command returns the command that runs bin with args on machine m (exec.CommandContext's, so ctx kills it). Its
// process is the program itself (unshare and the script exec it), so its pid is the program's.
func Command(ctx context.Context, m Machine, bin string, args ...string) *exec.Cmd {
	private := append([]string{os.TempDir()}, m.Private...)
	a := []string{"--mount", "--uts", "--propagation", "private", "bash", "-c", script, "bash", m.Name}
	a = append(append(a, m.Shared...), "--")
	a = append(append(a, private...), "--")
	a = append(append(a, bin), args...)
	return exec.CommandContext(ctx, "unshare", a...)
}

// Path is the path p as the process pid sees it on its machine (through /proc/PID/root): how a test outside every
// machine reads what one wrote.
func Path(pid int, p string) string {
	return filepath.Join(fmt.Sprintf("/proc/%d/root", pid), p)
}
