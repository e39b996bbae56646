//go:build !unix

package repo

// lockFile is a no-op where flock is unavailable; the in-process lock still applies.
func lockFile(string) (func(), error) { return func() {}, nil }
