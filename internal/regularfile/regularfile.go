// Package regularfile opens files that must be regular files where they are: a run folder's files, its locks and its
// log. A symbolic link at the path is refused, never followed (a received run folder whose results.jsonl linked to
// another file had that file cut and appended to), and so is anything else that is not a regular file (a folder, a
// named pipe that would block, a device); the check is made on the opened file, so nothing can be swapped in
// between.
package regularfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// ErrNotAFile is the error of a path that holds something other than a regular file (a link, a folder, a socket, a
// device): retrying cannot help.
var ErrNotAFile = errors.New("not a regular file")

// Open opens the regular file at path with flag and perm as os.OpenFile does, without following a symbolic link
// at path: a link, or anything else that is not a regular file, is an error wrapping ErrNotAFile that names what
// it is.
func Open(path string, flag int, perm os.FileMode) (*os.File, error) {
	f, err := openNoFollow(path, flag, perm)
	if err != nil {
		// A link (ELOOP), a folder opened for writing (EISDIR), a pipe with no reader (ENXIO): said as what it is.
		if st, lerr := os.Lstat(path); lerr == nil && !st.Mode().IsRegular() {
			return nil, notAFile(path, what(st.Mode()))
		}
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, notAFile(path, what(st.Mode()))
	}
	return f, nil
}

// ReadFile reads the regular file at path as os.ReadFile does, refusing what Open refuses.
func ReadFile(path string) ([]byte, error) {
	f, err := Open(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// CheckOrAbsent returns nil when path is a regular file or does not exist, else the error Open would give. A
// symbolic link is not followed.
func CheckOrAbsent(path string) error {
	st, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case st.Mode().IsRegular():
		return nil
	}
	return notAFile(path, what(st.Mode()))
}

func notAFile(path, what string) error {
	return fmt.Errorf("%s is %s, %w: move it out of the way and run again", path, what, ErrNotAFile)
}

func what(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsDir():
		return "a folder"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "something else"
}
