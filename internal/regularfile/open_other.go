//go:build !unix

package regularfile

import (
	"errors"
	"os"
)

// openNoFollow refuses a link found at path before opening it; on these systems a link swapped in between is not
// caught.
func openNoFollow(path string, flag int, perm os.FileMode) (*os.File, error) {
	if st, err := os.Lstat(path); err == nil && st.Mode()&os.ModeSymlink != 0 {
		return nil, errors.New("a symbolic link")
	}
	return os.OpenFile(path, flag, perm)
}
