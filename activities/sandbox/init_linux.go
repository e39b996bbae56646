package sandbox

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
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

// Linux constants the syscall package does not name.
const (
	prSetNoNewPrivs = 38
	oPath           = 0x200000
)

// spec is what the init is told to do.
type spec struct {
	Probe bool     `json:"probe,omitempty"` // set up, drop privileges, exit 0
	Path  string   `json:"path,omitempty"`
	Argv  []string `json:"argv,omitempty"`
	Env   []string `json:"env,omitempty"`
	Dir   string   `json:"dir,omitempty"`
	UID   int      `json:"uid"`
	GID   int      `json:"gid"`
	Hide  []string `json:"hide,omitempty"`
	Binds []bind   `json:"binds,omitempty"`
	// Overlays are mounted first, at their own paths, so that Binds can bring them back under hidden folders.
	Overlays  []overlay `json:"overlays,omitempty"`
	TmpfsSize string    `json:"tmpfs_size,omitempty"`
	// LoopbackUp: the init is in a new network namespace, whose lo interface starts down.
	LoopbackUp bool `json:"loopback_up,omitempty"`
}

type bind struct {
	Path     string `json:"path"`
	Source   string `json:"source,omitempty"` // the folder shown at Path; Path itself when empty
	ReadOnly bool   `json:"read_only,omitempty"`
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

// setupMounts makes the mounts private to the namespace, covers the hidden folders with a tmpfs, binds the run's
// folders back at their own paths, and mounts a /proc of the new pid namespace over the old one.
func setupMounts(s spec) error {
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making mounts private: %w", err)
	}
	for _, o := range s.Overlays {
		if err := mountOverlay(o, s.UID, s.GID); err != nil {
			return err
		}
	}
	// Hold the bind sources open: the tmpfs mounts below may cover them.
	fds := make([]int, len(s.Binds))
	for i, b := range s.Binds {
		src := b.Source
		if src == "" {
			src = b.Path
		}
		fd, err := syscall.Open(src, oPath|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("opening %s: %w", src, err)
		}
		fds[i] = fd
		defer syscall.Close(fd)
	}
	hide := slices.Clone(s.Hide)
	slices.Sort(hide) // parents before children
	for _, h := range hide {
		fi, err := os.Stat(h)
		if err != nil || !fi.IsDir() {
			continue // nothing there to hide
		}
		mode := "0755"
		if fi.Mode()&os.ModeSticky != 0 {
			mode = "1777"
		}
		opts := "mode=" + mode + ",size=" + s.TmpfsSize
		if err := syscall.Mount("tmpfs", h, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, opts); err != nil {
			return fmt.Errorf("hiding %s: %w", h, err)
		}
	}
	order := make([]int, len(s.Binds))
	for i := range order {
		order[i] = i
	}
	// Shorter paths first, so a folder bound inside another bound folder stays visible.
	slices.SortStableFunc(order, func(a, b int) int { return len(s.Binds[a].Path) - len(s.Binds[b].Path) })
	for _, i := range order {
		b := s.Binds[i]
		if err := os.MkdirAll(b.Path, 0o755); err != nil {
			return fmt.Errorf("bind target %s: %w", b.Path, err)
		}
		src := "/proc/self/fd/" + strconv.Itoa(fds[i])
		if err := syscall.Mount(src, b.Path, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
			return fmt.Errorf("binding %s: %w", b.Path, err)
		}
		if b.ReadOnly {
			flags := uintptr(syscall.MS_BIND | syscall.MS_REMOUNT | syscall.MS_RDONLY | syscall.MS_NOSUID | syscall.MS_NODEV)
			if err := syscall.Mount("", b.Path, "", flags, ""); err != nil {
				return fmt.Errorf("making %s read-only: %w", b.Path, err)
			}
		}
	}
	if err := syscall.Mount("proc", "/proc", "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mounting /proc: %w", err)
	}
	return nil
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
