//go:build unix

package regularfile

import (
	"os"
	"syscall"
)

// openNoFollow opens path without following a link at it (O_NOFOLLOW), and without blocking on a named pipe
// (O_NONBLOCK, which a regular file ignores), so that Open can refuse either.
func openNoFollow(path string, flag int, perm os.FileMode) (*os.File, error) {
	return os.OpenFile(path, flag|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, perm)
}
