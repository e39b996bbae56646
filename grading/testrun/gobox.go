package testrun

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"ctxlab/grading/sandbox"
)

// goToolchain is the go command the grader builds with: its binary and its GOROOT, asked once per process. The
// tests get the same one first on their PATH, as go test puts $GOROOT/bin first.
type goToolchain struct{ bin, root string }

var (
	toolchainOnce sync.Once
	toolchainGo   goToolchain
	toolchainErr  error
)

func toolchain() (goToolchain, error) {
	toolchainOnce.Do(func() {
		bin, err := exec.LookPath("go")
		if err != nil {
			toolchainErr = fmt.Errorf("testrun: no go command: %w", err)
			return
		}
		if bin, err = filepath.Abs(bin); err != nil {
			toolchainErr = fmt.Errorf("testrun: go command: %w", err)
			return
		}
		cmd := exec.Command(bin, "env", "GOROOT")
		cmd.Env, cmd.Dir = Env(nil), os.TempDir() // no go.mod around that could name another toolchain
		out, err := cmd.Output()
		root := strings.TrimSpace(string(out))
		if err != nil || !filepath.IsAbs(root) {
			toolchainErr = fmt.Errorf("testrun: go env GOROOT: %v %s", err, out)
			return
		}
		toolchainGo = goToolchain{bin: bin, root: root}
	})
	return toolchainGo, toolchainErr
}

// goRun is one Go run's setting: where the caches and the binaries are, the go command's environment, and the box
// its builds and tests run in.
type goRun struct {
	o        Options
	layout   GoLayout
	events   *eventWriter
	tc       goToolchain
	box      *sandbox.Box
	isolated bool
	// binDir holds the binaries the tests run, the grader's own and not writable by the tests. An isolated build
	// writes into buildDir, in the box's private folder, and the grader moves each binary here before any test runs.
	binDir   string
	buildDir string
	modCache string
	goCache  string
	// env is the go command's environment for the builds and for the tests, which therefore see the module cache,
	// the build cache and the flags their test binary was built with (a test that runs go build finds what the
	// grade downloaded and compiled), but for GOFLAGS' -mod, which is each module's (envFor).
	env []string
	// selfTimedOut: a test binary stopped at its own -test.timeout.
	selfTimedOut bool
}

// newGoRun prepares a Go run of o: the binaries' folder, the caches and the box. With isolation (o.Isolate where
// the sandbox is available) the module cache is the graded runs' own (gradedModCache), written only by the
// sandbox's uid in go mod download's box (download) and read-only to the builds and tests; the grader's build
// cache is shown through a private writable layer (go build writes there), warm, and what the builds add to it is
// copied into it before any test runs (keepBuilds), so that dependencies compile once per machine, not once per
// grade, while nothing the tests write reaches it.
func newGoRun(ctx context.Context, o Options, layout GoLayout, events *eventWriter) (*goRun, error) {
	tc, err := toolchain()
	if err != nil {
		return nil, err
	}
	g := &goRun{o: o, layout: layout, events: events, tc: tc}
	if o.Isolate {
		g.isolated, _ = sandbox.Available()
	}
	if g.modCache, err = g.moduleCache(ctx); err != nil {
		return nil, err
	}
	g.goCache = envValue(Env(o.ExtraEnv), "GOCACHE")
	vars := []string{"PATH=" + filepath.Join(tc.root, "bin") + string(os.PathListSeparator) + os.Getenv("PATH"),
		"GOMODCACHE=" + g.modCache}
	if !layout.Workspace {
		// A go.work the repository did not have at base (the model patch's) is not read.
		vars = append(vars, "GOWORK=off")
	}
	g.env = Env(append(vars, o.ExtraEnv...))

	if g.binDir, err = os.MkdirTemp("", binPrefix); err != nil {
		return nil, fmt.Errorf("testrun: %w", err)
	}
	// Test binaries may run as another user: they must be readable and executable by it, and not writable.
	if err := os.Chmod(g.binDir, 0o755); err != nil {
		g.close()
		return nil, fmt.Errorf("testrun: %w", err)
	}
	so := sandbox.Options{Disable: !o.Isolate}
	if g.isolated {
		dirs := append(append([]string{}, o.ReadOnly...), g.binDir, g.modCache, tc.root, runtime.GOROOT(),
			envValue(g.env, "GOROOT"))
		for _, d := range dirs {
			if fi, err := os.Stat(d); err == nil && fi.IsDir() && sandbox.Reachable(d) {
				so.ReadOnly = append(so.ReadOnly, d)
			}
		}
		if filepath.IsAbs(g.goCache) {
			if err := os.MkdirAll(g.goCache, 0o755); err == nil && sandbox.Reachable(g.goCache) {
				so.Overlay = append(so.Overlay, g.goCache)
			}
		}
	}
	// The box is made after the binaries' folder exists, so that they stay reachable under a private /tmp.
	if g.box, err = sandbox.New(o.Dir, so); err != nil {
		g.close()
		return nil, fmt.Errorf("testrun: %w", err)
	}
	if g.box.Isolation() == sandbox.IsolationNamespaces {
		g.buildDir = filepath.Join(g.box.TempDir(), "bin")
		if err := ownedDir(g.buildDir, g.box.UID()); err != nil {
			g.close()
			return nil, err
		}
		if len(so.Overlay) == 0 {
			// A build cache the uid cannot reach: a cold one of the box's own (slow, but the builds work).
			cold := filepath.Join(g.box.TempDir(), "gocache")
			if err := ownedDir(cold, g.box.UID()); err != nil {
				g.close()
				return nil, err
			}
			g.env = Env(append(g.env, "GOCACHE="+cold))
		}
	}
	return g, nil
}

