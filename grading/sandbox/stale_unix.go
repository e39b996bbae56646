//go:build unix

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// RemoveDead removes the folders under root named prefix + pid + "-..." whose process no longer runs (left by a
// killed grader), and returns how many it removed. Folders of this process and of live ones stay.
func RemoveDead(root, prefix string) (int, error) {
	ents, err := os.ReadDir(root)
	if err != nil {
		return 0, fmt.Errorf("cleaning %s: %w", root, err)
	}
	n := 0
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || !e.IsDir() {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 || pid == os.Getpid() || alive(pid) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(root, e.Name())); err == nil {
			n++
		}
	}
	return n, nil
}

func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
