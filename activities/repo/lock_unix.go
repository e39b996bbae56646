//go:build unix

package repo

import "ctxlab/internal/flock"

// lockFile takes an exclusive advisory lock on path (created if needed) and returns its release.
func lockFile(path string) (func(), error) {
	return flock.LockPath(path)
}