func (g *goRun) close() {
	if g.box != nil {
		g.box.Close()
	}
	if g.binDir != "" {
		os.RemoveAll(g.binDir)
	}
}

// envFor is the go commands' and the tests' environment in module m: env with GOFLAGS' -mod as go test's would be
// for it: -mod=mod (go.mod and go.sum may be completed from the module cache) for a module that does not vendor its
// requirements, none in a workspace (which refuses -mod=mod) or a vendored module (go test then builds from
// vendor/). The caller's own GOFLAGS (Options.ExtraEnv) still wins.
func (g *goRun) envFor(m *GoModule) []string {
	mod := "mod"
	if g.layout.Workspace || m.Vendored {
		mod = ""
	}
	return Env(append(append(slices.Clone(g.env), goFlags(mod)), g.o.ExtraEnv...))
}

// moduleCache is the module cache the run downloads into and builds and tests from: GOMODCACHE of o.ExtraEnv when
// set; with isolation the graded runs' own (gradedModCache); else the worker's.
func (g *goRun) moduleCache(ctx context.Context) (string, error) {
	if c := envValue(g.o.ExtraEnv, "GOMODCACHE"); c != "" {
		return c, nil
	}
	if g.isolated {
		c, err := gradedModCache()
		if err != nil {
			return "", err
		}
		if err := os.MkdirAll(c, 0o755); err != nil {
			return "", fmt.Errorf("testrun: the graded runs' module cache: %w", err)
		}
		return c, nil
	}
	return workerModCache(ctx, g.o.ExtraEnv)
}

// gradedModCache is the module cache of isolated runs, beside the worker's other caches: the sandbox's uid owns
// what is in it (go mod download writes it in a box that runs nothing else), and every build and test reads it
// read-only.
func gradedModCache() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("testrun: no cache folder for the graded runs' module cache: %w", err)
	}
	return filepath.Join(dir, "ctxlab", "gomodcache-"+strconv.Itoa(sandbox.DefaultUID)), nil
}

// cacheEntry is the name of a file of the go command's build cache: a two-hex-digit folder, a sha256 in hex, and
// -a (an action's index entry) or -d (its output).
var cacheEntry = regexp.MustCompile(`^[0-9a-f]{2}/[0-9a-f]{64}-[ad]$`)

// keepBuilds copies into the grader's build cache what the box's builds added to it (its private layer's cache
// entries, regular files only, none the cache already has), each written whole and renamed into place as the go
// command writes its own. It runs after the builds and before any test, so only what the go command and its
// compilers wrote is kept: a test's writes stay in the private layer, which Close discards.
func (g *goRun) keepBuilds() {
	upper := g.box.OverlayUpper(g.goCache)
	if upper == "" {
		return
	}
	kept := 0
	_ = filepath.WalkDir(upper, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !d.Type().IsRegular() {
			return nil
		}
		rel, _ := filepath.Rel(upper, p)
		if !cacheEntry.MatchString(filepath.ToSlash(rel)) {
			return nil
		}
		dst := filepath.Join(g.goCache, rel)
		if _, err := os.Lstat(dst); err == nil {
			return nil
		}
		if copyNoFollow(p, dst) == nil {
			kept++
		}
		return nil
	})
	if kept > 0 {
		g.events.note(fmt.Sprintf("ctxlab: %d build cache entries kept for later grades\n", kept))
	}
}

