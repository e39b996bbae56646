package activities

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"ctxlab/activities/api"
	"ctxlab/internal/flock"
	"ctxlab/runfolder"
	"ctxlab/store/archive"
	"ctxlab/store/cas"
)

// shippedPath returns where the folder (or file in a folder) at path on the starter's machine is on this one: path
// itself when the run ships no folders (one machine, or a disk the workers share), else, for a path inside a shipped
// folder, the same place in that folder's archive, unpacked once into this machine's run folder. A path the starter
// did not ship stays as it is (a folder every worker has, such as a mirror mounted on each).
func (a *Activities) shippedPath(ctx context.Context, in api.NodeInput, store cas.Store, path string) (string, error) {
	if in.Shipped == "" {
		return path, nil
	}
	var folders api.ShippedFolders
	if err := cas.GetJSON(ctx, store, in.Shipped, &folders); err != nil {
		return "", fmt.Errorf("the folders the starter shipped: %w", err)
	}
	clean := filepath.Clean(path)
	for root, ref := range folders {
		rest, ok := strings.CutPrefix(clean, root)
		if !ok || (rest != "" && !strings.HasPrefix(rest, string(filepath.Separator))) {
			continue
		}
		dir, err := a.unpacked(ctx, store, in.Run, ref)
		if err != nil {
			return "", fmt.Errorf("%s, shipped by the starter: %w", root, err)
		}
		return dir + rest, nil
	}
	return path, nil
}

// unpacked returns the folder a shipped archive is unpacked into in this machine's run folder, unpacking it first
// when no process of this machine has: into a temporary folder renamed into place under a lock, so a reader sees a
// whole folder or none.
func (a *Activities) unpacked(ctx context.Context, store cas.Store, run string, ref cas.Ref) (string, error) {
	if !ref.Valid() {
		return "", fmt.Errorf("malformed reference %q", ref)
	}
	dir := filepath.Join(runfolder.Shipped(a.RunDir(run)), strings.TrimPrefix(string(ref), "sha256:"))
	if _, err := os.Stat(dir); err == nil {
		return dir, nil
	}
	unlock, err := flock.Lock(ctx, dir+".lock", 50*time.Millisecond)
	if err != nil {
		return "", err
	}
	defer unlock()
	if _, err := os.Stat(dir); err == nil {
		return dir, nil
	}
	data, err := store.Get(ctx, ref)
	if err != nil {
		return "", err
	}
	tmp := fmt.Sprintf("%s.%016x.tmp", dir, rand.Uint64())
	defer os.RemoveAll(tmp)
	if err := archive.Unpack(data, tmp); err != nil {
		return "", err
	}
	return dir, os.Rename(tmp, dir)
}
