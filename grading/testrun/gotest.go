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
	"maps"
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

	"ctxlab/grading/testlog"
)

// goPackage is a package folder of the repository with test functions.
type goPackage struct {
	importPath string
	dir        string          // slash-separated, relative to the repository root; "." for the root
	mod        *GoModule       // the module holding it
	declared   map[string]bool // what go test runs (goDeclared) in its kept _test.go files, by name
	// literals are the short string literals of its kept _test.go files, each with the declared tests whose bodies
	// hold it ("" for one outside every declared test): where a name an inner runner reports comes from.
	literals map[string][]string
	run      []string // the declared names to run
	inner    []string // the inner runners' top-level names to run (innerRuns)
}

// target is the package as a go command argument, relative to its module's root (where its go commands run).
func (p *goPackage) target() string {
	if rel := p.mod.rel(p.dir); rel != "." {
		return "./" + rel
	}
	return "."
}

// folder is the package's folder as a shell argument, relative to the repository root.
func (p *goPackage) folder() string {
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
	layout := o.Layout
	if layout == nil {
		read, err := ReadGoLayout(o.Dir)
		if err != nil {
			return Result{}, err
		}
		layout = &read
	}
	pkgs, modFiles, err := scanTests(o.Dir, *layout, o.ExcludeTestFiles)
	if err != nil {
		return Result{}, fmt.Errorf("testrun: listing the tests of %s: %w", o.Dir, err)
	}
	toRun, notDeclared := selectTests(pkgs, o.Tests, testedModules(*layout, o.TestPatchFiles))
	modPath := layout.root().Path

	// Every event goes through one parser; out keeps the stream for the log.
	parse := parseGoEvents(out)
	events := &eventWriter{w: parse.w, pkg: modPath}

	var res Result
	exit := 0
	if len(notDeclared) > 0 {
		events.note(fmt.Sprintf("ctxlab: no package declares these tests in a kept _test.go file: %s\n",
			strings.Join(notDeclared, ", ")))
	}
	g, err := newGoRun(runCtx, o, *layout, events)
	if err != nil {
		_, _ = parse.wait()
		if ctx.Err() != nil { // the set-up failed because the run was cancelled (seen on a loaded machine)
			return Result{}, fmt.Errorf("testrun: cancelled: %w (%v)", ctx.Err(), err)
		}
		return Result{}, err
	}
	defer g.close()
	res.Isolation = g.box.Isolation()
	if len(toRun) > 0 {
		g.download(runCtx, toRun, moduleFilesKey(o.Dir, modFiles))
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
		pattern := RunPattern(append(slices.Clone(p.run), p.inner...))
		if !listed {
			pattern = ""
		}
		args := g.testArgs(budget, pattern)
		// Args says what ran, per package: go test -c ./dir && (cd dir && dir.test -test.paniconexit0 ...); in a
		// nested module the build runs in its folder, (cd sub && go test -c ./dir).
		build := []string{"go", "test", "-c", "-o", p.binaryName(), p.target()}
		if p.mod.Dir != "." {
			build = append([]string{"(cd", p.mod.Dir, "&&"}, build...)
			build[len(build)-1] += ")"
		}
		ranArgs = append(append(ranArgs, build...), "&&", "(cd", p.folder(), "&&", p.binaryName())
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

// scanTests lists, statically, what go test would run in each package of the repository's modules (goDeclared) from
// its _test.go files, leaving out the excluded files (slash-separated, relative to root), files the build
// constraints exclude, and folders the go command leaves out of ./... (vendor, testdata, hidden ones). The package's
// own test files and its external _test package's share its folder, and so its list. A package belongs to the
// innermost module of layout holding its folder. It also returns the module files it saw (isModuleFile), for the
// download's key.
func scanTests(root string, layout GoLayout, exclude []string) (pkgs []*goPackage, modFiles []string, err error) {
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
			if rel != "." && skippedDir(name) {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() && isModuleFile(name) {
			modFiles = append(modFiles, rel)
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
			mod := layout.moduleOf(dir)
			if mod == nil {
				return nil // outside every module: go test would not build it
			}
			pkg = &goPackage{importPath: path.Join(mod.Path, mod.rel(dir)), dir: dir, mod: mod, declared: map[string]bool{},
				literals: map[string][]string{}}
			byDir[dir] = pkg
		}
		declared := goDeclared(f)
		for _, name := range declared {
			pkg.declared[name] = true
		}
		addLiterals(f, declared, pkg.literals)
		return nil
	})
	for _, p := range byDir {
		if len(p.declared) > 0 {
			pkgs = append(pkgs, p)
		}
	}
	sort.Slice(pkgs, func(i, j int) bool { return pkgs[i].dir < pkgs[j].dir })
	return pkgs, modFiles, err
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

// maxLiteral bounds the string literals kept per package (goPackage.literals): an inner runner's suite name is short.
const maxLiteral = 256

// addLiterals adds the string literals of f (up to maxLiteral bytes) to lits, each with the test of declared whose
// body holds it, or "" when it lies outside every one of them.
func addLiterals(f *ast.File, declared []string, lits map[string][]string) {
	for _, decl := range f.Decls {
		encl := ""
		if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv == nil && slices.Contains(declared, fn.Name.Name) {
			encl = fn.Name.Name
		}
		ast.Inspect(decl, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING || len(lit.Value) > maxLiteral+2 {
				return true
			}
			if v, err := strconv.Unquote(lit.Value); err == nil && v != "" && !slices.Contains(lits[v], encl) {
				lits[v] = append(lits[v], encl)
			}
			return true
		})
	}
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

// testedModules are the modules of layout holding a file of the test patch (slash-separated, relative to the
// root): the modules its repository tests for this instance.
func testedModules(layout GoLayout, files []string) map[*GoModule]bool {
	tested := map[*GoModule]bool{}
	for _, f := range files {
		if m := layout.moduleOf(path.Dir(path.Clean(strings.TrimPrefix(filepath.ToSlash(f), "./")))); m != nil {
			tested[m] = true
		}
	}
	return tested
}

// selectTests picks, for each listed name, the packages that declare its top-level test (only the named package for
// a qualified name); the names no package declares are returned. A bare name declared in a package of a tested
// module runs there only, as its repository runs `cd module && go test ./...`; one that no tested module declares
// runs in every package that declares it. An empty list runs every declared test.
func selectTests(pkgs []*goPackage, tests []string, tested map[*GoModule]bool) (toRun []*goPackage, notDeclared []string) {
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
		var found []*goPackage
		for _, p := range pkgs {
			if (q == "" || testlog.PackageMatches(q, p.importPath, p.dir)) && (p.declared[top] || len(innerRuns(p, top)) > 0) {
				found = append(found, p)
			}
		}
		if q == "" && slices.ContainsFunc(found, func(p *goPackage) bool { return tested[p.mod] }) {
			found = slices.DeleteFunc(found, func(p *goPackage) bool { return !tested[p.mod] })
		}
		for _, p := range found {
			if p.declared[top] {
				add(p, top)
				continue
			}
			for _, outer := range innerRuns(p, top) {
				add(p, outer)
			}
			if !slices.Contains(p.inner, top) {
				p.inner = append(p.inner, top)
			}
		}
		if len(found) == 0 && strings.TrimSpace(name) != "" {
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

// innerRuns are the declared tests of p that may run an inner runner reporting the top-level name top, which p does
// not declare: those whose bodies hold top as a string literal (testing.InternalTest{Name: "inner suite"}), or the
// rest of it after their own name (Name: t.Name() + "InBeforeTest"); every declared test when the literal lies
// outside them (a suite table of the file). None when top is declared, or appears in no literal.
func innerRuns(p *goPackage, top string) []string {
	if p.declared[top] {
		return nil
	}
	var outer []string
	for _, encl := range p.literals[top] {
		if encl == "" {
			return slices.Sorted(maps.Keys(p.declared))
		}
		outer = append(outer, encl)
	}
	for d := range p.declared {
		if rest, ok := strings.CutPrefix(top, d); ok && rest != "" && slices.Contains(p.literals[rest], d) {
			outer = append(outer, d)
		}
	}
	slices.Sort(outer)
	return slices.Compact(outer)
}

// checkDeclared drops from rep the results of tests their package does not declare (recording them in Undeclared),
// but those reported while a test it declares was running (TestResult.Within: an inner runner's), and sets each
// result's Dir.
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
			// A name no test function declares counts only while a declared test runs (an inner runner inside it):
			// not one reported before any test started (an init's) or after every declared one ended.
			if p == nil || (!p.declared[top] && !slices.ContainsFunc(r.Within, func(w string) bool { return p.declared[w] })) {
				rep.Undeclared = append(rep.Undeclared, r.Package+"::"+name)
				continue
			}
			r.Dir, r.Within = p.dir, nil
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
