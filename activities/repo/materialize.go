package repo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"ctxlab/activities/api/errkind"
	"ctxlab/store/cas"
)

// maxLinkHops bounds symlink chains when checking where a link leads (Linux allows 40).
const maxLinkHops = 40

// Materialize writes the snapshot m into dir, which must be empty or not exist yet: regular files with mode 0644,
// executables with 0755, symlinks recreated. Everything is checked before anything is written: every path must be
// local (no absolute paths, no "..", no ".git" component), no entry may sit inside another file's path, and every
// symlink must lead to a place inside dir, following the snapshot's other symlinks on the way; a manifest that
// breaks any rule is refused with an error and dir is left empty.
func Materialize(ctx context.Context, store cas.Store, m Manifest, dir string) error {
	if err := checkPaths(m); err != nil {
		return err
	}
	links := map[string]string{}
	for _, e := range m.Files {
		if e.Mode != ModeSymlink {
			continue
		}
		target, err := store.Get(ctx, e.Blob)
		if err != nil {
			return fmt.Errorf("repo: symlink %s: %w", e.Path, err)
		}
		links[e.Path] = string(target)
	}
	for p, target := range links {
		if err := checkLink(links, p, target); err != nil {
			return err
		}
	}

	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("repo: %w", err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("repo: %w", err)
	}
	if len(ents) > 0 {
		return fmt.Errorf("repo: materialize into %s: folder is not empty", dir)
	}

	// Files first, symlinks last, so no write ever goes through a link.
	for _, e := range m.Files {
		if e.Mode == ModeSymlink {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		perm := os.FileMode(0o644)
		if e.Mode == ModeExec {
			perm = 0o755
		}
		data, err := store.Get(ctx, e.Blob)
		if err != nil {
			return fmt.Errorf("repo: %s: %w", e.Path, err)
		}
		if err := writeFile(filepath.Join(dir, filepath.FromSlash(e.Path)), data, perm); err != nil {
			return fmt.Errorf("repo: writing %s: %w", e.Path, err)
		}
	}
	for _, e := range m.Files {
		if e.Mode != ModeSymlink {
			continue
		}
		p := filepath.Join(dir, filepath.FromSlash(e.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("repo: %w", err)
		}
		if err := os.Symlink(filepath.FromSlash(links[e.Path]), p); err != nil {
			return fmt.Errorf("repo: symlink %s: %w", e.Path, err)
		}
	}
	return nil
}

func writeFile(p string, data []byte, perm os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		return err
	}
	return os.Chmod(p, perm) // exact mode whatever the umask
}

func checkPaths(m Manifest) error {
	all := make(map[string]bool, len(m.Files))
	for _, e := range m.Files {
		switch e.Mode {
		case ModeFile, ModeExec, ModeSymlink:
		default:
			return fmt.Errorf("repo: %s has unknown mode %q", e.Path, e.Mode)
		}
		if e.Path == "" || path.IsAbs(e.Path) || strings.Contains(e.Path, "\\") || path.Clean(e.Path) != e.Path ||
			!filepath.IsLocal(filepath.FromSlash(e.Path)) {
			return fmt.Errorf("repo: refusing unsafe path %q", e.Path)
		}
		for _, c := range strings.Split(e.Path, "/") {
			if strings.EqualFold(c, ".git") {
				return fmt.Errorf("repo: refusing path %q inside a .git folder", e.Path)
			}
		}
		if all[e.Path] {
			return fmt.Errorf("repo: path %q appears twice", e.Path)
		}
		all[e.Path] = true
	}
	for p := range all {
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			if all[d] {
				return fmt.Errorf("repo: %q lies inside %q, which is a file", p, d)
			}
		}
	}
	return nil
}

// checkLink follows target from the link's folder through the snapshot's own links and fails if the walk ever
// leaves the tree's root. Components that are not in the snapshot are taken literally (they will be plain folders
// or missing, never links).
func checkLink(links map[string]string, linkPath, target string) error {
	refuse := func(why string) error {
		return errkind.Mark(errkind.SymlinkRefused, fmt.Errorf("repo: refusing symlink %s -> %s: %s", linkPath,
			target, why))
	}
	if target == "" {
		return refuse("empty target")
	}
	var stack []string
	if d := path.Dir(linkPath); d != "." {
		stack = strings.Split(d, "/")
	}
	queue := splitTarget(target)
	if queue == nil {
		return refuse("absolute target points outside the tree")
	}
	hops := 0
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(stack) == 0 {
				return refuse("target points outside the tree")
			}
			stack = stack[:len(stack)-1]
			continue
		}
		stack = append(stack, c)
		if next, ok := links[strings.Join(stack, "/")]; ok {
			hops++
			if hops > maxLinkHops {
				return refuse("too many levels of symbolic links")
			}
			stack = stack[:len(stack)-1]
			rest := splitTarget(next)
			if rest == nil {
				return refuse("leads through an absolute link, outside the tree")
			}
			queue = append(rest, queue...)
		}
	}
	return nil
}

// splitTarget splits a link target into components, or returns nil for an absolute one.
func splitTarget(t string) []string {
	t = strings.ReplaceAll(t, "\\", "/")
	if strings.HasPrefix(t, "/") || filepath.IsAbs(t) || filepath.VolumeName(t) != "" {
		return nil
	}
	return append([]string{}, strings.Split(t, "/")...)
}