// copyNoFollow copies the regular file src (never through a symbolic link) to dst by way of a temporary file beside
// it, readable by all.
func copyNoFollow(src, dst string) error {
	in, err := os.OpenFile(src, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	if fi, err := in.Stat(); err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", src)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".ctxlab-keep-*")
	if err != nil {
		return err
	}
	_, err = io.Copy(tmp, in)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), dst)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// workerModCache is the module cache the worker's go command uses (with extra in its environment).
func workerModCache(ctx context.Context, extra []string) (string, error) {
	tc, err := toolchain()
	if err != nil {
		return "", err
	}
	out, err := trusted(ctx, os.TempDir(), Env(extra), tc.bin, "env", "GOMODCACHE")
	c := strings.TrimSpace(string(out))
	if err != nil || !filepath.IsAbs(c) {
		return "", fmt.Errorf("testrun: go env GOMODCACHE: %v %s", err, out)
	}
	return c, nil
}

// envValue is the value of k in env (the last one), "" when absent.
func envValue(env []string, k string) string {
	v := ""
	for _, kv := range env {
		if name, val, ok := strings.Cut(kv, "="); ok && name == k {
			v = val
		}
	}
	return v
}

// ownedDir makes dir (root's parents) and gives it to uid.
func ownedDir(dir string, uid int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("testrun: %w", err)
	}
	if err := os.Lchown(dir, uid, uid); err != nil {
		return fmt.Errorf("testrun: %w", err)
	}
	return nil
}

// boxOutput runs argv in box with env in dir and returns its combined output (head and tail kept within
// maxBoxOutput) and exit code.
func boxOutput(ctx context.Context, box *sandbox.Box, argv, env []string, dir string) ([]byte, int, error) {
	p, err := startContained(ctx, box, argv, dir, env)
	if err != nil {
		return nil, 0, err
	}
	out := newCapBuffer(maxBoxOutput)
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		_, _ = io.Copy(out, p.out)
	}()
	code := p.wait(readDone)
	return out.Bytes(), code, nil
}

// maxBoxOutput bounds what is kept of a build's or a download's output.
const maxBoxOutput = 256 << 10

// buildAll builds the test binaries of pkgs (go test -c -json -o DIR/ with as many packages at once as have
// distinct binary names, so that the go command builds them in parallel) and returns their paths, "" for a package
// whose build failed (recorded, with the compiler's text). The builds run as the tests do, isolated or not: they
// read what the model wrote (cgo sources and #cgo flags, assembly #includes, go.mod replacements), so with
// isolation they read it as the sandbox's uid, never as the grader.
func (g *goRun) buildAll(ctx context.Context, pkgs []*goPackage) []string {
	bins := make([]string, len(pkgs))
	var batches [][]int
	for i, p := range pkgs {
		placed := false
		for b, batch := range batches {
			if pkgs[batch[0]].mod == p.mod &&
				!slices.ContainsFunc(batch, func(j int) bool { return pkgs[j].binaryName() == p.binaryName() }) {
				batches[b] = append(batch, i)
				placed = true
				break
			}
		}
		if !placed {
			batches = append(batches, []int{i})
		}
	}
	for b, batch := range batches {
		g.buildBatch(ctx, strconv.Itoa(b), pkgs, batch, bins)
	}
	return bins
}

