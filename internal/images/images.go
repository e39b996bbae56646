// Package images makes Docker images for grading offline, on machines that reach no container registry: a base
// image per language from a Debian debootstrap folder (Debian's python3, pytest and git; for Go, the host's Go
// toolchain copied in read-only with a warmed build cache), and instance images holding a repository at its
// base_commit in /testbed, named as the docker grading executor looks them up. The debootstrap folder and the base
// images are cached on the machine, keyed by their contents, so only the first build pays for them.
package images

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Languages of base images.
const (
	LangGo     = "go"
	LangPython = "python"
)

// Packages are the Debian packages of every base image beside minbase: Python's test runner and git, which the
// harness-shaped eval script needs, and pip with `python`, which the install and test commands a row's
// install_config states (`pip install -e .`, `python -m pytest`) run.
var Packages = []string{"python3", "python3-pytest", "git", "ca-certificates", "python3-pip", "python-is-python3"}

// pythonEnv is the environment of the Python base image. An image is one grade's environment, as the harness's conda
// environment is, so pip installs into Debian's python3 as root (PEP 668 would refuse it, and pip warn about root,
// as on a shared system); offline, since containers have no network: what a repository's install needs beyond
// itself must be in the image.
var pythonEnv = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8",
	"PIP_BREAK_SYSTEM_PACKAGES=1", "PIP_ROOT_USER_ACTION=ignore"}

// GoModCache is the module cache of Go images: instance images hold there the modules their repository requires,
// since the container has no network (GOPROXY=off).
const GoModCache = "/root/go/pkg/mod"

// goImageRev changes when the Go image's recipe (its environment, the warm-up) changes, so cached ones are rebuilt.
const goImageRev = "2"

// Suite and Mirror are where debootstrap downloads from; CTXLAB_DEBIAN_MIRROR overrides the mirror.
const Suite = "bookworm"

// Mirror is Debian's mirror of debootstrap.
func Mirror() string {
	if m := os.Getenv("CTXLAB_DEBIAN_MIRROR"); m != "" {
		return m
	}
	return "http://deb.debian.org/debian"
}

