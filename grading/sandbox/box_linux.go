package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Box runs the commands of one graded worktree. Make it with New and Close it when the run is over.
type Box struct {
	worktree  string
	private   string // private temp folder: home/ and tmp/ inside; "" until made
	isolation string
	why       string // why isolation is "none"
	uid, gid  int
	readOnly  []string
	writable  []string
	shared    []string
	overlay   []string
	views     []view // read-only folders shown at another path (ReadOnlyView)
	home      string // the grader's home, a private tmpfs in the box ("" when it is /)
	tmpfsSize string
	network   bool // share the grader's network

	mu    sync.Mutex
	specs []*os.File // command files handed to the inits, closed by Close
}

// view is a host folder, Source, shown read-only at Path.
type view struct{ Path, Source string }

var (
	probeOnce sync.Once
	probeOK   bool
	probeWhy  string
)

// Available says whether commands can be isolated here, and why not. The first call starts one sandboxed init that
// does the mounts and drops privileges (a few milliseconds); later calls reuse its answer.
func Available() (ok bool, why string) {
	probeOnce.Do(func() { probeOK, probeWhy = probe() })
	return probeOK, probeWhy
}

func probe() (bool, string) {
	if os.Geteuid() != 0 {
		return false, "not running as root"
	}
	tmp, err := os.MkdirTemp("", fmt.Sprintf("%sprobe-%d-", TempPrefix, os.Getpid()))
	if err != nil {
		return false, fmt.Sprintf("probe folder: %v", err)
	}
	defer os.RemoveAll(tmp)
	b := &Box{worktree: tmp, private: tmp, isolation: IsolationNamespaces, uid: DefaultUID, gid: DefaultUID,
		tmpfsSize: "1m"}
	mounts, err := b.plan()
	if err != nil {
		return false, fmt.Sprintf("probe: %v", err)
	}
	cmd, err := b.initCommand(context.Background(), spec{Probe: true}, mounts)
	if err != nil {
		return false, fmt.Sprintf("probe: %v", err)
	}
	defer b.Close()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return false, fmt.Sprintf("namespaces refused: %v %s", err, strings.TrimSpace(string(out)))
	}
	return true, ""
}

// New prepares a Box for worktree: with isolation, a private temp folder (HOME and TMPDIR of the commands) and the
// worktree and Writable folders chowned to the dedicated uid. Without isolation nothing is changed on disk.
func New(worktree string, o Options) (*Box, error) {
	abs, err := filepath.Abs(worktree)
	if err != nil {
		return nil, fmt.Errorf("sandbox: worktree %s: %w", worktree, err)
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("sandbox: worktree %s is not a folder: %v", abs, err)
	}
	b := &Box{worktree: abs, isolation: IsolationNone, uid: o.UID, gid: o.GID, tmpfsSize: o.TmpfsSize,
		network: o.Network}
	if b.uid <= 0 {
		b.uid = DefaultUID
	}
	if b.gid <= 0 {
		b.gid = DefaultUID
	}
	if b.tmpfsSize == "" {
		b.tmpfsSize = DefaultTmpfsSize
	}
	if o.Disable {
		b.why = "disabled by the caller"
		return b, nil
	}
	if ok, why := Available(); !ok {
		b.why = why
		return b, nil
	}
	if err := b.setFolders(o); err != nil {
		return nil, err
	}
	if err := b.makePrivate(o.TempRoot); err != nil {
		return nil, err
	}
	if err := b.prepareFolders(); err != nil {
		b.Close()
		return nil, err
	}
	b.isolation = IsolationNamespaces
	return b, nil
}

// setFolders takes o's folders as absolute paths, and the grader's home.
func (b *Box) setFolders(o Options) error {
	for _, list := range []struct {
		in  []string
		out *[]string
	}{{o.ReadOnly, &b.readOnly}, {o.Writable, &b.writable}, {o.Shared, &b.shared}, {o.Overlay, &b.overlay}} {
		var cleaned []string
		for _, p := range list.in {
			a, err := filepath.Abs(p)
			if err != nil {
				return fmt.Errorf("sandbox: folder %s: %w", p, err)
			}
			cleaned = append(cleaned, a)
		}
		*list.out = cleaned
	}
	if home, err := os.UserHomeDir(); err == nil && filepath.IsAbs(home) {
		if home, err = filepath.EvalSymlinks(home); err == nil && home != "/" {
			b.home = home
		}
	}
	return nil
}