// buildBatch builds the binaries of pkgs[batch] (packages of one module) with one go command in their module's
// folder into binDir/name (by way of the box's build folder with isolation) and sets their paths in bins.
func (g *goRun) buildBatch(ctx context.Context, name string, pkgs []*goPackage, batch []int, bins []string) {
	final := filepath.Join(g.binDir, name)
	out := final
	failAll := func(err error) {
		for _, i := range batch {
			g.events.buildFailed(pkgs[i].importPath, fmt.Sprintf("ctxlab: building the tests of %s: %v\n", pkgs[i].importPath, err))
		}
	}
	if err := os.MkdirAll(final, 0o755); err != nil {
		failAll(err)
		return
	}
	if g.buildDir != "" {
		out = filepath.Join(g.buildDir, name)
		if err := ownedDir(out, g.box.UID()); err != nil {
			failAll(err)
			return
		}
	}
	args := append([]string{"test", "-c", "-json", "-vet=off"}, omitDebug()...)
	args = append(args, "-o", out+string(filepath.Separator))
	for _, i := range batch {
		args = append(args, pkgs[i].target())
	}
	var text []byte
	var err error
	mod := pkgs[batch[0]].mod
	dir, env := filepath.Join(g.o.Dir, filepath.FromSlash(mod.Dir)), g.envFor(mod)
	if g.buildDir != "" {
		var code int
		text, code, err = boxOutput(ctx, g.box, append([]string{g.tc.bin}, args...), env, dir)
		if err == nil && code != 0 {
			err = fmt.Errorf("exit status %d", code)
		}
	} else {
		text, err = trusted(ctx, dir, env, g.tc.bin, args...)
	}
	g.buildOutput(text, pkgs[batch[0]].importPath)
	for _, i := range batch {
		p := pkgs[i]
		bin := filepath.Join(final, p.binaryName())
		var merr error
		if g.buildDir != "" {
			merr = moveBinary(filepath.Join(out, p.binaryName()), bin)
		} else if merr = os.Chmod(bin, 0o755); merr != nil {
			merr = fmt.Errorf("no test binary was written: %w", merr)
		}
		if merr == nil {
			bins[i] = bin
			continue
		}
		why := merr
		if err != nil {
			why = err
		}
		msg := ""
		if ctx.Err() != nil || len(bytes.TrimSpace(text)) == 0 {
			msg = fmt.Sprintf("ctxlab: building the tests of %s: %v\n", p.importPath, why)
		}
		g.events.buildFailed(p.importPath, msg)
	}
}

// buildOutput passes the build's text to the events: the go command's build-output events as they are (their
// Output is what the compiler said), any other line (the go command's own errors) as build output of the batch's
// first package. Nothing else of it becomes an event: a build cannot report a test's result.
func (g *goRun) buildOutput(text []byte, first string) {
	var plain strings.Builder
	for _, line := range bytes.Split(text, []byte("\n")) {
		var ev struct{ Action, ImportPath, Output string }
		if json.Unmarshal(line, &ev) == nil && ev.Action == "build-output" {
			g.events.event(map[string]string{"Action": "build-output", "ImportPath": ev.ImportPath, "Output": ev.Output})
			continue
		}
		if json.Unmarshal(line, &ev) == nil && ev.Action != "" {
			continue // build-fail: the package's own fail event follows
		}
		if len(bytes.TrimSpace(line)) > 0 {
			plain.Write(line)
			plain.WriteByte('\n')
		}
	}
	if plain.Len() > 0 {
		g.events.event(map[string]string{"Action": "build-output", "ImportPath": first + ".test", "Output": plain.String()})
	}
}

// moveBinary moves a test binary the box's uid built into the grader's folder and makes it the grader's,
// read-only to the tests, so that no test can rewrite the binary of a package whose tests run later.
func moveBinary(src, dst string) error {
	fi, err := os.Lstat(src)
	if err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("no test binary was written: %v", err)
	}
	if err := os.Rename(src, dst); err != nil {
		if !errors.Is(err, syscall.EXDEV) {
			return err
		}
		if err := copyFile(src, dst); err != nil {
			return err
		}
	}
	if err := os.Lchown(dst, os.Getuid(), os.Getgid()); err != nil {
		return err
	}
	return os.Chmod(dst, 0o755)
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o700)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// testArgs are the arguments go test gives a test binary when run as `go test -json -count=1 -run=pattern`, in
// its order, each flag one -test.flag=value argument (cmd/go's test.go and testflag.go): -test.paniconexit0, then
// the injected -test.v=test2json and -test.timeout, then -test.count and -test.run. The timeout is the run's budget
// left less a tenth of it (at most a minute), so that a hanging binary stops itself with its goroutines' stacks
// before the run's deadline kills it, as go test's own kill comes a minute after -timeout.
func (g *goRun) testArgs(budget time.Time, pattern string) []string {
	left := time.Until(budget)
	timeout := (left - min(left/10, time.Minute)).Round(time.Second)
	args := []string{"-test.paniconexit0", "-test.v=test2json", "-test.timeout=" + max(timeout, time.Second).String(),
		"-test.count=1"}
	if pattern != "" {
		args = append(args, "-test.run="+pattern)
	}
	return args
}

