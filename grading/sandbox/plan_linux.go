package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Mounts is what the box's commands see, in the order the init makes it: Layout with the box's own folders, the
// host's places that are missing left out, symbolic links resolved. Nil without isolation.
func (b *Box) Mounts() ([]Mount, error) {
	if b.isolation != IsolationNamespaces {
		return nil, nil
	}
	return b.plan()
}

// plan turns Layout into the box's mounts, sorted so that a folder is made before what is shown inside it.
func (b *Box) plan() ([]Mount, error) {
	var ms []Mount
	for _, pl := range Layout {
		var err error
		switch {
		case pl.run != notRun:
			ms, err = b.planRun(ms, pl)
		case pl.How == HostReadOnly:
			ms, err = planHost(ms, pl.Path)
		case pl.How == Tmpfs:
			ms = append(ms, Mount{Path: pl.Path, How: Tmpfs, Mode: pl.mode, Size: b.tmpfsSize})
		case pl.How == Written:
			ms = append(ms, Mount{Path: pl.Path, How: Written, Text: b.written(pl.Path)})
		default:
			ms = append(ms, Mount{Path: pl.Path, How: pl.How})
		}
		if err != nil {
			return nil, err
		}
	}
	slices.SortStableFunc(ms, func(x, y Mount) int { return strings.Compare(x.Path, y.Path) })
	return slices.Compact(ms), nil
}

// planHost adds the host places that the pattern matches: each at its path, or, when it is a symbolic link, the
// same link where its target is shown (/bin on a merged-/usr system) and else what it leads to.
func planHost(ms []Mount, pattern string) ([]Mount, error) {
	matches, err := filepath.Glob(pattern)
	if err != nil {
		return nil, fmt.Errorf("sandbox: layout place %s: %w", pattern, err)
	}
	for _, p := range matches {
		fi, err := os.Lstat(p)
		if err != nil {
			continue
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			ms = append(ms, Mount{Path: p, How: HostReadOnly, Source: p})
			continue
		}
		target, err := filepath.EvalSymlinks(p)
		if err != nil {
			continue // a dangling link: nothing to show
		}
		if layoutShows(target) {
			link, err := os.Readlink(p)
			if err != nil {
				return nil, fmt.Errorf("sandbox: %w", err)
			}
			ms = append(ms, Mount{Path: p, How: HostLink, Source: link})
			continue
		}
		ms = append(ms, Mount{Path: p, How: HostReadOnly, Source: target})
	}
	return ms, nil
}

// layoutShows says whether every box shows the host path p: one of Layout's host places, /proc or /dev.
func layoutShows(p string) bool {
	return HostShows(p) || under(p, "/proc") || under(p, "/dev")
}

// planRun adds the box's own places of the kind pl declares.
func (b *Box) planRun(ms []Mount, pl Place) ([]Mount, error) {
	var paths []string
	switch pl.run {
	case runWorktree:
		paths = []string{b.worktree}
	case runPrivate:
		paths = []string{b.private}
	case runGraderHome:
		if b.home != "" {
			ms = append(ms, Mount{Path: b.home, How: Tmpfs, Mode: pl.mode, Size: b.tmpfsSize})
		}
		return ms, nil
	case runReadOnly:
		paths = b.readOnly
	case runWritable:
		paths = slices.Concat(b.writable, b.shared)
	case runOverlay:
		paths = b.overlay
	case runViews:
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, v := range b.views {
			path, err := filepath.EvalSymlinks(v.Path)
			if err != nil {
				return nil, fmt.Errorf("sandbox: view %s: %w", v.Path, err)
			}
			source, err := filepath.EvalSymlinks(v.Source)
			if err != nil {
				return nil, fmt.Errorf("sandbox: view of %s: %w", v.Source, err)
			}
			ms = append(ms, Mount{Path: path, How: HostReadOnly, Source: source})
		}
		return ms, nil
	}
	for _, p := range paths {
		resolved, links, err := hostLinks(p, 0)
		if err != nil {
			return nil, fmt.Errorf("sandbox: %s: %w", p, err)
		}
		ms = append(append(ms, links...), Mount{Path: resolved, How: pl.How, Source: resolved})
	}
	return ms, nil
}

// hostLinks resolves the absolute path p on the host and returns where it leads, with the symbolic links on the
// way as HostLink mounts, each at a path without links (a TMPDIR that is a link to a scratch disk, GOROOT through
// /usr/lib/go): the box shows the folder at its real path and the links that lead there, so that p works in it.
func hostLinks(p string, depth int) (string, []Mount, error) {
	if depth > 40 {
		return "", nil, errors.New("too many levels of symbolic links")
	}
	cur := "/"
	var links []Mount
	for _, name := range strings.Split(p, "/") {
		if name == "" {
			continue
		}
		next := filepath.Join(cur, name)
		fi, err := os.Lstat(next)
		if err != nil {
			return "", nil, err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", nil, err
		}
		links = append(links, Mount{Path: next, How: HostLink, Source: target})
		if !filepath.IsAbs(target) {
			target = filepath.Join(cur, target)
		}
		resolved, more, err := hostLinks(target, depth+1)
		if err != nil {
			return "", nil, err
		}
		links, cur = append(links, more...), resolved
	}
	return cur, links, nil
}

// written is the text of the Written file at path.
func (b *Box) written(path string) string {
	switch path {
	case "/etc/passwd":
		return fmt.Sprintf("root:x:0:0:root:/root:/bin/sh\n%s:x:%d:%d:ctxlab sandbox:%s:/bin/sh\n"+
			"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n", UserName, b.uid, b.gid,
			filepath.Join(b.private, "home"))
	case "/etc/group":
		return fmt.Sprintf("root:x:0:\n%s:x:%d:\nnogroup:x:65534:\n", UserName, b.gid)
	}
	return ""
}

// shows says whether the host file p is visible in a box built from mounts: it lies in a folder they show.
func shows(mounts []Mount, p string) bool {
	resolved, err := filepath.EvalSymlinks(p)
	if err != nil {
		return false
	}
	for _, m := range mounts {
		host := m.How == HostReadOnly || m.How == HostWritable || m.How == HostOverlay
		if rel, err := filepath.Rel(m.Source, resolved); host && m.Path == m.Source && err == nil && filepath.IsLocal(rel) {
			return true
		}
	}
	return false
}
