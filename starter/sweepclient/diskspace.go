package sweepclient

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// A full disk must be named, and must stop the sweep with what to do, not leave the embedded server failing every
// write ("something went wrong, please retry", "context deadline exceeded") while the starter hangs.
const (
	// minStartFree is the free space starter run wants on the run folder's disk before it starts: the content store,
	// the database and the logs of a small sweep (the demo's run folder holds about 30 MB when it has finished).
	minStartFree = 16 << 20
	// minRunFree is the free space below which a running sweep stops: the database and the logs can no longer be
	// written.
	minRunFree = 1 << 20
	// diskCheckEvery is how often a running starter looks.
	diskCheckEvery = 2 * time.Second
)

// freeSpace is how many bytes an unprivileged process can still write on the disk holding dir (its nearest
// existing parent when dir is not made yet).
func freeSpace(dir string) (uint64, error) {
	for {
		var st syscall.Statfs_t
		err := syscall.Statfs(dir, &st)
		if err == nil {
			return st.Bavail * uint64(st.Bsize), nil
		}
		parent := filepath.Dir(dir)
		if !errors.Is(err, syscall.ENOENT) || parent == dir {
			return 0, err
		}
		dir = parent
	}
}

// errDiskFull says the disk holding the run folder is full, naming ENOSPC and what to do.
func errDiskFull(runDir string, free uint64) error {
	return fmt.Errorf("no space left on device (ENOSPC): the disk holding %s has %s free; free some space and run "+
		"again: the run folder keeps everything done so far, and rows that failed for want of space are retried",
		runDir, byteSize(free))
}

// checkStartSpace refuses to start a sweep on a disk with less than minStartFree bytes free.
func checkStartSpace(runDir string) error {
	free, err := freeSpace(runDir)
	if err != nil || free >= minStartFree {
		return nil // a disk whose space cannot be read is left to the writes themselves
	}
	return errDiskFull(runDir, free)
}

// watchDisk calls full once, with the error to show, when the run folder's disk has had less than minRunFree bytes
// free at two looks in a row (a moment's spike of temporary files does not stop a sweep).
func watchDisk(ctx context.Context, runDir string, full func(error)) {
	t := time.NewTicker(diskCheckEvery)
	defer t.Stop()
	low := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		free, err := freeSpace(runDir)
		if err != nil || free >= minRunFree {
			low = 0
			continue
		}
		if low++; low >= 2 {
			full(errDiskFull(runDir, free))
			return
		}
	}
}

// isDiskFull reports whether err says a write found no space: ENOSPC or EDQUOT in its chain, or the text SQLite and
// other tools use for it.
func isDiskFull(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return true
	}
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "no space left on device") || strings.Contains(msg, "disk is full") ||
		strings.Contains(msg, "disk quota exceeded")
}

// explainDiskFull is err, followed by what to do when it says the disk is full.
func explainDiskFull(err error, runDir string) error {
	if !isDiskFull(err) {
		return err
	}
	free, _ := freeSpace(runDir)
	return fmt.Errorf("%w\n%v", err, errDiskFull(runDir, free))
}

func byteSize(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d KB", n>>10)
}