// selfTimeout is what the testing package prints when a binary reaches its -test.timeout.
const selfTimeout = "panic: test timed out after "

// runBinary runs a test binary as go test runs it (testArgs; the package's folder as working directory and PWD;
// the go command's environment), contained, and converts its output with test2json. The binary's own output is
// the only source of events. It returns the binary's exit code.
func (g *goRun) runBinary(ctx, runCtx context.Context, bin string, p *goPackage, args []string) (int, error) {
	dir := filepath.Join(g.o.Dir, filepath.FromSlash(p.dir))
	proc, err := startContained(runCtx, g.box, append([]string{bin}, args...), dir, append(g.envFor(p.mod), "PWD="+dir))
	if err != nil {
		return 0, err
	}
	watch := &tailMatch{needle: []byte(selfTimeout)}
	// test2json is ours: it outlives the binary's deadline so that what the binary printed is still converted; it
	// ends when the binary's output does (bounded by drainWait in wait).
	var convErr bytes.Buffer
	start := func(direct bool) (*exec.Cmd, error) {
		// Not in the worker's folder, whose go.mod could ask for another toolchain.
		conv := test2jsonCommand(ctx, filepath.Dir(bin), direct, "-t", "-p", p.importPath)
		conv.Stdin = io.MultiReader(strings.NewReader(frameMarker), io.TeeReader(proc.out, watch))
		conv.Stdout = g.events
		conv.Stderr = &convErr
		return conv, conv.Start()
	}
	conv, err := start(true)
	if err != nil && conv.Args[0] != "go" {
		// The cached tool is gone (the build cache was cleaned): ask the go command again, now and next time.
		forgetTest2json()
		conv, err = start(false)
	}
	readDone := make(chan struct{})
	var runErr error
	if err != nil {
		close(readDone)
		runErr = fmt.Errorf("starting test2json: %w", err)
	} else {
		go func() {
			defer close(readDone)
			if err := conv.Wait(); err != nil && ctx.Err() == nil {
				runErr = fmt.Errorf("test2json: %w: %s", err, convErr.String())
			}
		}()
	}
	code := proc.wait(readDone)
	if watch.found && code != 0 {
		g.selfTimedOut = true
	}
	return code, runErr
}

// tailMatch records whether needle was written, across writes.
type tailMatch struct {
	needle []byte
	tail   []byte
	found  bool
}

func (m *tailMatch) Write(p []byte) (int, error) {
	if m.found {
		return len(p), nil
	}
	buf := append(m.tail, p...)
	if bytes.Contains(buf, m.needle) {
		m.found = true
	}
	keep := min(len(buf), len(m.needle)-1)
	m.tail = append(m.tail[:0], buf[len(buf)-keep:]...)
	return len(p), nil
}

// downloadEnv names the worker's variables the module download may need besides AllowedEnv (proxies, checksum
// database settings, private module patterns, certificates). Only the go command sees them, never a test.
var downloadEnv = []string{"GOSUMDB", "GONOSUMDB", "GOPRIVATE", "GONOPROXY", "GOINSECURE", "GOAUTH", "HTTP_PROXY",
	"HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy", "SSL_CERT_FILE", "SSL_CERT_DIR"}

// download fetches, before the offline builds, what the modules of pkgs need (needsDownload: a go.sum, or a go.mod
// with requirements: an older module comes without go.sum, and go mod download completes it), in each module's
// folder, or once at the root of a workspace; vendored modules need nothing. A module is downloaded once per
// content of the repository's module files (key, moduleFilesKey): a marker named by the key and the module's folder
// under the module cache records a finished download. The proxy is o.GoProxy, else the worker's GOPROXY; version
// control systems are never used (GOVCS=*:off), so a go.mod the model edited cannot make the grader run git against
// a host of its choosing. With isolation go mod download runs in a box of its own, as the sandbox's uid, with the
// network (and nothing else of the model's running), so that the go.mod files it reads (a replacement may name any
// folder) are read with that uid's rights; the proxy's folders (file:// entries) are shown to it read-only, and the
// worker's module cache is asked first. A failure is only logged: the offline build then fails and says what is
// missing (the grade step names that the machine's failure when the patch changed no module file).
func (g *goRun) download(ctx context.Context, pkgs []*goPackage, key [32]byte) {
	var mods []*GoModule
	for _, p := range pkgs {
		m := p.mod
		if g.layout.Workspace {
			m = g.layout.root() // the workspace's go.work is there
		}
		if !slices.Contains(mods, m) && (g.layout.Workspace || (!m.Vendored && needsDownload(g.o.Dir, *m))) {
			mods = append(mods, m)
		}
	}
	for _, m := range mods {
		g.downloadModule(ctx, m, key)
	}
}

