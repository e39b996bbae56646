// Package goinstall builds a program of another Go module for the tests, the way an operator installs it: `go
// install module/cmd@version` from the Go module proxy into the machine's cache folder (internal/images.CacheDir:
// /var/cache/ctxlab), once per machine and version, so that its dependency graph never enters ctxlab's go.mod.
package goinstall

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sync"
	"time"

	"ctxlab/internal/flock"
	"ctxlab/internal/images"
)

var (
	mu    sync.Mutex
	built = map[string]*result{}
)

type result struct {
	once sync.Once
	exe  string
	err  error
}

// Binary returns the program pkg (a main package's import path) at version, building it on the first call on this
// machine (minutes for a large module) into the cache folder tools/NAME-VERSION; later calls, from any process, find
// it there.
func Binary(pkg, version, name string) (string, error) {
	mu.Lock()
	r := built[pkg+"@"+version]
	if r == nil {
		r = &result{}
		built[pkg+"@"+version] = r
	}
	mu.Unlock()
	r.once.Do(func() { r.exe, r.err = install(pkg, version, name) })
	return r.exe, r.err
}

func install(pkg, version, name string) (string, error) {
	cache, err := images.CacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, "tools", name+"-"+version)
	exe := filepath.Join(dir, path.Base(pkg))
	if _, err := os.Stat(exe); err == nil {
		return exe, nil
	}
	unlock, err := flock.Lock(context.Background(), dir+".lock", time.Second)
	if err != nil {
		return "", err
	}
	defer unlock()
	if _, err := os.Stat(exe); err == nil {
		return exe, nil // another process built it while this one waited
	}
	tmp := dir + ".building"
	os.RemoveAll(tmp)
	cmd := exec.Command("go", "install", pkg+"@"+version)
	cmd.Env = append(os.Environ(), "GOBIN="+tmp, "GOFLAGS=-mod=mod", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building %s@%s: %v\n%s", pkg, version, err, out)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return "", err
	}
	return exe, nil
}
