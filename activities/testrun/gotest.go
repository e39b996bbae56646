package testrun

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"ctxlab/activities/sandbox"
	"ctxlab/activities/testlog"
)

// goPackage is a package folder of the module with test functions.
type goPackage struct {
	importPath string
	dir        string          // slash-separated, relative to the module root; "." for the root
	declared   map[string]bool // top-level TestXxx(*testing.T) functions of its kept _test.go files
	run        []string        // the declared names to run
}

// target is the package as a go command argument, relative to the module root.
func (p *goPackage) target() string {
	if p.dir == "." {
		return "."
	}
	return "./" + p.dir
}

// binPrefix starts the name of the folder holding the test binaries: the executor's grading-folder prefix and this
// process's id, so executor.CleanStale removes it when a killed worker left it behind.
var binPrefix = fmt.Sprintf("ctxlab-grade-%d-bin-", os.Getpid())

// frameMarker is a framing line the testing package itself prints in -test.v=test2json mode (a test-name reset, no
// event). Sent to test2json first, it makes test2json require the ^V marker on every later framing line, as real
// test binaries print them, so unmarked "=== RUN" / "--- PASS" lines are plain output.
const frameMarker = "\x16=== NAME  \n"

// runGo runs the listed tests of the Go module in o.Dir: requirements downloaded once (download), every needed
// package's test binary built (buildBinary), then each binary run in its package folder with its output converted
// by test2json, and the results checked against the statically declared tests. runCtx bounds the whole run.
func runGo(ctx, runCtx context.Context, o Options, out *capBuffer) (Result, error) {
	start := time.Now()
	modPath, err := modulePath(o.Dir)
	if err != nil {
		return Result{}, fmt.Errorf("testrun: %w", err)
	}
	pkgs, needsCgo, err := scanTests(o.Dir, modPath, o.ExcludeTestFiles)
	if err != nil {
		return Result{}, fmt.Errorf("testrun: listing the tests of %s: %w", o.Dir, err)
	}
	toRun, notDeclared := selectTests(pkgs, o.Tests)

	// Every event goes through one parser; out keeps the stream for the log.
	evR, evW := io.Pipe()
	events := &eventWriter{w: evW, pkg: modPath}
	var rep testlog.Report
	var parseErr error
	parsed := make(chan struct{})
	go func() {
		defer close(parsed)
		rep, parseErr = testlog.ParseGoTestJSON(io.TeeReader(evR, out))
		_, _ = io.Copy(io.Discard, evR)
	}()

	var res Result
	exit := 0
	if len(notDeclared) > 0 {
		events.note(fmt.Sprintf("ctxlab: no package declares these tests in a kept _test.go file: %s\n",
			strings.Join(notDeclared, ", ")))
	}
	vendored := fileExists(filepath.Join(o.Dir, "vendor", "modules.txt"))
	if len(toRun) > 0 && !vendored {
		download(runCtx, o, events)
	}
	buildEnv := []string{"GOPROXY=off"}
	if !vendored {
		buildEnv = append(buildEnv, modFlags())
	}
	if !needsCgo {
		// cgo would run the C toolchain with flags from the (model-editable) sources while building.
		buildEnv = append(buildEnv, "CGO_ENABLED=0")
	}
	buildEnv = Env(append(buildEnv, o.ExtraEnv...))

	binDir, err := os.MkdirTemp("", binPrefix)
	if err != nil {
		return Result{}, fmt.Errorf("testrun: %w", err)
	}
	defer os.RemoveAll(binDir)
	// Test binaries may run as another user: they must be readable and executable by it, and not writable.
	if err := os.Chmod(binDir, 0o755); err != nil {
		return Result{}, fmt.Errorf("testrun: %w", err)
	}
	// The box is made after the build folder exists, so the binaries stay reachable under a private /tmp.
	box, err := newBox(o, binDir)
	if err != nil {
		return Result{}, err
	}
	defer box.Close()
	res.Isolation = box.Isolation()
	// All binaries are built before any test runs, so no test can change what a later package compiles.
	bins := make([]string, len(toRun))
	for i, p := range toRun {
		bins[i] = buildBinary(runCtx, o.Dir, binDir, i, p, buildEnv, events)
		if bins[i] == "" {
			exit = 1
		}
	}
	for i, p := range toRun {
		pattern := RunPattern(p.run)
		if len(o.Tests) == 0 {
			pattern = ""
		}
		// Args says what ran, per package: go test -c ./dir && dir.test -test.run pattern;
		res.Args = append(res.Args, "go", "test", "-c", p.target(), "&&", path.Base(p.importPath)+".test", "-test.run", pattern+";")
		if bins[i] == "" || runCtx.Err() != nil {
			continue
		}
		code, err := runBinary(ctx, runCtx, box, bins[i], filepath.Join(o.Dir, filepath.FromSlash(p.dir)), p.importPath, pattern,
			Env(o.ExtraEnv), events)
		if err != nil {
			events.note(fmt.Sprintf("ctxlab: running the tests of %s: %v\n", p.importPath, err))
		}
		if code != 0 && exit == 0 {
			exit = code
		}
	}
	evW.Close()
	<-parsed

	res.Output, res.OutputBytes, res.ExitCode, res.Duration = out.Bytes(), out.total, exit, time.Since(start)
	res.Report = checkDeclared(rep, pkgs, notDeclared)
	if ctx.Err() != nil {
		return res, fmt.Errorf("testrun: cancelled: %w", ctx.Err())
	}
	res.TimedOut = errors.Is(runCtx.Err(), context.DeadlineExceeded)
	if parseErr != nil {
		return res, fmt.Errorf("testrun: %w", parseErr)
	}
	return res, nil
}