// downloadModule runs go mod download in module m's folder (see download).
func (g *goRun) downloadModule(ctx context.Context, m *GoModule, key [32]byte) {
	where := ""
	if m.Dir != "." {
		where = " of " + m.Dir
	}
	mark := sha256.Sum256(append(key[:], m.Dir...))
	marker := filepath.Join(g.modCache, "cache", "ctxlab-downloaded", hex.EncodeToString(mark[:]))
	sums := g.sumFiles(m)
	if g.restoreSums(marker) {
		g.events.note("ctxlab: module requirements" + where + " already downloaded (module files sha256 " +
			hex.EncodeToString(key[:8]) + ")\n")
		return
	}
	proxy := g.o.GoProxy
	if proxy == "" {
		proxy = workerGoProxy()
	}
	if proxy == "" || proxy == "off" {
		g.events.note("ctxlab: no GOPROXY to download the module requirements" + where + " from\n")
		return
	}
	var box *sandbox.Box
	var err error
	if g.isolated {
		if box, err = sandbox.New(g.o.Dir, sandbox.Options{Network: true, Shared: []string{g.modCache},
			ReadOnly: []string{g.tc.root}}); err != nil {
			g.events.note(fmt.Sprintf("ctxlab: go mod download%s: %v\n", where, err))
			return
		}
		defer box.Close()
		if proxy, err = proxyViews(box, proxy, g.modCache); err != nil {
			g.events.note(fmt.Sprintf("ctxlab: go mod download%s: %v\n", where, err))
			return
		}
	}
	extra := []string{"GOPROXY=" + proxy, "GOVCS=*:off", "GOMODCACHE=" + g.modCache}
	if g.layout.Workspace {
		extra = append(extra, goFlags(""))
	} else {
		extra = append(extra, goFlags("mod"), "GOWORK=off")
	}
	for _, k := range downloadEnv {
		if v, ok := os.LookupEnv(k); ok {
			extra = append(extra, k+"="+v)
		}
	}
	env := Env(append(extra, g.o.ExtraEnv...))
	dir := filepath.Join(g.o.Dir, filepath.FromSlash(m.Dir))
	args := []string{"mod", "download"}
	if strings.TrimSpace(sums[path.Join(m.Dir, "go.sum")]) == "" {
		// Without arguments go mod download records only the go.mod files' checksums; the build list's zips' are
		// what an offline build without go.sum lacks.
		args = append(args, "all")
	}
	var out []byte
	if box != nil {
		var code int
		out, code, err = boxOutput(ctx, box, append([]string{g.tc.bin}, args...), env, dir)
		if err == nil && code != 0 {
			err = fmt.Errorf("exit status %d", code)
		}
	} else {
		out, err = trusted(ctx, dir, env, g.tc.bin, args...)
	}
	if err != nil {
		// The proxy itself is not logged: its URL may carry credentials.
		g.events.note(fmt.Sprintf("ctxlab: go mod download%s: %v\n%s", where, err, out))
		return
	}
	g.keepSums(marker, sums)
	g.events.note("ctxlab: module requirements" + where + " downloaded\n")
}

// sumFiles are the checksum files a download in module m may write (slash-separated, relative to the repository
// root), with their content now: the module's go.sum, and in a workspace the root's go.work.sum.
func (g *goRun) sumFiles(m *GoModule) map[string]string {
	files := map[string]string{path.Join(m.Dir, "go.sum"): ""}
	if g.layout.Workspace {
		files["go.work.sum"] = ""
	}
	for f := range files {
		b, _ := readRegular(filepath.Join(g.o.Dir, filepath.FromSlash(f)))
		files[f] = string(b)
	}
	return files
}

