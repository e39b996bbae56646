package sandbox

import (
	"fmt"
	"path/filepath"
	"strings"
)

// How says what a box's commands get at a place of their file system.
type How string

const (
	// HostReadOnly is the host's file or folder at the same path, read-only (and so are the mounts below it), with
	// no set-uid programs or device files. A host path that is a symbolic link is shown as the same link when what
	// it leads to is shown, else as what it leads to.
	HostReadOnly How = "the host's, read-only"
	// HostWritable is the host's folder at the same path, writable by the uid (it owns it).
	HostWritable How = "the host's, writable"
	// HostOverlay is the host's folder, read-only underneath a private writable layer (overlayfs).
	HostOverlay How = "the host's under a private writable layer"
	// Tmpfs is an empty, size-capped tmpfs of the box's own.
	Tmpfs How = "private tmpfs"
	// Written is a file the sandbox writes for the box.
	Written How = "written by the sandbox"
	// Devices is a tmpfs holding only harmless devices of the host, its own pseudo-terminals and links into
	// /proc/self.
	Devices How = "minimal devices"
	// Proc is a proc file system of the box's pid namespace.
	Proc How = "the box's own"
	// HostLink is a symbolic link copied from the host: on the way to a shown folder (a TMPDIR that is a link), or
	// a place of Layout that is a link to a shown place (/bin on a merged-/usr system).
	HostLink How = "the host's link"
)

// A Place is a part of the file system a box's commands see.
type Place struct {
	// Path is where the commands see it: an absolute path (a glob pattern for the host's places), or, for the
	// run's own places, what it is (their paths are the caller's).
	Path string
	How  How
	// Why the commands need it.
	Why  string
	mode string   // of a Tmpfs, in octal
	run  runPlace // which of the run's places, for those
}

// runPlace names the places whose paths a Box's caller gives.
type runPlace int

const (
	notRun runPlace = iota
	runWorktree
	runPrivate
	runGraderHome
	runReadOnly
	runWritable
	runOverlay
	runViews
)