// modulePath reads the module path from dir/go.mod.
func modulePath(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module")
		if !ok || (rest != "" && rest[0] != ' ' && rest[0] != '\t' && rest[0] != '"') {
			continue
		}
		rest, _, _ = strings.Cut(rest, "//")
		rest = strings.TrimSpace(rest)
		if p, err := strconv.Unquote(rest); err == nil {
			rest = p
		}
		if rest != "" {
			return rest, nil
		}
	}
	return "", fmt.Errorf("%s/go.mod names no module", dir)
}

// scanTests lists, statically, the test functions each package of the module declares in its _test.go files, leaving
// out the excluded files (slash-separated, relative to root), files the build constraints exclude, vendor, testdata,
// hidden folders and nested modules. needsCgo says whether a non-test file of the module imports "C".
func scanTests(root, modPath string, exclude []string) (pkgs []*goPackage, needsCgo bool, err error) {
	skip := map[string]bool{}
	for _, f := range exclude {
		skip[path.Clean(strings.TrimPrefix(filepath.ToSlash(f), "./"))] = true
	}
	byDir := map[string]*goPackage{}
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		name := d.Name()
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" ||
				name == "vendor" || fileExists(filepath.Join(p, "go.mod"))) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !strings.HasSuffix(name, ".go") || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
			return nil
		}
		if ok, err := build.Default.MatchFile(filepath.Dir(p), name); err != nil || !ok {
			return nil
		}
		if !strings.HasSuffix(name, "_test.go") {
			if !needsCgo {
				if f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly); err == nil {
					for _, imp := range f.Imports {
						needsCgo = needsCgo || imp.Path.Value == `"C"`
					}
				}
			}
			return nil
		}
		if skip[rel] {
			return nil
		}
		// A file that does not parse declares nothing; its package's build fails and says why.
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil
		}
		dir := path.Dir(rel)
		pkg := byDir[dir]
		if pkg == nil {
			ip := modPath
			if dir != "." {
				ip = modPath + "/" + dir
			}
			pkg = &goPackage{importPath: ip, dir: dir, declared: map[string]bool{}}
			byDir[dir] = pkg
		}
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && isTestFunc(fn) {
				pkg.declared[fn.Name.Name] = true
			}
		}
		return nil
	})
	for _, p := range byDir {
		if len(p.declared) > 0 {
			pkgs = append(pkgs, p)
		}
	}
	sort.Slice(pkgs, func(i, j int) bool { return pkgs[i].dir < pkgs[j].dir })
	return pkgs, needsCgo, err
}