// CacheDir is where debootstrap folders are kept: CTXLAB_CACHE, else /var/cache/ctxlab when writable, else the
// user's cache folder.
func CacheDir() (string, error) {
	if d := os.Getenv("CTXLAB_CACHE"); d != "" {
		return d, os.MkdirAll(d, 0o755)
	}
	if err := os.MkdirAll("/var/cache/ctxlab", 0o755); err == nil {
		if f, err := os.CreateTemp("/var/cache/ctxlab", ".probe-"); err == nil {
			f.Close()
			os.Remove(f.Name())
			return "/var/cache/ctxlab", nil
		}
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	d = filepath.Join(d, "ctxlab")
	return d, os.MkdirAll(d, 0o755)
}

// Builder runs the docker CLI.
type Builder struct {
	// Docker is the docker program (default "docker").
	Docker string
	// Log receives progress lines (nil: discarded).
	Log io.Writer
	// Labels are docker create flags ("--label", "k=v", ...) for the temporary containers of a build, naming the
	// building process, so that a later build removes those of a builder killed mid-build
	// (executor.ContainerLabels and executor.RemoveStaleContainers).
	Labels []string
}

func (b Builder) logf(format string, args ...any) {
	if b.Log != nil {
		fmt.Fprintf(b.Log, format+"\n", args...)
	}
}

func (b Builder) docker(ctx context.Context, stdin io.Reader, args ...string) (string, error) {
	bin := b.Docker
	if bin == "" {
		bin = "docker"
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdin = stdin
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("docker %s: %w: %s", strings.Join(args[:min(2, len(args))], " "), err,
			strings.TrimSpace(out.String()))
	}
	return strings.TrimSpace(out.String()), nil
}

// Exists reports whether an image is on this machine's engine.
func (b Builder) Exists(ctx context.Context, image string) bool {
	_, err := b.docker(ctx, nil, "image", "inspect", "--format", "{{.Id}}", image)
	return err == nil
}

func key(parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(h[:])[:12]
}

// goroot is the host's Go toolchain folder and its version.
func goroot() (string, string, error) {
	out, err := exec.Command("go", "env", "GOROOT", "GOVERSION").Output()
	if err != nil {
		return "", "", fmt.Errorf("go env GOROOT (a Go base image copies the host's toolchain): %w", err)
	}
	f := strings.Fields(string(out))
	if len(f) != 2 {
		return "", "", fmt.Errorf("go env GOROOT GOVERSION: unexpected output %q", out)
	}
	return f[0], f[1], nil
}

// BaseName is the name of ctxlab's base image of a language on this machine (it depends on the package list and,
// for Go, on the host's Go version).
func BaseName(lang string) (string, error) {
	switch lang {
	case LangPython:
		return "ctxlab/base-python:" + key(Suite, strings.Join(Packages, ","), strings.Join(pythonEnv, ",")), nil
	case LangGo:
		_, version, err := goroot()
		if err != nil {
			return "", err
		}
		return "ctxlab/base-go:" + key(Suite, strings.Join(Packages, ","), version, runtime.GOARCH, goImageRev), nil
	}
	return "", fmt.Errorf("no base image for language %q (known: go, python)", lang)
}

// lock takes an exclusive lock on a file of the cache folder, so concurrent test processes build once.
func lock(dir, name string) (func(), error) {
	f, err := os.OpenFile(filepath.Join(dir, name+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", f.Name(), err)
	}
	return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}

// rootfs returns the cached debootstrap folder of the base images, making it when missing.
func (b Builder) rootfs(ctx context.Context) (string, error) {
	return Debootstrap(ctx, b.Log, Suite, Packages, "usr/bin/python3")
}

// DebootstrapDir is where Debootstrap keeps the folder of a suite and packages (which may not exist yet).
func DebootstrapDir(suite string, packages []string) (string, error) {
	cache, err := CacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(cache, "debootstrap-"+suite+"-"+key(suite, strings.Join(packages, ","))), nil
}

// Debootstrap returns a minbase folder of a Debian suite with packages, made once per machine in CacheDir under a
// name keyed by the suite and the package list (so concurrent processes build it once, and another list makes
// another folder). probe is a path inside it that only a finished folder has; the folder is made under a temporary
// name and renamed when done, so a killed debootstrap leaves nothing that passes for it. Progress goes to log.
func Debootstrap(ctx context.Context, log io.Writer, suite string, packages []string, probe string) (string, error) {
	dir, err := DebootstrapDir(suite, packages)
	if err != nil {
		return "", err
	}
	cache := filepath.Dir(dir)
	unlock, err := lock(cache, filepath.Base(dir))
	if err != nil {
		return "", err
	}
	defer unlock()
	if _, err := os.Stat(filepath.Join(dir, probe)); err == nil {
		return dir, nil
	}
	if _, err := exec.LookPath("debootstrap"); err != nil {
		return "", fmt.Errorf("debootstrap is not installed (apt-get install -y debootstrap): %w", err)
	}
	tmp := dir + ".tmp"
	os.RemoveAll(tmp)
	if log != nil {
		fmt.Fprintf(log, "images: debootstrap %s into %s (a few minutes, once per machine)\n", suite, dir)
	}
	cmd := exec.CommandContext(ctx, "debootstrap", "--variant=minbase", "--include="+strings.Join(packages, ","),
		suite, tmp, Mirror())
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(tmp)
		tail := out
		if len(tail) > 2000 {
			tail = tail[len(tail)-2000:]
		}
		return "", fmt.Errorf("debootstrap %s from %s: %w: %s", suite, Mirror(), err, tail)
	}
	// Caches of apt hold the downloaded packages: not needed in an image.
	os.RemoveAll(filepath.Join(tmp, "var/cache/apt/archives"))
	if _, err := os.Stat(filepath.Join(tmp, probe)); err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("debootstrap %s with %s made no %s", suite, strings.Join(packages, ","), probe)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return "", err
	}
	return dir, nil
}

