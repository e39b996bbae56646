package sandbox_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"ctxlab/grading/sandbox"
)

// seen is one file the walker found in a box.
type seen struct {
	Path string
	Kind string // dir, file, link, other
	Link string `json:",omitempty"`
	Dev  uint64
	Ino  uint64
	Text string `json:",omitempty"` // of a small file of /etc
	Err  string `json:",omitempty"`
}

// walkBox is the walker, run in a box as the test binary: it lists every file of the box's root but below the
// folders named in SANDBOX_TEST_PRUNE (those the box shows from the host, and /proc), which it lists alone, then
// the files named in SANDBOX_TEST_VISIT (places inside those), then prints the mount points of /proc/self/mountinfo.
func walkBox() int {
	prune := map[string]bool{}
	for _, p := range strings.Split(os.Getenv("SANDBOX_TEST_PRUNE"), "\n") {
		prune[p] = true
	}
	enc := json.NewEncoder(os.Stdout)
	var walk func(p string)
	walk = func(p string) {
		s := seen{Path: p}
		fi, err := os.Lstat(p)
		if err != nil {
			s.Err = err.Error()
			enc.Encode(s)
			return
		}
		st := fi.Sys().(*syscall.Stat_t)
		s.Dev, s.Ino = st.Dev, st.Ino
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			s.Kind, s.Link = "link", must(os.Readlink(p))
		case fi.IsDir():
			s.Kind = "dir"
		case fi.Mode().IsRegular():
			s.Kind = "file"
			if strings.HasPrefix(p, "/etc/") && fi.Size() < 4096 {
				s.Text = must(os.ReadFile(p))
			}
		default:
			s.Kind = "other"
		}
		if s.Kind != "dir" || prune[p] {
			enc.Encode(s)
			return
		}
		ents, err := os.ReadDir(p)
		if err != nil {
			s.Err = err.Error()
		}
		enc.Encode(s)
		for _, e := range ents {
			walk(filepath.Join(p, e.Name()))
		}
	}
	walk("/")
	for _, p := range strings.Split(os.Getenv("SANDBOX_TEST_VISIT"), "\n") {
		if p != "" {
			prune[p] = true
			walk(p)
		}
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		fmt.Println("mountinfo:", err)
		return 1
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) > 4 {
			fmt.Println("mount " + fields[4])
		}
	}
	return 0
}

func must[T string | []byte](s T, _ error) string { return string(s) }

// The walk: a graded process's whole file system is what the box's Mounts say, which is Layout with the run's own
// folders, and nothing else of the host: every file the walker finds is a declared place, lies on the way to one,
// or is one of /dev's; every host place is the host's very file (device and inode); every mount is declared or
// lies below a shown folder. Run with the machine's temp folder and with a TMPDIR that is a link to a scratch
// folder outside /tmp, as a cluster's.
func TestBoxShowsOnlyLayout(t *testing.T) {
	requireNamespaces(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	// The files the sandbox writes for a box are the box's: the host's accounts stay as they were (an early build
	// of the allowlist wrote its /etc/passwd and /etc/group over the host's).
	hostAccounts := func() string {
		var b strings.Builder
		for _, f := range []string{"/etc/passwd", "/etc/group"} {
			text, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			b.Write(text)
		}
		return b.String()
	}
	accounts := hostAccounts()
	t.Cleanup(func() {
		if hostAccounts() != accounts {
			t.Errorf("the host's /etc/passwd or /etc/group changed while boxes ran")
		}
	})
	for _, scratch := range []bool{false, true} {
		t.Run(map[bool]string{false: "tmp", true: "scratch-link"}[scratch], func(t *testing.T) {
			if scratch {
				dir := scratchTMPDIR(t)
				link := dir + "-link"
				if err := os.Symlink(dir, link); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { os.Remove(link) })
				t.Setenv("TMPDIR", link)
			}
			mk := func(name string) string {
				d, err := os.MkdirTemp("", "walk-"+name+"-")
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { os.RemoveAll(d) })
				if err := os.Chmod(d, 0o755); err != nil {
					t.Fatal(err)
				}
				return d
			}
			bin, wt := mk("bin"), mk("worktree")
			if err := os.WriteFile(filepath.Join(bin, "walker"), data, 0o755); err != nil {
				t.Fatal(err)
			}
			box, err := sandbox.New(wt, sandbox.Options{ReadOnly: []string{bin}, Writable: []string{mk("writable")},
				Shared: []string{mk("shared")}, Overlay: []string{mk("overlay")}})
			if err != nil {
				t.Fatal(err)
			}
			defer box.Close()
			if _, err := box.ReadOnlyView(mk("view")); err != nil {
				t.Fatal(err)
			}
			mounts, err := box.Mounts()
			if err != nil {
				t.Fatal(err)
			}
			checkWalk(t, box, mounts, filepath.Join(bin, "walker"))
		})
	}
}