// isTestFunc reports whether fn is a top-level func TestXxx(t *testing.T) (the testing import under any name).
func isTestFunc(fn *ast.FuncDecl) bool {
	if fn.Recv != nil || fn.Type.TypeParams != nil || fn.Type.Results != nil || !testlog.IsGoTestFunc(fn.Name.Name) {
		return false
	}
	params := fn.Type.Params.List
	if len(params) != 1 || len(params[0].Names) > 1 {
		return false
	}
	star, ok := params[0].Type.(*ast.StarExpr)
	if !ok {
		return false
	}
	sel, ok := star.X.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "T"
}

// selectTests picks, for each listed name, the packages that declare its top-level test (only the named package for
// a qualified name); the names no package declares are returned. An empty list runs every declared test.
func selectTests(pkgs []*goPackage, tests []string) (toRun []*goPackage, notDeclared []string) {
	want := map[*goPackage]map[string]bool{}
	add := func(p *goPackage, top string) {
		if want[p] == nil {
			want[p] = map[string]bool{}
		}
		want[p][top] = true
	}
	if len(tests) == 0 {
		for _, p := range pkgs {
			for name := range p.declared {
				add(p, name)
			}
		}
	}
	for _, name := range tests {
		q, test := testlog.SplitGoTestName(name)
		top, _, _ := strings.Cut(test, "/")
		found := false
		for _, p := range pkgs {
			if (q == "" || testlog.PackageMatches(q, p.importPath, p.dir)) && p.declared[top] {
				add(p, top)
				found = true
			}
		}
		if !found && strings.TrimSpace(name) != "" {
			notDeclared = append(notDeclared, name)
		}
	}
	for _, p := range pkgs {
		if names := want[p]; len(names) > 0 {
			for n := range names {
				p.run = append(p.run, n)
			}
			sort.Strings(p.run)
			toRun = append(toRun, p)
		}
	}
	sort.Strings(notDeclared)
	return toRun, notDeclared
}

// checkDeclared drops from rep the results of tests their package does not declare (recording them in Undeclared),
// and sets each result's Dir.
func checkDeclared(rep testlog.Report, pkgs []*goPackage, notDeclared []string) testlog.Report {
	byPath := map[string]*goPackage{}
	for _, p := range pkgs {
		byPath[p.importPath] = p
	}
	kept := map[string][]testlog.TestResult{}
	for name, rs := range rep.Tests {
		top, _, _ := strings.Cut(name, "/")
		for _, r := range rs {
			p := byPath[r.Package]
			if p == nil || !p.declared[top] {
				rep.Undeclared = append(rep.Undeclared, r.Package+"::"+name)
				continue
			}
			r.Dir = p.dir
			kept[name] = append(kept[name], r)
		}
	}
	rep.Tests = kept
	sort.Strings(rep.Undeclared)
	rep.NotDeclared = notDeclared
	return rep
}

// eventWriter writes go test JSON events (test2json's, and ctxlab's own notes and build failures) to the parser.
type eventWriter struct {
	mu  sync.Mutex
	w   io.Writer
	pkg string // the module path, for notes
}

func (e *eventWriter) Write(p []byte) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.w.Write(p)
}

func (e *eventWriter) event(v map[string]string) {
	b, _ := json.Marshal(v)
	_, _ = e.Write(append(b, '\n'))
}

// note puts a line of ctxlab's own into the log.
func (e *eventWriter) note(text string) {
	e.event(map[string]string{"Action": "output", "Package": e.pkg, "Output": text})
}