// Base returns ctxlab's base image of a language, building it when the engine lacks it.
func (b Builder) Base(ctx context.Context, lang string) (string, error) {
	name, err := BaseName(lang)
	if err != nil {
		return "", err
	}
	if b.Exists(ctx, name) {
		return name, nil
	}
	rootfs, err := b.rootfs(ctx)
	if err != nil {
		return "", err
	}
	cache, err := CacheDir()
	if err != nil {
		return "", err
	}
	unlock, err := lock(cache, "image-"+strings.NewReplacer("/", "_", ":", "_").Replace(name))
	if err != nil {
		return "", err
	}
	defer unlock()
	if b.Exists(ctx, name) {
		return name, nil
	}
	start := time.Now()
	if lang == LangPython {
		if err := b.importDir(ctx, rootfs, name, pythonEnv); err != nil {
			return "", err
		}
		b.logf("images: built %s in %s", name, time.Since(start).Round(time.Second))
		return name, nil
	}
	gr, _, err := goroot()
	if err != nil {
		return "", err
	}
	// The Go image: the rootfs with the host's toolchain in /usr/local/go, read-only; no C compiler, so no cgo;
	// no network, so no module downloads and no toolchain switch.
	env := []string{"PATH=/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"LANG=C.UTF-8", "CGO_ENABLED=0", "GOTOOLCHAIN=local", "GOPROXY=off", "GOSUMDB=off", "GOFLAGS=-mod=mod",
		"GOCACHE=/root/.cache/go-build", "GOMODCACHE=" + GoModCache, "HOME=/root"}
	stageName := strings.Replace(name, ":", "-stage:", 1)
	if err := b.importWithGo(ctx, rootfs, gr, stageName, env); err != nil {
		return "", err
	}
	defer b.docker(context.WithoutCancel(ctx), nil, "image", "rm", "-f", stageName)
	// Warm the build cache with the standard library a small module's tests use, so grading does not compile it.
	ctr := "ctxlab-warm-" + key(name, fmt.Sprint(time.Now().UnixNano()))
	warm := `set -e; mkdir -p /tmp/warm && cd /tmp/warm && printf 'module warm\ngo 1.21\n' > go.mod &&
printf 'package warm\nimport (\n"encoding/json"\n"fmt"\n"os"\n"sort"\n"strconv"\n"strings"\n"errors"\n"bytes"\n"io"\n"time"\n"sync"\n"regexp"\n"math"\n"unicode"\n"path/filepath"\n)\nvar _ = []any{json.Marshal, fmt.Sprint, os.Exit, sort.Ints, strconv.Itoa, strings.Cut, errors.New, bytes.NewReader, io.Copy, time.Now, sync.NewCond, regexp.MustCompile, math.Abs, unicode.IsDigit, filepath.Join}\n' > warm.go &&
printf 'package warm\nimport "testing"\nfunc TestWarm(t *testing.T) {}\n' > warm_test.go &&
go test -json ./... >/dev/null && go vet ./... && cd / && rm -rf /tmp/warm`
	run := append(append([]string{"run", "--name", ctr, "--network", "none"}, b.Labels...), stageName, "/bin/bash", "-c", warm)
	if _, err := b.docker(ctx, nil, run...); err != nil {
		b.docker(context.WithoutCancel(ctx), nil, "rm", "-f", "-v", ctr)
		return "", fmt.Errorf("warming the Go build cache of %s: %w", name, err)
	}
	defer b.docker(context.WithoutCancel(ctx), nil, "rm", "-f", "-v", ctr)
	if _, err := b.docker(ctx, nil, "commit", "--change", "CMD [\"/bin/bash\"]", ctr, name); err != nil {
		return "", err
	}
	b.logf("images: built %s in %s", name, time.Since(start).Round(time.Second))
	return name, nil
}

// importDir imports a folder as an image, with the given environment.
func (b Builder) importDir(ctx context.Context, dir, name string, env []string) error {
	tar := exec.CommandContext(ctx, "tar", "-C", dir, "-c", ".")
	return b.importTar(ctx, tar, name, env)
}

