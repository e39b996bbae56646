package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// The init builds the box's root as bubblewrap does: a staging tmpfs becomes the root with the host's root below
// it at oldRoot (so that no mount made on the way covers a folder still to be shown), the box's root is made at
// newRoot from the host's paths under oldRoot, and a second pivot_root makes newRoot the root and drops the rest.
const (
	stagingAt = "/tmp" // where the staging tmpfs is mounted before the first pivot
	oldRoot   = "/oldroot"
	newRoot   = "/newroot"
)

// devices are the host's device files every box gets (bubblewrap's --dev set).
var devices = []string{"null", "zero", "full", "random", "urandom", "tty"}

// deviceLinks are /dev's links.
var deviceLinks = map[string]string{"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1",
	"stderr": "/proc/self/fd/2", "ptmx": "pts/ptmx"}

// buildRoot makes the box's root from mounts and pivots into it. It runs as root, in the new mount namespace.
func buildRoot(mounts []Mount) error {
	if err := unix.Mount("tmpfs", stagingAt, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=1m"); err != nil {
		return fmt.Errorf("staging tmpfs: %w", err)
	}
	for _, d := range []string{oldRoot, newRoot} {
		if err := os.Mkdir(stagingAt+d, 0o755); err != nil {
			return fmt.Errorf("staging tmpfs: %w", err)
		}
	}
	if err := unix.PivotRoot(stagingAt, stagingAt+oldRoot); err != nil {
		return fmt.Errorf("pivot_root into the staging tmpfs: %w", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", newRoot, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=4m"); err != nil {
		return fmt.Errorf("the root's tmpfs: %w", err)
	}
	for _, m := range mounts {
		if err := makeMount(m); err != nil {
			return fmt.Errorf("%s (%s): %w", m.Path, m.How, err)
		}
	}
	flags := uintptr(unix.MS_REMOUNT | unix.MS_BIND | unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV)
	if err := unix.Mount("", newRoot, "", flags, ""); err != nil {
		return fmt.Errorf("making the root read-only: %w", err)
	}
	if err := unix.Chdir(newRoot); err != nil {
		return err
	}
	// pivot_root(".", ".") stacks the staging root (and the host's below it) on the new one; detaching it leaves
	// nothing of the host but what was shown.
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root into the box's root: %w", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detaching the host's root: %w", err)
	}
	return unix.Chdir("/")
}

// makeMount shows m in newRoot.
func makeMount(m Mount) error {
	target := newRoot + m.Path
	switch m.How {
	case HostReadOnly, HostWritable, HostOverlay:
		return bindHost(oldRoot+m.Source, target, m.How == HostReadOnly)
	case HostLink:
		if err := makeTarget(target, false, true); err != nil {
			return err
		}
		if cur, err := os.Readlink(target); err == nil && cur == m.Source {
			return nil // the link is already there, inside a folder shown
		}
		return os.Symlink(m.Source, target)
	case Tmpfs:
		if err := makeTarget(target, true, false); err != nil {
			return err
		}
		return unix.Mount("tmpfs", target, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode="+m.Mode+",size="+m.Size)
	case Written:
		if err := makeTarget(target, false, true); err != nil {
			return err
		}
		// A new file, never through a link: a path that led to a file already there (the host's, through a folder
		// shown writable) is refused instead of written over.
		f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, 0o644)
		if err != nil {
			return err
		}
		if _, err := f.WriteString(m.Text); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	case Devices:
		return makeDevices(target)
	case Proc:
		if err := makeTarget(target, true, false); err != nil {
			return err
		}
		return unix.Mount("proc", target, "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
	}
	return fmt.Errorf("unknown kind of place %q", m.How)
}

// bindHost shows the host's src at target with everything mounted below it, read-only or not, and in both cases
// without set-uid programs or devices.
func bindHost(src, target string, readOnly bool) error {
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	if err := makeTarget(target, fi.IsDir(), false); err != nil {
		return err
	}
	if err := unix.Mount(src, target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("binding %s: %w", src, err)
	}
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
	if readOnly {
		attr.Attr_set |= unix.MOUNT_ATTR_RDONLY
	}
	err = unix.MountSetattr(unix.AT_FDCWD, target, unix.AT_RECURSIVE, &attr)
	if !errors.Is(err, unix.ENOSYS) {
		return err
	}
	// Before Linux 5.12 only the bound folder's own mount can be changed, not those below it.
	flags := uintptr(unix.MS_BIND | unix.MS_REMOUNT | unix.MS_NOSUID | unix.MS_NODEV)
	if readOnly {
		flags |= unix.MS_RDONLY
	}
	return unix.Mount("", target, "", flags, "")
}

// makeDevices mounts a tmpfs at target holding the host's harmless devices, /dev's links and pseudo-terminals of
// the box's own.
func makeDevices(target string) error {
	if err := makeTarget(target, true, false); err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", target, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=64k"); err != nil {
		return err
	}
	for _, name := range devices {
		src := oldRoot + "/dev/" + name
		if _, err := os.Stat(src); err != nil {
			continue // the host has none
		}
		if err := makeTarget(target+"/"+name, false, false); err != nil {
			return err
		}
		if err := unix.Mount(src, target+"/"+name, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("binding %s: %w", src, err)
		}
	}
	for name, link := range deviceLinks {
		if err := os.Symlink(link, target+"/"+name); err != nil {
			return err
		}
	}
	if err := os.Mkdir(target+"/pts", 0o755); err != nil {
		return err
	}
	// A devpts instance of the box's own: its terminals are not the host's. Where the kernel refuses one, the box
	// has no pseudo-terminals (ptmx leads nowhere).
	_ = unix.Mount("devpts", target+"/pts", "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=620")
	return nil
}

// makeTarget makes the folders on the way to target (below newRoot) and target itself, a folder when dir, else an
// empty file (only the folders on the way when parentsOnly). It never goes through a symbolic link: a folder
// shown writable may hold links the tests made.
func makeTarget(target string, dir, parentsOnly bool) error {
	parts := strings.Split(strings.Trim(strings.TrimPrefix(target, newRoot), "/"), "/")
	cur := newRoot
	for i, name := range parts {
		cur += "/" + name
		last := i == len(parts)-1
		if last && parentsOnly {
			return nil
		}
		fi, err := os.Lstat(cur)
		switch {
		case err == nil && fi.Mode()&fs.ModeSymlink != 0:
			return fmt.Errorf("the way to %s goes through the symbolic link %s", target, cur)
		case err == nil && (!last || dir) && !fi.IsDir():
			return fmt.Errorf("%s is not a folder", cur)
		case err == nil:
		case !errors.Is(err, fs.ErrNotExist):
			return err
		case last && !dir:
			f, err := os.OpenFile(cur, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
			if err != nil {
				return err
			}
			f.Close()
		default:
			if err := os.Mkdir(cur, 0o755); err != nil {
				return err
			}
		}
	}
	return nil
}