// buildFailed records a package whose test binary could not be built, with the go command's text.
func (e *eventWriter) buildFailed(importPath, text string) {
	e.event(map[string]string{"Action": "build-output", "ImportPath": importPath + ".test", "Output": text})
	e.event(map[string]string{"Action": "fail", "Package": importPath, "FailedBuild": importPath + ".test"})
}

// buildBinary builds p's test binary into binDir as the grader (the build runs none of the module's code) and returns
// its path, or "" after recording a build failure.
func buildBinary(ctx context.Context, root, binDir string, i int, p *goPackage, env []string, events *eventWriter) string {
	bin := filepath.Join(binDir, fmt.Sprintf("%d-%s.test", i, path.Base(p.importPath)))
	args := append([]string{"test", "-c", "-vet=off"}, omitDebug()...)
	out, err := trusted(ctx, root, env, "go", append(args, "-o", bin, p.target())...)
	if err == nil {
		if err = os.Chmod(bin, 0o755); err != nil {
			err = fmt.Errorf("no test binary was written: %w", err)
		}
	}
	if err != nil {
		text := string(out)
		if text == "" || ctx.Err() != nil {
			text += fmt.Sprintf("ctxlab: building the tests of %s: %v\n", p.importPath, err)
		}
		events.buildFailed(p.importPath, text)
		return ""
	}
	return bin
}

// omitDebug links test binaries without the symbol table and DWARF, as go test itself does for the binaries it
// runs (only -c keeps them); it takes a third or more off each link, the larger part of building a small package's
// tests. Stack traces and runtime.Caller are unaffected. A worker whose GOFLAGS sets -ldflags keeps its own.
func omitDebug() []string {
	for _, f := range strings.Fields(os.Getenv("GOFLAGS")) {
		if strings.HasPrefix(strings.TrimLeft(f, "-"), "ldflags") {
			return nil
		}
	}
	return []string{"-ldflags=-s -w"}
}

// runBinary runs a test binary in its package folder, contained, and converts its output with test2json. The
// binary's own output is the only source of events. It returns the binary's exit code.
func runBinary(ctx, runCtx context.Context, box *sandbox.Box, bin, dir, importPath, pattern string, env []string, events *eventWriter) (int, error) {
	args := []string{bin, "-test.v=test2json", "-test.count=1", "-test.timeout=0", "-test.paniconexit0"}
	if pattern != "" {
		args = append(args, "-test.run", pattern)
	}
	p, err := startContained(runCtx, box, args, dir, env)
	if err != nil {
		return 0, err
	}
	// test2json is ours: it outlives the binary's deadline so that what the binary printed is still converted; it
	// ends when the binary's output does (bounded by drainWait in wait).
	var convErr bytes.Buffer
	start := func(direct bool) (*exec.Cmd, error) {
		// Not in the worker's folder, whose go.mod could ask for another toolchain.
		conv := test2jsonCommand(ctx, filepath.Dir(bin), direct, "-t", "-p", importPath)
		conv.Stdin = io.MultiReader(strings.NewReader(frameMarker), p.out)
		conv.Stdout = events
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
	return p.wait(readDone), runErr
}

var (
	test2jsonMu   sync.Mutex
	test2jsonPath string // the test2json tool's binary, "" until found
)

// test2jsonCommand runs the go toolchain's test2json with args in dir, with the tests' environment: directly
// (direct, and its binary found) or through `go tool test2json`. The binary's path is asked once per process with
// `go tool -n test2json`, so it is the tool `go tool` would run; running it directly spares a go command start
// (40-80 ms) per package graded.
func test2jsonCommand(ctx context.Context, dir string, direct bool, args ...string) *exec.Cmd {
	argv := []string{"go", "tool", "test2json"}
	if direct {
		test2jsonMu.Lock()
		if test2jsonPath == "" {
			ask := exec.Command("go", "tool", "-n", "test2json")
			ask.Env, ask.Dir = Env(nil), dir
			if out, err := ask.Output(); err == nil {
				if p := strings.TrimSpace(string(out)); filepath.IsAbs(p) && fileExists(p) {
					test2jsonPath = p
				}
			}
		}
		if test2jsonPath != "" {
			argv = []string{test2jsonPath}
		}
		test2jsonMu.Unlock()
	}
	cmd := exec.CommandContext(ctx, argv[0], append(argv[1:], args...)...)
	cmd.Env, cmd.Dir = Env(nil), dir
	return cmd
}

// forgetTest2json makes the next test2jsonBinary ask the go command again.
func forgetTest2json() {
	test2jsonMu.Lock()
	test2jsonPath = ""
	test2jsonMu.Unlock()
}

// trusted runs one of the grader's own go commands in dir (no code of the module runs) in its own process group,
// killed as a whole when ctx ends, and returns its combined output.
func trusted(ctx context.Context, dir string, env []string, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return killGroup(cmd.Process.Pid) }
	cmd.WaitDelay = drainWait
	return cmd.CombinedOutput()
}

