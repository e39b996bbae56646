package sandbox

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"unsafe"
)

// markerEnv, set (to "1") only in the environment of a re-executed init, makes this package's init() act as the
// namespace's pid 1. It is the init's only variable and is removed from the commands' environments.
const markerEnv = "CTXLAB_SANDBOX_INIT"

// initName is argv[0] of the re-executed init, as ps shows it.
const initName = "ctxlab-sandbox-init"

// specFD is the descriptor the init reads its spec from (the first of exec.Cmd.ExtraFiles).
const specFD = 3

// exitSandboxFailed is the init's status when the sandbox itself could not be set up, as env(1) and docker use.
const exitSandboxFailed = 125

// prSetNoNewPrivs is the prctl option the syscall package does not name.
const prSetNoNewPrivs = 38

// spec is what the init is told to do.
type spec struct {
	Probe bool     `json:"probe,omitempty"` // set up, drop privileges, exit 0
	Path  string   `json:"path,omitempty"`
	Argv  []string `json:"argv,omitempty"`
	Env   []string `json:"env,omitempty"`
	Dir   string   `json:"dir,omitempty"`
	UID   int      `json:"uid"`
	GID   int      `json:"gid"`
	// Mounts are the box's root, made in order (Box.plan).
	Mounts []Mount `json:"mounts"`
	// Overlays are mounted first, on the host's folders (in the namespace), so that Mounts can show them.
	Overlays []overlay `json:"overlays,omitempty"`
	// LoopbackUp: the init is in a new network namespace, whose lo interface starts down.
	LoopbackUp bool `json:"loopback_up,omitempty"`
}

// overlay is a folder shown with a private writable layer over its real contents; Layer holds upper/ (its folders
// made by New) and work/.
type overlay struct {
	Path      string `json:"path"`
	Layer     string `json:"layer"`
	TmpfsSize string `json:"tmpfs_size"`
}

func init() {
	if os.Getenv(markerEnv) != "1" || os.Getpid() != 1 {
		return
	}
	f := os.NewFile(specFD, "sandbox-spec")
	if f == nil {
		return
	}
	var s spec
	err := json.NewDecoder(f).Decode(&s)
	f.Close()
	if err != nil {
		fmt.Fprintf(os.Stderr, "sandbox init: reading the command: %v\n", err)
		os.Exit(exitSandboxFailed)
	}
	os.Exit(runInit(s))
}

// runInit is the namespace's pid 1: it sets up the mounts, starts the command as the dedicated uid, reaps every
// process that ends up as its child, and returns the command's status. Returning makes the kernel kill whatever
// else still runs in the namespace.
func runInit(s spec) int {
	if err := setupMounts(s); err != nil {
		fmt.Fprintf(os.Stderr, "sandbox init: %v\n", err)
		return exitSandboxFailed
	}
	if s.LoopbackUp {
		if err := loopbackUp(); err != nil {
			fmt.Fprintf(os.Stderr, "sandbox init: %v\n", err)
			return exitSandboxFailed
		}
	}
	if s.Probe {
		if err := dropPrivileges(s.UID, s.GID); err != nil {
			fmt.Fprintf(os.Stderr, "sandbox init: %v\n", err)
			return exitSandboxFailed
		}
		return 0
	}
	// PR_SET_NO_NEW_PRIVS is per thread and inherited across fork: set it on the thread that forks the command.
	runtime.LockOSThread()
	if _, _, e := syscall.RawSyscall6(syscall.SYS_PRCTL, prSetNoNewPrivs, 1, 0, 0, 0, 0); e != 0 {
		fmt.Fprintf(os.Stderr, "sandbox init: no_new_privs: %v\n", e)
		return exitSandboxFailed
	}
	cmd := exec.Command(s.Path)
	cmd.Args = s.Argv
	cmd.Env = s.Env
	cmd.Dir = s.Dir
	cmd.Stdout = os.Stdout
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: uint32(s.UID), Gid: uint32(s.GID), Groups: []uint32{}},
		Pdeathsig:  syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "sandbox init: starting %s in %s as uid %d: %v\n", s.Path, s.Dir, s.UID, err)
		return exitSandboxFailed
	}
	child := cmd.Process.Pid
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "sandbox init: wait: %v\n", err)
			return exitSandboxFailed
		}
		if pid != child {
			continue // an orphan reparented to pid 1
		}
		switch {
		case ws.Exited():
			return ws.ExitStatus()
		case ws.Signaled():
			return 128 + int(ws.Signal())
		}
	}
}

