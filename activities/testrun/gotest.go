package testrun

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/build"
	"go/doc"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"ctxlab/activities/testlog"
)

// goPackage is a package folder of the module with test functions.
type goPackage struct {
	importPath string
	dir        string          // slash-separated, relative to the module root; "." for the root
	declared   map[string]bool // what go test runs (goDeclared) in its kept _test.go files, by name
	run        []string        // the declared names to run
}

// target is the package as a go command argument, relative to the module root.
func (p *goPackage) target() string {
	if p.dir == "." {
		return "."
	}
	return "./" + p.dir
}

// binaryName is the file name go test gives the package's test binary (cmd/go's testBinaryName): the last element
// of the import path, or the one before it when that is a major version (example.com/cmd/v2 gives cmd.test), and
// ".test". Test code may read it: cobra's Execute takes its arguments from os.Args unless os.Args[0] is "cobra.test".
func (p *goPackage) binaryName() string {
	elem := path.Base(p.importPath)
	if dir := path.Dir(p.importPath); dir != "." && isMajorVersion(elem) {
		elem = path.Base(dir)
	}
	return elem + ".test"
}

// isMajorVersion is cmd/go's isVersionElement: v2, v3, v10 and so on, not v0, v1 or v05.
func isMajorVersion(s string) bool {
	if len(s) < 2 || s[0] != 'v' || s[1] < '1' || s[1] > '9' || s == "v1" {
		return false
	}
	for _, r := range s[1:] {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// binPrefix starts the name of the folder holding the test binaries: the executor's grading-folder prefix and this
// process's id, so executor.CleanStale removes it when a killed worker left it behind.
var binPrefix = fmt.Sprintf("ctxlab-grade-%d-bin-", os.Getpid())

// frameMarker is a framing line the testing package itself prints in -test.v=test2json mode (a test-name reset, no
// event). Sent to test2json first, it makes test2json require the ^V marker on every later framing line, as real
// test binaries print them, so unmarked "=== RUN" / "--- PASS" lines are plain output.
const frameMarker = "\x16=== NAME  \n"

// runGo runs the listed tests of the Go module in o.Dir: requirements downloaded once (goRun.download), every
// needed package's test binary built (goRun.build), then each binary run as go test runs it (goRun.runBinary), its
// output converted by test2json, and the results checked against the statically declared tests. With isolation
// the download, the builds and the tests all run in the sandbox as its uid, so that nothing the model wrote (cgo
// sources and flags, assembly #includes, go.mod replacements) is read with the grader's rights. runCtx bounds the
// whole run.
func runGo(ctx, runCtx context.Context, o Options, out *capBuffer) (Result, error) {
	start := time.Now()
	// The binaries' own -test.timeout is what is left of the run's budget (o.Timeout), never of the caller's
	// context: a caller that cancels first gets a cancelled run, not a test that timed out.
	budget := start.Add(cmp.Or(o.Timeout, DefaultTimeout))
	modPath, err := modulePath(o.Dir)
	if err != nil {
		return Result{}, fmt.Errorf("testrun: %w", err)
	}
	pkgs, err := scanTests(o.Dir, modPath, o.ExcludeTestFiles)
	if err != nil {
		return Result{}, fmt.Errorf("testrun: listing the tests of %s: %w", o.Dir, err)
	}
	toRun, notDeclared := selectTests(pkgs, o.Tests)

	// Every event goes through one parser; out keeps the stream for the log.
	parse := parseGoEvents(out)
	events := &eventWriter{w: parse.w, pkg: modPath}

	var res Result
	exit := 0
	if len(notDeclared) > 0 {
		events.note(fmt.Sprintf("ctxlab: no package declares these tests in a kept _test.go file: %s\n",
			strings.Join(notDeclared, ", ")))
	}
	g, err := newGoRun(runCtx, o, events)
	if err != nil {
		_, _ = parse.wait()
		if ctx.Err() != nil { // the set-up failed because the run was cancelled (seen on a loaded machine)
			return Result{}, fmt.Errorf("testrun: cancelled: %w (%v)", ctx.Err(), err)
		}
		return Result{}, err
	}
	defer g.close()
	res.Isolation = g.box.Isolation()
	if len(toRun) > 0 && !g.vendored {
		g.download(runCtx)
	}
	// All binaries are built before any test runs, so no test can change what a later package compiles.
	bins := g.buildAll(runCtx, toRun)
	if slices.Contains(bins, "") {
		exit = 1
	}
	g.keepBuilds()
	var code int
	res.Args, code = g.runPackages(ctx, runCtx, toRun, bins, budget, len(o.Tests) > 0, events)
	if exit == 0 {
		exit = code
	}
	rep, parseErr := parse.wait()

	res.Output, res.OutputBytes, res.ExitCode, res.Duration = out.Bytes(), out.total, exit, time.Since(start)
	res.Report = checkDeclared(rep, pkgs, notDeclared)
	if ctx.Err() != nil {
		return res, fmt.Errorf("testrun: cancelled: %w", ctx.Err())
	}
	res.TimedOut = errors.Is(runCtx.Err(), context.DeadlineExceeded) || g.selfTimedOut
	if parseErr != nil {
		return res, fmt.Errorf("testrun: %w", parseErr)
	}
	return res, nil
}

// goEvents is the parse of a Go run's go test -json events, written to w as the run makes them.
type goEvents struct {
	w      *io.PipeWriter
	parsed chan struct{}
	rep    testlog.Report
	err    error
}

// parseGoEvents starts parsing what is written to the returned goEvents' w, keeping the stream in out.
func parseGoEvents(out *capBuffer) *goEvents {
	evR, evW := io.Pipe()
	e := &goEvents{w: evW, parsed: make(chan struct{})}
	go func() {
		defer close(e.parsed)
		e.rep, e.err = testlog.ParseGoTestJSON(io.TeeReader(evR, out))
		_, _ = io.Copy(io.Discard, evR)
	}()
	return e
}

// wait ends the events and returns their report.
func (e *goEvents) wait() (testlog.Report, error) {
	e.w.Close()
	<-e.parsed
	return e.rep, e.err
}

// runPackages runs the built test binaries of toRun (bins[i] is "" where the build failed), each on its selected
// tests when listed, else all of them, and returns what ran, in go test's words, and the first non-zero exit code.
func (g *goRun) runPackages(ctx, runCtx context.Context, toRun []*goPackage, bins []string, budget time.Time,
	listed bool, events *eventWriter) (ranArgs []string, exit int) {
	for i, p := range toRun {
		pattern := RunPattern(p.run)
		if !listed {
			pattern = ""
		}
		args := g.testArgs(budget, pattern)
		// Args says what ran, per package: go test -c ./dir && (cd dir && dir.test -test.paniconexit0 ...);
		ranArgs = append(ranArgs, "go", "test", "-c", "-o", p.binaryName(), p.target(), "&&", "(cd", p.target(), "&&",
			p.binaryName())
		ranArgs = append(ranArgs, args...)
		ranArgs[len(ranArgs)-1] += ");"
		if bins[i] == "" || runCtx.Err() != nil {
			continue
		}
		code, err := g.runBinary(ctx, runCtx, bins[i], p, args)
		if err != nil {
			events.note(fmt.Sprintf("ctxlab: running the tests of %s: %v\n", p.importPath, err))
		}
		if code != 0 && exit == 0 {
			exit = code
		}
	}
	return ranArgs, exit
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

// scanTests lists, statically, what go test would run in each package of the module (goDeclared) from its _test.go
// files, leaving out the excluded files (slash-separated, relative to root), files the build constraints exclude,
// vendor, testdata, hidden folders and nested modules. The package's own test files and its external _test
// package's share its folder, and so its list.
func scanTests(root, modPath string, exclude []string) (pkgs []*goPackage, err error) {
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
		if !d.Type().IsRegular() || !strings.HasSuffix(name, "_test.go") || strings.HasPrefix(name, ".") ||
			strings.HasPrefix(name, "_") || skip[rel] {
			return nil
		}
		if ok, err := build.Default.MatchFile(filepath.Dir(p), name); err != nil || !ok {
			return nil
		}
		// A file that does not parse declares nothing; its package's build fails and says why.
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments|parser.SkipObjectResolution)
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
		for _, name := range goDeclared(f) {
			pkg.declared[name] = true
		}
		return nil
	})
	for _, p := range byDir {
		if len(p.declared) > 0 {
			pkgs = append(pkgs, p)
		}
	}
	sort.Slice(pkgs, func(i, j int) bool { return pkgs[i].dir < pkgs[j].dir })
	return pkgs, err
}