// downloadEnv names the worker's variables the module download may need besides AllowedEnv (proxies, checksum
// database settings, private module patterns, certificates). Only the go command sees them, never a test.
var downloadEnv = []string{"GOSUMDB", "GONOSUMDB", "GOPRIVATE", "GONOPROXY", "GOINSECURE", "GOAUTH", "HTTP_PROXY",
	"HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy", "SSL_CERT_FILE", "SSL_CERT_DIR"}

// download fetches the module's requirements into the module cache when it has any (a non-empty go.sum), once per
// go.sum content: a marker named by go.sum's sha256 under the module cache records a finished download. The proxy is
// o.GoProxy, else the worker's GOPROXY; version control systems are never used (GOVCS=*:off), so a go.mod the model
// edited cannot make the grader run git against a host of its choosing. A failure is only logged: the offline
// build then fails and says what is missing.
func download(ctx context.Context, o Options, events *eventWriter) {
	sum, err := os.ReadFile(filepath.Join(o.Dir, "go.sum"))
	if err != nil || len(bytes.TrimSpace(sum)) == 0 {
		return
	}
	key := sha256.Sum256(sum)
	env := Env(o.ExtraEnv)
	cacheOut, err := trusted(ctx, o.Dir, env, "go", "env", "GOMODCACHE")
	modCache := strings.TrimSpace(string(cacheOut))
	if err != nil || modCache == "" {
		events.note(fmt.Sprintf("ctxlab: no module cache to download into (%v): %s\n", err, cacheOut))
		return
	}
	marker := filepath.Join(modCache, "cache", "ctxlab-downloaded", hex.EncodeToString(key[:]))
	if fileExists(marker) {
		events.note("ctxlab: module requirements already downloaded (go.sum sha256 " + hex.EncodeToString(key[:8]) + ")\n")
		return
	}
	proxy := o.GoProxy
	if proxy == "" {
		proxy = workerGoProxy()
	}
	if proxy == "" || proxy == "off" {
		events.note("ctxlab: no GOPROXY to download the module requirements from\n")
		return
	}
	extra := []string{"GOPROXY=" + proxy, modFlags(), "GOVCS=*:off"}
	for _, k := range downloadEnv {
		if v, ok := os.LookupEnv(k); ok {
			extra = append(extra, k+"="+v)
		}
	}
	out, err := trusted(ctx, o.Dir, Env(append(extra, o.ExtraEnv...)), "go", "mod", "download")
	if err != nil {
		// The proxy itself is not logged: its URL may carry credentials.
		events.note(fmt.Sprintf("ctxlab: go mod download: %v\n%s", err, out))
		return
	}
	if err := os.MkdirAll(filepath.Dir(marker), 0o755); err == nil {
		_ = os.WriteFile(marker, []byte(proxy+"\n"), 0o644)
	}
	events.note("ctxlab: module requirements downloaded\n")
}

// modFlags is GOFLAGS with -mod=mod (go.mod and go.sum may be completed from the module cache) in place of any -mod
// flag of the worker's GOFLAGS, whose other flags are kept.
func modFlags() string {
	flags := []string{"-mod=mod"}
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

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