// setupMounts makes the mounts private to the namespace, mounts the overlays on the host's folders, and builds the
// box's root from s.Mounts (buildRoot).
func setupMounts(s spec) error {
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making mounts private: %w", err)
	}
	for _, o := range s.Overlays {
		if err := mountOverlay(o, s.UID, s.GID); err != nil {
			return err
		}
	}
	return buildRoot(s.Mounts)
}

// mountOverlay mounts o.Path as an overlay of itself (read-only underneath) and the private layer in o.Layer. Where
// the layer's file system cannot be an upper layer (overlayfs itself, in a container), the layer moves to a tmpfs
// private to this namespace, its folders made again: the commands of one run then no longer share what they wrote.
func mountOverlay(o overlay, uid, gid int) error {
	opts := func() string {
		return "lowerdir=" + o.Path + ",upperdir=" + filepath.Join(o.Layer, "upper") + ",workdir=" + filepath.Join(o.Layer, "work")
	}
	flags := uintptr(syscall.MS_NOSUID | syscall.MS_NODEV)
	first := syscall.Mount("overlay", o.Path, "overlay", flags, opts())
	if first == nil {
		return nil
	}
	if err := syscall.Mount("tmpfs", o.Layer, "tmpfs", flags, "mode=0700,size="+o.TmpfsSize); err != nil {
		return fmt.Errorf("overlay of %s: %v; a tmpfs for its layer: %w", o.Path, first, err)
	}
	if err := mirrorFolders(o.Path, o.Layer, uid, gid); err != nil {
		return err
	}
	if err := syscall.Mount("overlay", o.Path, "overlay", flags, opts()); err != nil {
		return fmt.Errorf("overlay of %s: %v; on a tmpfs: %w", o.Path, first, err)
	}
	return nil
}

// loopbackUp sets the IFF_UP flag of the namespace's lo interface (SIOCGIFFLAGS, SIOCSIFFLAGS), as `ip link set lo
// up` does, so that tests can serve and connect on 127.0.0.1.
func loopbackUp() error {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("loopback: socket: %w", err)
	}
	defer syscall.Close(fd)
	var req struct {
		name  [syscall.IFNAMSIZ]byte
		flags uint16
		_     [22]byte // the rest of struct ifreq's union
	}
	copy(req.name[:], "lo")
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.SIOCGIFFLAGS, uintptr(unsafe.Pointer(&req))); e != 0 {
		return fmt.Errorf("loopback: reading flags: %w", e)
	}
	req.flags |= syscall.IFF_UP
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.SIOCSIFFLAGS, uintptr(unsafe.Pointer(&req))); e != 0 {
		return fmt.Errorf("loopback: setting it up: %w", e)
	}
	return nil
}

// dropPrivileges makes every thread of this process uid:gid with no supplementary groups.
func dropPrivileges(uid, gid int) error {
	if err := syscall.Setgroups(nil); err != nil {
		return fmt.Errorf("setgroups: %w", err)
	}
	if err := syscall.Setresgid(gid, gid, gid); err != nil {
		return fmt.Errorf("setresgid %d: %w", gid, err)
	}
	if err := syscall.Setresuid(uid, uid, uid); err != nil {
		return fmt.Errorf("setresuid %d: %w", uid, err)
	}
	return nil
}

// NonDumpable marks this process non-dumpable (PR_SET_DUMPABLE 0): processes of the same uid can then neither read
// its /proc/PID/environ and memory nor ptrace it, and it leaves no core dump. Programs that exec it again get a
// dumpable process; the flag is per process.
func NonDumpable() error {
	if _, _, e := syscall.RawSyscall6(syscall.SYS_PRCTL, syscall.PR_SET_DUMPABLE, 0, 0, 0, 0, 0); e != 0 {
		return fmt.Errorf("sandbox: prctl(PR_SET_DUMPABLE, 0): %w", e)
	}
	return nil
}