// importWithGo imports the rootfs with the Go toolchain at usr/local/go, through one tar stream (the rootfs is
// shared between images and stays untouched).
func (b Builder) importWithGo(ctx context.Context, rootfs, gr, name string, env []string) error {
	stage, err := os.MkdirTemp("", "ctxlab-goroot-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(stage)
	dst := filepath.Join(stage, "usr/local/go")
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	// Only what building and testing need: no api, doc, test or misc folders.
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	for _, part := range []string{"bin", "pkg", "src", "lib", "go.env", "VERSION"} {
		if _, err := os.Stat(filepath.Join(gr, part)); err != nil {
			continue
		}
		if out, err := exec.CommandContext(ctx, "cp", "-a", filepath.Join(gr, part), dst+"/").CombinedOutput(); err != nil {
			return fmt.Errorf("copying %s of the Go toolchain: %w: %s", part, err, out)
		}
	}
	if out, err := exec.CommandContext(ctx, "chmod", "-R", "a-w", dst).CombinedOutput(); err != nil {
		return fmt.Errorf("making the Go toolchain read-only: %w: %s", err, out)
	}
	// One tar stream with two roots: the shared rootfs stays untouched.
	tar := exec.CommandContext(ctx, "tar", "-c", "-C", rootfs, ".", "-C", stage, "./usr/local/go")
	return b.importTar(ctx, tar, name, env)
}

func (b Builder) importTar(ctx context.Context, tar *exec.Cmd, name string, env []string) error {
	pipe, err := tar.StdoutPipe()
	if err != nil {
		return err
	}
	var tarErr bytes.Buffer
	tar.Stderr = &tarErr
	if err := tar.Start(); err != nil {
		return err
	}
	args := []string{"import"}
	for _, e := range env {
		args = append(args, "--change", "ENV "+e)
	}
	args = append(args, "--change", `CMD ["/bin/bash"]`, "-", name)
	_, err = b.docker(ctx, pipe, args...)
	werr := tar.Wait()
	if err != nil {
		return fmt.Errorf("importing %s: %w", name, err)
	}
	if werr != nil {
		return fmt.Errorf("tar for %s: %w: %s", name, werr, tarErr.String())
	}
	return nil
}

// Instance builds an image holding repoDir (a git repository checked out at the instance's base_commit) at
// /testbed, on a base image; extra maps more folders of the image to host folders copied there (a module cache).
func (b Builder) Instance(ctx context.Context, base, repoDir, name string, extra map[string]string) error {
	ctr := "ctxlab-build-" + key(name, fmt.Sprint(time.Now().UnixNano()))
	create := append(append([]string{"create", "--name", ctr, "--network", "none"}, b.Labels...), base, "/bin/true")
	if _, err := b.docker(ctx, nil, create...); err != nil {
		return fmt.Errorf("image %s: %w", name, err)
	}
	defer b.docker(context.WithoutCancel(ctx), nil, "rm", "-f", "-v", ctr)
	if _, err := b.docker(ctx, nil, "cp", filepath.Clean(repoDir)+"/.", ctr+":/testbed"); err != nil {
		return fmt.Errorf("image %s: copying the repository: %w", name, err)
	}
	for dst, src := range extra {
		if _, err := b.docker(ctx, nil, "cp", filepath.Clean(src)+"/.", ctr+":"+dst); err != nil {
			return fmt.Errorf("image %s: copying %s: %w", name, dst, err)
		}
	}
	if _, err := b.docker(ctx, nil, "commit", "--change", "WORKDIR /testbed", "--change", `CMD ["/bin/bash"]`, ctr, name); err != nil {
		return fmt.Errorf("image %s: %w", name, err)
	}
	return nil
}

// PullError is an image the registry would not give: the image, what the refusal means (Reason) and the docker
// CLI's own last words.
type PullError struct {
	Image, Reason, Output string
	Err                   error
}

func (e *PullError) Error() string {
	return fmt.Sprintf("docker pull %s: %s: %s", e.Image, e.Reason, e.Output)
}

func (e *PullError) Unwrap() error { return e.Err }

// pullRefusals map what the docker CLI and the registry say to what a researcher should hear, first match wins.
var pullRefusals = []struct{ says, means string }{
	{"manifest unknown", "the registry has no such image or tag"},
	{"pull access denied", "the registry refused it (no such repository, or it needs a login: docker login)"},
	{"not found", "the registry has no such image or tag"},
	{"unauthorized", "the registry refused it without credentials (docker login)"},
	{"denied", "the registry refused it (docker login, or no access to the repository)"},
	{"toomanyrequests", "the registry's rate limit was reached (log in, or pull fewer at once)"},
	{"connection refused", "no registry answers at that address"},
	{"no such host", "the registry's host name does not resolve (no network, or a wrong namespace)"},
	{"i/o timeout", "the registry did not answer in time (no network?)"},
	{"server gave HTTP response to HTTPS client", "the registry speaks plain HTTP: list it in the engine's insecure-registries"},
	{"x509", "the registry's TLS certificate is not trusted"},
	{"no space left on device", "the engine's disk is full"},
}

// refusal says what a failed pull's output means.
func refusal(out string) string {
	low := strings.ToLower(out)
	for _, r := range pullRefusals {
		if strings.Contains(low, strings.ToLower(r.says)) {
			return r.means
		}
	}
	return "the pull failed"
}

// Pull pulls the images the engine lacks, concurrency at once (at least one), as the SWE-bench harness pulls its
// instance images before running them, saying on b.Log what it pulls and how each ends. It returns the images it
// pulled and one PullError for each it could not; the others were there already.
func (b Builder) Pull(ctx context.Context, images []string, concurrency int) (pulled []string, failed []error) {
	var missing []string
	for _, img := range images {
		if !slices.Contains(missing, img) && !b.Exists(ctx, img) {
			missing = append(missing, img)
		}
	}
	if len(missing) == 0 {
		return nil, nil
	}
	concurrency = max(1, min(concurrency, len(missing)))
	b.logf("images: pulling %d image(s) the engine lacks, %d at once", len(missing), concurrency)
	var mu sync.Mutex
	var done int
	sem := make(chan struct{}, concurrency)
	var wg sync.WaitGroup
	for _, img := range missing {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			start := time.Now()
			out, err := b.docker(ctx, nil, "pull", "--quiet", img)
			mu.Lock()
			defer mu.Unlock()
			done++
			if err != nil {
				last := lastLine(out)
				failed = append(failed, &PullError{Image: img, Reason: refusal(out), Output: last, Err: err})
				b.logf("images: [%d/%d] %s not pulled: %s (%s)", done, len(missing), img, refusal(out), last)
				return
			}
			pulled = append(pulled, img)
			b.logf("images: [%d/%d] pulled %s in %s", done, len(missing), img, time.Since(start).Round(100*time.Millisecond))
		}()
	}
	wg.Wait()
	slices.Sort(pulled)
	slices.SortFunc(failed, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return pulled, failed
}

// lastLine is the last non-empty line of a command's output, shortened.
func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}