// keepSums writes the download's marker: the checksum files of before (sumFiles) that the download changed, as
// they are now. A module that comes without go.sum (or with one that lacks lines) is completed by go mod download
// from the checksum database, which the offline build cannot reach: a later grade of the same module files gets
// the same lines back from the marker (restoreSums) instead of downloading again.
func (g *goRun) keepSums(marker string, before map[string]string) {
	changed := map[string]string{}
	for f, old := range before {
		b, _ := readRegular(filepath.Join(g.o.Dir, filepath.FromSlash(f)))
		if string(b) != old {
			changed[f] = string(b)
		}
	}
	body, err := json.Marshal(changed)
	if err != nil {
		return
	}
	if err := os.MkdirAll(filepath.Dir(marker), 0o755); err == nil {
		_ = os.WriteFile(marker, body, 0o644)
	}
}

// restoreSums reports whether marker records a finished download, and writes the checksum files it holds into
// the worktree where they differ (given to the box's uid, which the builds run as). A marker it cannot read is no
// marker: the download runs again.
func (g *goRun) restoreSums(marker string) bool {
	b, err := readRegular(marker)
	if err != nil {
		return false
	}
	var files map[string]string
	if json.Unmarshal(b, &files) != nil {
		return false
	}
	root, err := os.OpenRoot(g.o.Dir)
	if err != nil {
		return false
	}
	defer root.Close()
	for f, content := range files {
		if cur, err := root.ReadFile(f); err == nil && string(cur) == content {
			continue
		}
		if err := root.WriteFile(f, []byte(content), 0o644); err != nil {
			return false
		}
		if g.box != nil && g.box.Isolation() == sandbox.IsolationNamespaces {
			_ = root.Lchown(f, g.box.UID(), g.box.UID())
		}
	}
	return true
}

// proxyViews rewrites a GOPROXY list for a box: each file:// folder is shown to it read-only at a path of its own
// (the folder may lie where its uid cannot walk), and the worker's own module cache, when it is another, comes
// first as a file:// proxy, so that modules the machine already has are not fetched again.
func proxyViews(box *sandbox.Box, proxy, modCache string) (string, error) {
	var entries []string
	if worker, err := workerModCache(context.Background(), nil); err == nil && worker != modCache {
		if dl := filepath.Join(worker, "cache", "download"); fileExists(dl) {
			if v, err := box.ReadOnlyView(dl); err == nil {
				entries = append(entries, "file://"+filepath.ToSlash(v), ",")
			}
		}
	}
	rest := proxy
	for rest != "" {
		i := strings.IndexAny(rest, ",|")
		entry, sep := rest, ""
		if i >= 0 {
			entry, sep, rest = rest[:i], rest[i:i+1], rest[i+1:]
		} else {
			rest = ""
		}
		if p, ok := strings.CutPrefix(entry, "file://"); ok {
			v, err := box.ReadOnlyView(filepath.FromSlash(p))
			if err != nil {
				return "", fmt.Errorf("module proxy folder: %w", err)
			}
			entry = "file://" + filepath.ToSlash(v)
		}
		entries = append(entries, entry)
		if sep != "" {
			entries = append(entries, sep)
		}
	}
	return strings.Join(entries, ""), nil
}

// goFlags is GOFLAGS with -mod=mod (or no -mod flag, for mod "") in place of any -mod flag of the worker's
// GOFLAGS, whose other flags are kept.
func goFlags(mod string) string {
	var flags []string
	if mod != "" {
		flags = append(flags, "-mod="+mod)
	}
	for _, f := range strings.Fields(os.Getenv("GOFLAGS")) {
		if !strings.HasPrefix(f, "-mod=") && !strings.HasPrefix(f, "--mod=") {
			flags = append(flags, f)
		}
	}
	return "GOFLAGS=" + strings.Join(flags, " ")
}

var (
	workerProxyOnce sync.Once
	workerProxy     string
)

// workerGoProxy is the GOPROXY the worker's go command would use (its environment, else its go env file).
func workerGoProxy() string {
	workerProxyOnce.Do(func() {
		if v := os.Getenv("GOPROXY"); v != "" {
			workerProxy = v
			return
		}
		if out, err := exec.Command("go", "env", "GOPROXY").Output(); err == nil {
			workerProxy = strings.TrimSpace(string(out))
		}
	})
	return workerProxy
}