// makePrivate creates the box's private temp folder (its home/ and tmp/) under root (default os.TempDir()),
// first removing, once per root in a process, the folders of graders killed before their Close.
func (b *Box) makePrivate(root string) error {
	if root == "" {
		root = os.TempDir()
	}
	if _, done := cleanedRoots.LoadOrStore(root, true); !done {
		_, _ = CleanStale(root)
	}
	var err error
	b.private, err = os.MkdirTemp(root, fmt.Sprintf("%s%d-", TempPrefix, os.Getpid()))
	if err != nil {
		return fmt.Errorf("sandbox: private temp folder: %w", err)
	}
	for _, d := range []string{"home", "tmp"} {
		if err := os.Mkdir(filepath.Join(b.private, d), 0o700); err != nil {
			b.Close()
			return fmt.Errorf("sandbox: private temp folder: %w", err)
		}
	}
	return nil
}

// prepareFolders gives the box's user the folders it writes (the worktree, the private folder and the Writable
// ones, the Shared ones' top), mirrors the Overlay folders' layers, and checks that the user may enter every
// read-only folder it is given. The caller closes the box when it fails.
func (b *Box) prepareFolders() error {
	for _, d := range append([]string{b.worktree, b.private}, b.writable...) {
		if err := chownTree(d, b.uid, b.gid); err != nil {
			return err
		}
	}
	for _, d := range b.shared {
		if err := ownFolder(d, b.uid, b.gid); err != nil {
			return err
		}
	}
	for i, d := range b.overlay {
		// overlayfs's mount options are a comma-separated list of paths separated by colons.
		if strings.ContainsAny(d+b.overlayLayer(i), ",:\\") {
			return fmt.Errorf("sandbox: cannot overlay %s: a path holding ',', ':' or '\\'", d)
		}
		if err := mirrorFolders(d, b.overlayLayer(i), b.uid, b.gid); err != nil {
			return err
		}
	}
	for _, d := range b.readOnly {
		if err := enterable(d, b.uid, b.gid); err != nil {
			return err
		}
	}
	if _, err := b.plan(); err != nil {
		return err
	}
	return nil
}

// overlayLayer is the folder holding the private layer of the i-th Overlay folder: upper/ (what the commands wrote)
// and work/ (overlayfs's own).
func (b *Box) overlayLayer(i int) string {
	return filepath.Join(b.private, "overlay", strconv.Itoa(i))
}

// ownFolder makes dir (and its missing parents, root's and searchable) and gives dir itself to uid:gid.
func ownFolder(dir string, uid, gid int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("sandbox: shared folder: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() {
		return fmt.Errorf("sandbox: shared folder %s is not a folder: %v", dir, err)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) == uid && int(st.Gid) == gid {
		return nil
	}
	if err := os.Lchown(dir, uid, gid); err != nil {
		return fmt.Errorf("sandbox: giving %s to uid %d: %w", dir, uid, err)
	}
	return nil
}

// mirrorFolders makes layer/upper hold every folder of src (same modes, owned by uid:gid, no files) and an empty
// layer/work: in overlayfs a folder of the upper layer lends the merged folder its owner, so the uid may create
// files in every folder of src while src's own files stay as they are.
func mirrorFolders(src, layer string, uid, gid int) error {
	upper := filepath.Join(layer, "upper")
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == src {
				return err
			}
			return nil // a folder the walk cannot read stays unmirrored: files cannot be made there
		}
		if !d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(src, p)
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		dst := filepath.Join(upper, rel)
		if err := os.MkdirAll(dst, 0o700); err != nil {
			return err
		}
		if err := os.Chmod(dst, fi.Mode().Perm()|0o700); err != nil {
			return err
		}
		return os.Lchown(dst, uid, gid)
	})
	if err != nil {
		return fmt.Errorf("sandbox: overlay layer for %s: %w", src, err)
	}
	if err := os.MkdirAll(filepath.Join(layer, "work"), 0o700); err != nil {
		return fmt.Errorf("sandbox: overlay layer for %s: %w", src, err)
	}
	return nil
}