// goDeclared lists what go test runs from one _test.go file, by cmd/go's rules (load.testFuncs.load): top-level
// tests (TestXxx(*testing.T), TestMain included when it takes a *testing.T), fuzz targets (FuzzXxx(*testing.F),
// whose seed corpus runs as the subtests FuzzXxx/seed#N and FuzzXxx/<file of testdata/fuzz/FuzzXxx>), and examples
// with an output comment (// Output: or // Unordered output:, empty or not, found by go/doc as go test finds
// them); an example without one is compiled, not run. Benchmarks run only with -bench: never here.
func goDeclared(f *ast.File) []string {
	var names []string
	for _, decl := range f.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Recv != nil || fn.Type.TypeParams != nil {
			continue
		}
		name := fn.Name.Name
		switch testlog.GoTestKind(name) {
		case "Test":
			if takesTesting(fn, "T") {
				names = append(names, name)
			}
		case "Fuzz":
			if takesTesting(fn, "F") {
				names = append(names, name)
			}
		}
	}
	for _, e := range doc.Examples(f) {
		if e.Output != "" || e.EmptyOutput {
			names = append(names, "Example"+e.Name)
		}
	}
	return names
}

// takesTesting is cmd/go's isTestFunc: fn returns nothing and takes one parameter of type *arg or *pkg.arg (the
// testing import under any name, or dot-imported).
func takesTesting(fn *ast.FuncDecl, arg string) bool {
	if fn.Type.Results != nil && len(fn.Type.Results.List) > 0 {
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
	switch x := star.X.(type) {
	case *ast.Ident:
		return x.Name == arg
	case *ast.SelectorExpr:
		return x.Sel.Name == arg
	}
	return false
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

// buildFailed records a package whose test binary could not be built, with text of ctxlab's own if any (the go
// command's is passed on as it comes).
func (e *eventWriter) buildFailed(importPath, text string) {
	if text != "" {
		e.event(map[string]string{"Action": "build-output", "ImportPath": importPath + ".test", "Output": text})
	}
	e.event(map[string]string{"Action": "fail", "Package": importPath, "FailedBuild": importPath + ".test"})
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

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