// checkWalk runs the walker in box and compares what it saw with mounts.
func checkWalk(t *testing.T, box *sandbox.Box, mounts []sandbox.Mount, walker string) {
	t.Helper()
	byPath := map[string]sandbox.Mount{}
	prune := []string{"/proc"}
	var visit []string // places inside a pruned one
	for _, m := range mounts {
		byPath[m.Path] = m
		if belowShown(m.Path, mounts) {
			visit = append(visit, m.Path)
		}
		if m.How == sandbox.HostReadOnly || m.How == sandbox.HostWritable || m.How == sandbox.HostOverlay {
			prune = append(prune, m.Path)
		}
	}
	out, err := run(t, box, context.Background(), []string{walker}, []string{helperEnv + "=walk",
		"SANDBOX_TEST_PRUNE=" + strings.Join(prune, "\n"), "SANDBOX_TEST_VISIT=" + strings.Join(visit, "\n")})
	if err != nil {
		t.Fatalf("walker: %v\n%s", err, out)
	}
	found := map[string]bool{}
	var mountPoints []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if mp, ok := strings.CutPrefix(line, "mount "); ok {
			mountPoints = append(mountPoints, mp)
			continue
		}
		var s seen
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			t.Fatalf("walker line %q: %v", line, err)
		}
		found[s.Path] = true
		if s.Err != "" {
			t.Errorf("%s: the walker could not read it: %s", s.Path, s.Err)
		}
		if why := undeclared(s, byPath, mounts); why != "" {
			t.Errorf("the box shows %s (%s): %s", s.Path, s.Kind, why)
		}
	}
	for _, m := range mounts {
		if !found[m.Path] {
			t.Errorf("declared %s (%s) is not in the box", m.Path, m.How)
		}
	}
	for _, mp := range mountPoints {
		if _, ok := byPath[mp]; !ok && mp != "/" && !belowShown(mp, mounts) && !strings.HasPrefix(mp, "/dev/") {
			t.Errorf("mount point %s is not declared", mp)
		}
	}
	if len(found) < len(mounts) || len(mountPoints) == 0 {
		t.Fatalf("the walk saw %d files and %d mounts:\n%s", len(found), len(mountPoints), out)
	}
}

// undeclared says why s, a file the walker saw, is not what mounts declare ("" when it is).
func undeclared(s seen, byPath map[string]sandbox.Mount, mounts []sandbox.Mount) string {
	if m, ok := byPath[s.Path]; ok {
		switch m.How {
		case sandbox.HostReadOnly, sandbox.HostWritable:
			var st syscall.Stat_t
			if err := syscall.Stat(m.Source, &st); err != nil || st.Dev != s.Dev || st.Ino != s.Ino {
				return fmt.Sprintf("not the host's %s (device %d inode %d there, %v)", m.Source, st.Dev, st.Ino, err)
			}
		case sandbox.HostLink:
			if s.Kind != "link" || s.Link != m.Source {
				return fmt.Sprintf("want a link to %s", m.Source)
			}
		case sandbox.Written:
			if s.Kind != "file" || s.Text != m.Text {
				return fmt.Sprintf("want the file written for the box, %q, not %q", m.Text, s.Text)
			}
		default:
			if s.Kind != "dir" {
				return "want a folder"
			}
		}
		return ""
	}
	if s.Path == "/" {
		return ""
	}
	if dev, ok := strings.CutPrefix(s.Path, "/dev/"); ok {
		if slices.Contains([]string{"null", "zero", "full", "random", "urandom", "tty", "fd", "stdin", "stdout",
			"stderr", "ptmx", "pts", "pts/ptmx"}, dev) {
			return ""
		}
		return "not one of /dev's"
	}
	for _, m := range mounts {
		if strings.HasPrefix(m.Path, s.Path+"/") {
			if s.Kind != "dir" {
				return "want a folder on the way to " + m.Path
			}
			return "" // a folder on the way to a place
		}
	}
	return "no place of the box's Mounts"
}

// belowShown says whether the mount point mp lies below a folder shown from the host (a mount of the host's there,
// carried along) or below /proc.
func belowShown(mp string, mounts []sandbox.Mount) bool {
	if strings.HasPrefix(mp, "/proc/") {
		return true
	}
	for _, m := range mounts {
		if (m.How == sandbox.HostReadOnly || m.How == sandbox.HostWritable || m.How == sandbox.HostOverlay) &&
			strings.HasPrefix(mp, m.Path+"/") {
			return true
		}
	}
	return false
}

// docs/grading.md's table of what the sandbox shows is LayoutTable's, written from Layout.
func TestDocsShowLayout(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "grading.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), sandbox.LayoutTable()) {
		t.Fatalf("docs/grading.md does not hold sandbox.LayoutTable(); put this in its sandbox section:\n%s",
			sandbox.LayoutTable())
	}
}
