// Package imagebuild makes the docker executor's instance images: it pulls the published ones an engine lacks, as
// the harness does, and builds one for a dataset that publishes none (the repository at base_commit in /testbed,
// with, for Go, the modules it requires in the module cache, since containers have no network), under the name the
// executor looks up (executor.ImageOf). internal/images holds the engine's side (pull, import, base images).
package imagebuild

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"ctxlab/dataset/swebench"
	"ctxlab/grading/executor"
	"ctxlab/internal/images"
)

// Build makes the image name of instance in on b: its repository cloned from src (a folder or git URL) at
// base_commit, on base (empty: the base image of its language, built once per language into bases). goproxy,
// when set, is where the Go modules it requires are downloaded from.
func Build(ctx context.Context, b images.Builder, in swebench.Instance, src, name, goproxy, base string,
	bases map[string]string) error {
	tmp, err := os.MkdirTemp("", "ctxlab-image-")
	if err != nil {
		return err
	}
	defer removeAllWritable(tmp)
	dir := filepath.Join(tmp, "testbed")
	if out, err := exec.CommandContext(ctx, "git", "clone", "-q", "--no-checkout", "--", src, dir).CombinedOutput(); err != nil {
		return fmt.Errorf("git clone %s: %w: %s", src, err, out)
	}
	if out, err := exec.CommandContext(ctx, "git", "-C", dir, "checkout", "-q", "--detach", in.BaseCommit).CombinedOutput(); err != nil {
		return fmt.Errorf("git checkout %s in %s: %w: %s", in.BaseCommit, src, err, out)
	}
	lang := executor.LanguageOf(dir)
	extra := map[string]string{}
	if lang == executor.LangGo {
		// The modules the repository requires, downloaded on this side into the image's module cache.
		gopath := filepath.Join(tmp, "gopath")
		cmd := exec.CommandContext(ctx, "go", "mod", "download", "all")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOMODCACHE="+filepath.Join(gopath, "pkg", "mod"), "GOFLAGS=-mod=mod",
			"GOSUMDB=off", "GOTOOLCHAIN=local")
		if goproxy != "" {
			cmd.Env = append(cmd.Env, "GOPROXY="+goproxy)
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go mod download in %s at %s: %w: %s", in.Repo, in.BaseCommit, err, out)
		}
		if _, err := os.Stat(gopath); err == nil {
			extra[strings.TrimSuffix(images.GoModCache, "/pkg/mod")] = gopath
		}
	}
	if base == "" {
		if base = bases[lang]; base == "" {
			if base, err = b.Base(ctx, lang); err != nil {
				return err
			}
			bases[lang] = base
		}
	}
	return b.Instance(ctx, base, dir, name, extra)
}

// removeAllWritable removes a folder holding a Go module cache, whose files and folders are read-only.
func removeAllWritable(dir string) {
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o755)
		}
		return nil
	})
	_ = os.RemoveAll(dir)
}

// PullMissing pulls the images of instances that the engine lacks (images.Builder.Pull), listing each pulled
// one on stdout; the error names every image that could not be pulled and why.
func PullMissing(ctx context.Context, b images.Builder, namespace string, instances []swebench.Instance,
	concurrency int, stdout io.Writer) error {
	byImage := map[string][]string{}
	var names []string
	for _, in := range instances {
		img := executor.ImageOf(namespace, in)
		if byImage[img] == nil {
			names = append(names, img)
		}
		byImage[img] = append(byImage[img], in.InstanceID)
	}
	pulled, failed := b.Pull(ctx, names, concurrency)
	for _, img := range pulled {
		fmt.Fprintf(stdout, "%s\t%s\tpulled\n", strings.Join(byImage[img], ","), img)
	}
	if len(failed) == 0 {
		return nil
	}
	lines := make([]string, len(failed))
	for i, err := range failed {
		var pe *images.PullError
		if errors.As(err, &pe) {
			lines[i] = fmt.Sprintf("  instance %s: %v", strings.Join(byImage[pe.Image], ","), err)
		} else {
			lines[i] = "  " + err.Error()
		}
	}
	return fmt.Errorf("%d of %d image(s) could not be pulled (for a dataset that publishes no images, starter "+
		"images build makes them):\n%s", len(failed), len(names), strings.Join(lines, "\n"))
}
