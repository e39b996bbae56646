//go:build !linux

package sandbox

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"syscall"
)

// Box runs commands in their own process group only: namespaces are Linux's.
type Box struct{ worktree string }

// Available is false outside Linux.
func Available() (ok bool, why string) { return false, "namespaces need Linux" }

// New returns a Box without isolation.
func New(worktree string, _ Options) (*Box, error) { return &Box{worktree: worktree}, nil }

// Isolation is always IsolationNone here.
func (b *Box) Isolation() string { return IsolationNone }

// Why isolation is "none".
func (b *Box) Why() string { return "namespaces need Linux" }

// UID is 0: commands run as the caller.
func (b *Box) UID() int { return 0 }

// TempDir is "": no private temp folder without isolation.
func (b *Box) TempDir() string { return "" }

// Command runs argv in its own process group, killed as a whole on cancel.
func (b *Box) Command(ctx context.Context, argv, env []string, dir string) (*exec.Cmd, error) {
	if len(argv) == 0 {
		return nil, errors.New("sandbox: empty command")
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	return cmd, nil
}

// ReadOnlyView returns src: commands run as the caller and read it where it is.
func (b *Box) ReadOnlyView(src string) (string, error) { return filepath.Abs(src) }

// OverlayUpper is "": there are no overlays without isolation.
func (b *Box) OverlayUpper(string) string { return "" }

// Mounts is nil: nothing is mounted without isolation.
func (b *Box) Mounts() ([]Mount, error) { return nil, nil }

// Close does nothing.
func (b *Box) Close() error { return nil }

// NonDumpable is a no-op outside Linux.
func NonDumpable() error { return nil }

// Reachable is true: without isolation commands run as the caller.
func Reachable(string) bool { return true }