// Layout is the whole file system of a box's commands: the root is an empty read-only tmpfs, and these places are
// all that is in it (with the folders on the way to them, empty). Missing host places are left out. docs/grading.md's
// isolation section is LayoutTable's output.
var Layout = []Place{
	{Path: "/usr", How: HostReadOnly, Why: "the system's programs, libraries, interpreters and compilers (Debian's python3 and pytest, gcc, a Go under /usr/local)"},
	{Path: "/bin", How: HostReadOnly, Why: "links into /usr on a merged-/usr system (copied as links), folders elsewhere"},
	{Path: "/sbin", How: HostReadOnly, Why: "as /bin"},
	{Path: "/lib", How: HostReadOnly, Why: "as /bin"},
	{Path: "/lib32", How: HostReadOnly, Why: "as /bin"},
	{Path: "/lib64", How: HostReadOnly, Why: "as /bin (the dynamic linker)"},
	{Path: "/libx32", How: HostReadOnly, Why: "as /bin"},
	{Path: "/etc/ld.so.cache", How: HostReadOnly, Why: "the dynamic linker's cache"},
	{Path: "/etc/ld.so.conf", How: HostReadOnly, Why: "the dynamic linker's configuration"},
	{Path: "/etc/ld.so.conf.d", How: HostReadOnly, Why: "the dynamic linker's configuration"},
	{Path: "/etc/alternatives", How: HostReadOnly, Why: "Debian's alternatives, through which links of /usr/bin lead (cc, awk)"},
	{Path: "/etc/ssl", How: HostReadOnly, Why: "certificates and OpenSSL's configuration (the module download over HTTPS, Python's ssl); the private keys' folder stays closed to the uid"},
	{Path: "/etc/python3*", How: HostReadOnly, Why: "Debian's Python configuration (the sitecustomize.py that /usr/lib/python3.X links to)"},
	{Path: "/etc/locale.alias", How: HostReadOnly, Why: "locale names (Python's locale module)"},
	{Path: "/etc/resolv.conf", How: HostReadOnly, Why: "name resolution, for the module download's box, which shares the network"},
	{Path: "/etc/hosts", How: HostReadOnly, Why: "as resolv.conf"},
	{Path: "/etc/nsswitch.conf", How: HostReadOnly, Why: "as resolv.conf"},
	{Path: "/etc/host.conf", How: HostReadOnly, Why: "as resolv.conf"},
	{Path: "/etc/gai.conf", How: HostReadOnly, Why: "as resolv.conf"},
	{Path: "/etc/services", How: HostReadOnly, Why: "port names (Python's socket.getservbyname, Go's net.LookupPort)"},
	{Path: "/etc/protocols", How: HostReadOnly, Why: "protocol names"},
	{Path: "/etc/localtime", How: HostReadOnly, Why: "the local time zone"},
	{Path: "/etc/timezone", How: HostReadOnly, Why: "the local time zone's name"},
	{Path: "/etc/os-release", How: HostReadOnly, Why: "the system's name and version (platform checks)"},
	{Path: "/etc/mtab", How: HostReadOnly, Why: "a link to /proc/mounts"},
	{Path: "/etc/passwd", How: Written, Why: "root, the uid as `ctxlab` (its home: HOME) and nobody: no account of the host"},
	{Path: "/etc/group", How: Written, Why: "root, the uid's group `ctxlab` and nogroup"},
	{Path: "/tmp", How: Tmpfs, mode: "1777", Why: "anyone's temporary files, gone with the run"},
	{Path: "/var/tmp", How: Tmpfs, mode: "1777", Why: "as /tmp"},
	{Path: "/run", How: Tmpfs, mode: "0755", Why: "empty: no socket, lock or pid file of the host's services (D-Bus, PostgreSQL, Docker, a resolver)"},
	{Path: "/dev", How: Devices, Why: "null, zero, full, random, urandom, tty; pseudo-terminals of its own (pts, ptmx); fd, stdin, stdout, stderr"},
	{Path: "/dev/shm", How: Tmpfs, mode: "1777", Why: "POSIX shared memory (Python's multiprocessing)"},
	{Path: "/proc", How: Proc, Why: "only the box's processes: no ancestor's environment"},
	{Path: "the worktree", How: HostWritable, run: runWorktree, Why: "the grade's repository, owned by the uid; nothing else of the folder that holds it (other grades' worktrees)"},
	{Path: "the private temp folder", How: HostWritable, run: runPrivate, Why: "HOME (home/) and TMPDIR (tmp/) of the commands, the builds' output; removed by Close"},
	{Path: "the grader's home", How: Tmpfs, mode: "0755", run: runGraderHome, Why: "empty but for the folders below bound into it (a pyenv, the build cache)"},
	{Path: "Options.ReadOnly", How: HostReadOnly, run: runReadOnly, Why: "what the caller's run needs: the Go toolchain, the module cache, the test binaries, the Python interpreter's folder or environment"},
	{Path: "Options.Writable, Options.Shared", How: HostWritable, run: runWritable, Why: "a cache of the graded runs' own (the graded module cache, written by the download's box)"},
	{Path: "Options.Overlay", How: HostOverlay, run: runOverlay, Why: "the grader's build cache: read warm, written privately"},
	{Path: "Box.ReadOnlyView", How: HostReadOnly, run: runViews, Why: "a folder shown at a path in the private temp folder (a module proxy's folder)"},
}

// LayoutTable is Layout as a Markdown table, for docs/grading.md.
func LayoutTable() string {
	var b strings.Builder
	b.WriteString("| place | what the commands get | why |\n|---|---|---|\n")
	for _, p := range Layout {
		path := "`" + p.Path + "`"
		if p.run != notRun {
			path = p.Path
		}
		how := string(p.How)
		if p.How == Tmpfs {
			how += " (mode " + p.mode + ")"
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", path, how, p.Why)
	}
	return b.String()
}

// A Mount is one step of building a box's root: what is shown at Path. Box.Mounts lists a box's, in the order the
// init makes them.
type Mount struct {
	Path string `json:"path"` // in the box
	How  How    `json:"how"`
	// Source is the host's path shown at Path (links resolved), or the target of a HostLink.
	Source string `json:"source,omitempty"`
	Mode   string `json:"mode,omitempty"` // of a Tmpfs
	Size   string `json:"size,omitempty"` // of a Tmpfs
	Text   string `json:"text,omitempty"` // of a Written file
}

// UserName is the name /etc/passwd gives the uid in a box.
const UserName = "ctxlab"

// HostShows says whether every box shows the host path p (an absolute, cleaned path) read-only: whether it lies
// in one of Layout's host places. A caller uses it to know which folders of a command it must name itself.
func HostShows(p string) bool {
	for _, pl := range Layout {
		if pl.run == notRun && pl.How == HostReadOnly && under(p, pl.Path) {
			return true
		}
	}
	return false
}

// under says whether p is the place pattern or lies below a path the pattern matches.
func under(p, pattern string) bool {
	for a := p; ; a = filepath.Dir(a) {
		if ok, _ := filepath.Match(pattern, a); ok {
			return true
		}
		if a == "/" || a == "." {
			return false
		}
	}
}
