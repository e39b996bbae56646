// Package repo gives ctxlab read access to the repositories of task instances: it opens a local checkout or a cached
// bare clone with go-git, snapshots the tree at a commit into the content-addressed store, and writes a snapshot back
// out as a plain folder (no git needed) for graders.
package repo

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"

	"ctxlab/dataset/swebench"
)

// SourceFor fills a source template for an instance. Placeholders: {repo} (owner/name as in the dataset), {owner},
// {name} and {dataset_dir}. The repo must be owner/name (swebench.CheckRepo), and the filled template must stay in
// the folder (or URL path) its first repository placeholder sits in: a dataset never names a repository elsewhere.
func SourceFor(template string, inst swebench.Instance, datasetDir string) (string, error) {
	if err := swebench.CheckRepo(inst.Repo); err != nil {
		return "", fmt.Errorf("repo: instance %s: %w", inst.InstanceID, err)
	}
	owner, name, _ := strings.Cut(inst.Repo, "/")
	fill := strings.NewReplacer("{repo}", inst.Repo, "{owner}", owner, "{name}", name, "{dataset_dir}", datasetDir)
	src := fill.Replace(template)
	first := len(template)
	for _, p := range []string{"{repo}", "{owner}", "{name}"} {
		if i := strings.Index(template, p); i >= 0 && i < first {
			first = i
		}
	}
	if first == len(template) {
		return src, nil // one repository for every instance
	}
	root, c := path.Dir(fill.Replace(template[:first])+"x"), path.Clean(src)
	inside := strings.HasPrefix(c, strings.TrimSuffix(root, "/")+"/")
	if root == "." {
		inside = c != ".." && !strings.HasPrefix(c, "../") && !path.IsAbs(c)
	}
	if !inside {
		return "", fmt.Errorf("repo: instance %s: the repos template %s, filled with %s, leaves %s", inst.InstanceID,
			template, inst.Repo, root)
	}
	return src, nil
}

// Open returns the repository named by source. A local folder (a work tree or a bare repository) is opened in place.
// Anything else is taken as a git URL and cloned bare, once, into cacheDir/<CacheName(source)>; later calls reuse
// that clone (call Fetch when a wanted commit is missing from it). Concurrent calls for the same source are safe:
// the clone is made under a per-folder lock (in this process and, on unix, across processes) in a temporary folder
// that is renamed into place only when complete.
//
// Note: go-git clones file:// URLs by running git-upload-pack, so a file:// source needs git installed; network
// URLs (https, ssh) do not.
func Open(ctx context.Context, source, cacheDir string) (*git.Repository, error) {
	if strings.TrimSpace(source) == "" {
		return nil, errors.New("repo: empty source")
	}
	if fi, err := os.Stat(source); err == nil && fi.IsDir() {
		r, err := git.PlainOpen(source)
		if err != nil {
			return nil, fmt.Errorf("repo: opening %s: %w", source, err)
		}
		return r, nil
	}
	if cacheDir == "" {
		return nil, fmt.Errorf("repo: %s is not a local folder and no cache folder was given to clone it into", source)
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return nil, fmt.Errorf("repo: cache folder: %w", err)
	}
	dest := filepath.Join(cacheDir, CacheName(source))

	mu := folderLock(dest)
	mu.Lock()
	defer mu.Unlock()
	unlock, err := lockFile(dest + ".lock")
	if err != nil {
		return nil, fmt.Errorf("repo: locking %s: %w", dest, err)
	}
	defer unlock()

	if _, err := os.Stat(dest); err == nil {
		r, err := git.PlainOpen(dest)
		if err != nil {
			return nil, fmt.Errorf("repo: opening cached clone %s of %s: %w", dest, source, err)
		}
		return r, nil
	}
	tmp, err := os.MkdirTemp(cacheDir, filepath.Base(dest)+".clone-*")
	if err != nil {
		return nil, fmt.Errorf("repo: %w", err)
	}
	defer os.RemoveAll(tmp) // a no-op once renamed
	if _, err := git.PlainCloneContext(ctx, tmp, true, &git.CloneOptions{URL: source, Tags: git.AllTags}); err != nil {
		return nil, fmt.Errorf("repo: cloning %s: %w", source, err)
	}
	if err := os.Rename(tmp, dest); err != nil {
		return nil, fmt.Errorf("repo: %w", err)
	}
	r, err := git.PlainOpen(dest)
	if err != nil {
		return nil, fmt.Errorf("repo: opening fresh clone %s: %w", dest, err)
	}
	return r, nil
}

// Fetch updates a clone made by Open from its origin (all branches and tags). Being up to date is not an error.
func Fetch(ctx context.Context, r *git.Repository) error {
	err := r.FetchContext(ctx, &git.FetchOptions{
		RemoteName: "origin",
		RefSpecs:   []config.RefSpec{"+refs/heads/*:refs/remotes/origin/*"},
		Tags:       git.AllTags,
	})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return fmt.Errorf("repo: fetching origin: %w", err)
	}
	return nil
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// CacheName is the folder name Open uses for a clone of source: a readable part derived from the URL plus a short
// hash of the whole URL, so distinct URLs never share a folder.
func CacheName(source string) string {
	s := source
	if i := strings.Index(s, "://"); i >= 0 {
		s = s[i+3:]
	}
	if at := strings.LastIndex(s, "@"); at >= 0 {
		s = s[at+1:] // drop user@ (and any credentials) from the readable part
	}
	s = strings.TrimSuffix(strings.TrimRight(s, "/"), ".git")
	s = strings.Trim(unsafeChars.ReplaceAllString(s, "_"), "._-")
	if len(s) > 80 {
		s = s[len(s)-80:]
	}
	if s == "" {
		s = "repo"
	}
	sum := sha256.Sum256([]byte(source))
	return s + "-" + hex.EncodeToString(sum[:5]) + ".git"
}

var folderLocks sync.Map // string -> *sync.Mutex

func folderLock(path string) *sync.Mutex {
	m, _ := folderLocks.LoadOrStore(path, new(sync.Mutex))
	return m.(*sync.Mutex)
}