// ReadOnlyView shows the folder src, read-only, to the Box's commands at the path it returns (in the private temp
// folder), for a folder they need to read that lies where the uid cannot walk (a module proxy folder under a
// private home). Without isolation it returns src. Call it before Command.
func (b *Box) ReadOnlyView(src string) (string, error) {
	abs, err := filepath.Abs(src)
	if err != nil {
		return "", fmt.Errorf("sandbox: view of %s: %w", src, err)
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("sandbox: view of %s: not a folder: %v", src, err)
	}
	if b.isolation != IsolationNamespaces {
		return abs, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	target := filepath.Join(b.private, "views", strconv.Itoa(len(b.views)))
	if err := os.MkdirAll(target, 0o755); err != nil {
		return "", fmt.Errorf("sandbox: view of %s: %w", src, err)
	}
	b.views = append(b.views, view{Path: target, Source: abs})
	return target, nil
}

// TempPrefix starts the name of every private temp folder; the grader's process id follows, so that folders left
// by dead graders can be told from live ones.
const TempPrefix = "ctxlab-sandbox-"

// cleanedRoots holds the temp roots CleanStale already swept in this process.
var cleanedRoots sync.Map

// CleanStale removes the private temp folders under root left by processes that no longer run (a grader killed
// before Box.Close), and returns how many it removed. New calls it once per process and root.
func CleanStale(root string) (int, error) { return RemoveDead(root, TempPrefix) }

// chownTree gives dir and everything under it (symbolic links themselves, not their targets) to uid:gid.
func chownTree(dir string, uid, gid int) error {
	err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
	if err != nil {
		return fmt.Errorf("sandbox: giving %s to uid %d: %w", dir, uid, err)
	}
	return nil
}

// Reachable says whether a Box's commands may enter dir once it is shown (Options.ReadOnly): whether its own mode
// lets others search it (the folders above it do not matter: the box makes its own). Callers use it to leave out
// an optional read-only folder rather than fail New.
func Reachable(dir string) bool { return enterable(dir, DefaultUID, DefaultUID) == nil }

// enterable checks that uid:gid may search the folder dir (or read the file dir).
func enterable(dir string, uid, gid int) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	want := fs.FileMode(0o001)
	if !fi.IsDir() {
		want = 0o004
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		switch {
		case int(st.Uid) == uid:
			want <<= 6
		case int(st.Gid) == gid:
			want <<= 3
		}
	}
	if fi.Mode().Perm()&want == 0 {
		return fmt.Errorf("sandbox: uid %d cannot enter %s (mode %v)", uid, dir, fi.Mode().Perm())
	}
	return nil
}

// Isolation is IsolationNamespaces or IsolationNone.
func (b *Box) Isolation() string { return b.isolation }

// Why says why Isolation is "none" ("" when it is not).
func (b *Box) Why() string { return b.why }

// UID is the uid the commands run as when isolated.
func (b *Box) UID() int { return b.uid }

// TempDir is the private temp folder (HOME is TempDir()/home, TMPDIR TempDir()/tmp), "" without isolation.
func (b *Box) TempDir() string { return b.private }

// Command returns a ready-to-Start command running argv (looked up on this process's PATH) with exactly env in
// dir (the worktree when empty). The caller sets Stdout and Stderr (and nothing in SysProcAttr). Its Cancel, run
// when ctx ends, kills every process of the run: the namespace's pid 1 with isolation, the process group without.
// A caller that sets its own Cancel (to note a timeout) must call the one it replaces. Call Wait (or Run) as usual;
// with isolation the exit code is the command's, 128+signal when a signal ended it, and 125 when the sandbox itself
// failed (its message is on Stderr). With isolation HOME and TMPDIR of env are replaced by the private temp folder.
func (b *Box) Command(ctx context.Context, argv, env []string, dir string) (*exec.Cmd, error) {
	if len(argv) == 0 {
		return nil, errors.New("sandbox: empty command")
	}
	prog, err := exec.LookPath(argv[0])
	if err != nil {
		return nil, fmt.Errorf("sandbox: command %s: %w", argv[0], err)
	}
	if dir == "" {
		dir = b.worktree
	}
	if b.isolation != IsolationNamespaces {
		cmd := exec.CommandContext(ctx, prog, argv[1:]...)
		cmd.Args[0] = argv[0]
		cmd.Env = env
		cmd.Dir = dir
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error { return killGroup(cmd.Process.Pid) }
		return cmd, nil
	}
	if !filepath.IsAbs(prog) {
		if prog, err = filepath.Abs(prog); err != nil {
			return nil, fmt.Errorf("sandbox: command %s: %w", argv[0], err)
		}
	}
	mounts, err := b.plan()
	if err != nil {
		return nil, err
	}
	if !shows(mounts, prog) {
		return nil, fmt.Errorf("sandbox: command %s (%s) lies in no place the box shows (see Layout; name its folder "+
			"in Options.ReadOnly)", argv[0], prog)
	}
	var cleanEnv []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if k != markerEnv && k != "HOME" && k != "TMPDIR" {
			cleanEnv = append(cleanEnv, kv)
		}
	}
	cleanEnv = append(cleanEnv, "HOME="+filepath.Join(b.private, "home"), "TMPDIR="+filepath.Join(b.private, "tmp"))
	return b.initCommand(ctx, spec{Path: prog, Argv: argv, Env: cleanEnv, Dir: dir}, mounts)
}

// initCommand is the re-execution of this program as the namespace's pid 1, reading s, which makes mounts, from
// file descriptor 3.
func (b *Box) initCommand(ctx context.Context, s spec, mounts []Mount) (*exec.Cmd, error) {
	s.UID, s.GID, s.LoopbackUp, s.Mounts = b.uid, b.gid, !b.network, mounts
	for i, p := range b.overlay {
		s.Overlays = append(s.Overlays, overlay{Path: p, Layer: b.overlayLayer(i), TmpfsSize: OverlayTmpfsSize})
	}
	f, err := specFile(s)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	b.specs = append(b.specs, f)
	b.mu.Unlock()
	cmd := exec.CommandContext(ctx, "/proc/self/exe")
	cmd.Args = []string{initName}
	cmd.Env = []string{markerEnv + "=1"}
	cmd.Dir = "/"
	cmd.ExtraFiles = []*os.File{f}
	flags := uintptr(syscall.CLONE_NEWPID | syscall.CLONE_NEWNS | syscall.CLONE_NEWIPC)
	if !b.network {
		flags |= syscall.CLONE_NEWNET
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags: flags,
		// Pdeathsig follows the OS thread that starts the init: it fires when the grader dies, and also if that
		// thread exits first, which the Go runtime does only for a goroutine that exits locked to its thread.
		Pdeathsig: syscall.SIGKILL,
		Setpgid:   true,
	}
	// Killing the namespace's pid 1 makes the kernel kill every process in it.
	cmd.Cancel = func() error { return killGroup(cmd.Process.Pid) }
	return cmd, nil
}

// specFile writes s to an unlinked temporary file, readable only through the returned descriptor.
func specFile(s spec) (*os.File, error) {
	data, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	f, err := os.CreateTemp("", "ctxlab-sandbox-spec-*")
	if err != nil {
		return nil, fmt.Errorf("sandbox: command file: %w", err)
	}
	_ = os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return nil, fmt.Errorf("sandbox: command file: %w", err)
	}
	if _, err := f.Seek(0, 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("sandbox: command file: %w", err)
	}
	return f, nil
}

// Close removes the private temp folder. Call it after the last command of the Box has ended.
func (b *Box) Close() error {
	b.mu.Lock()
	for _, f := range b.specs {
		f.Close()
	}
	b.specs = nil
	b.mu.Unlock()
	if b.private == "" || b.private == b.worktree {
		return nil
	}
	err := os.RemoveAll(b.private)
	b.private = ""
	if err != nil {
		return fmt.Errorf("sandbox: removing the private temp folder: %w", err)
	}
	return nil
}

func killGroup(pgid int) error {
	err := syscall.Kill(-pgid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// OverlayUpper is the folder holding what the Box's commands wrote into the Overlay folder path (its private
// layer), "" when path is not one of the Box's Overlay folders or the Box is not isolated. Where the layer had to
// move to a tmpfs of each command's own (see Options.Overlay), it stays empty.
func (b *Box) OverlayUpper(path string) string {
	if b.isolation != IsolationNamespaces {
		return ""
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return ""
	}
	for i, p := range b.overlay {
		if p == abs {
			return filepath.Join(b.overlayLayer(i), "upper")
		}
	}
	return ""
}
