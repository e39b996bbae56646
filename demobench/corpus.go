package demobench

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strings"
	"sync"

	"ctxlab/patch/diff"
)

//go:embed all:_corpus
var corpus embed.FS

// generatorRevision is bumped when the generator's output changes for reasons the corpus hash cannot see.
const generatorRevision = "2"

var versionOnce = sync.OnceValue(func() string {
	h := sha256.New()
	fmt.Fprintf(h, "generator %s\n", generatorRevision)
	fmt.Fprintf(h, "%#v\n%#v\nqualified test names %v\n", repos, modules, packageQualifiedNames)
	_ = fs.WalkDir(corpus, "_corpus", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := corpus.ReadFile(p)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %d\n", p, len(data))
		h.Write(data)
		return nil
	})
	return "v1-" + hex.EncodeToString(h.Sum(nil))[:16]
})

// Version identifies the benchmark's content: the generator revision and a hash of the embedded corpus and the
// instance table. A dataset folder generated under another Version is rebuilt.
func Version() string { return versionOnce() }

// readTree returns the files below _corpus/<dir>, keyed by their path relative to it.
func readTree(dir string) (map[string][]byte, error) {
	root := path.Join("_corpus", dir)
	out := map[string][]byte{}
	err := fs.WalkDir(corpus, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		data, err := corpus.ReadFile(p)
		if err != nil {
			return err
		}
		out[strings.TrimPrefix(p, root+"/")] = data
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("demobench corpus %s: %w", dir, err)
	}
	return out, nil
}

// langOf returns a repository's language, langGo when the spec leaves it out.
func langOf(r repoSpec) string {
	if r.lang == "" {
		return langGo
	}
	return r.lang
}

// commonDir is the corpus folder of the files every repository of a language starts with.
func commonDir(lang string) string {
	if lang == langPython {
		return "common-python"
	}
	return "common"
}

// goMod returns the go.mod and go.sum of a Go repository: module example.com/<name>, and the modules it requires
// with their hashes (go.sum is nil when it requires none).
func goMod(r repoSpec) (mod, sum []byte, err error) {
	var m, s strings.Builder
	fmt.Fprintf(&m, "module example.com/%s\n\ngo 1.21\n", r.name)
	if len(r.requires) > 0 {
		m.WriteString("\nrequire (\n")
		for _, p := range r.requires {
			dep, ok := moduleByPath(p)
			if !ok {
				return nil, nil, fmt.Errorf("go.mod of %s: module %s is not in the modules table", r.name, p)
			}
			fmt.Fprintf(&m, "\t%s %s\n", dep.path, dep.version)
			lines, err := goSumLines(dep)
			if err != nil {
				return nil, nil, err
			}
			s.WriteString(lines)
		}
		m.WriteString(")\n")
	}
	mod = []byte(m.String())
	if s.Len() > 0 {
		sum = []byte(s.String())
	}
	return mod, sum, nil
}

// snapshots returns the full file tree of every commit of a repository.
func snapshots(r repoSpec) ([]map[string][]byte, error) {
	common, err := readTree(commonDir(langOf(r)))
	if err != nil {
		return nil, err
	}
	cur := map[string][]byte{}
	if langOf(r) == langGo {
		mod, sum, err := goMod(r)
		if err != nil {
			return nil, err
		}
		cur["go.mod"] = mod
		if sum != nil {
			cur["go.sum"] = sum
		}
	} else if len(r.requires) > 0 {
		return nil, fmt.Errorf("%s: only Go repositories can require modules", r.name)
	}
	for p, data := range common {
		cur[p] = []byte(strings.ReplaceAll(string(data), "{{name}}", r.name))
	}
	var out []map[string][]byte
	for _, c := range r.commits {
		layer, err := readTree(path.Join(r.name, c.dir))
		if err != nil {
			return nil, err
		}
		if len(layer) == 0 {
			return nil, fmt.Errorf("demobench corpus %s/%s: empty commit", r.name, c.dir)
		}
		next := make(map[string][]byte, len(cur)+len(layer))
		for p, d := range cur {
			next[p] = d
		}
		for p, d := range layer {
			next[p] = d
		}
		out = append(out, next)
		cur = next
	}
	return out, nil
}

// instanceFiles holds what the corpus says about one instance.
type instanceFiles struct {
	fix, test map[string][]byte
	issue     string
}

func readInstance(r repoSpec, in instanceSpec) (*instanceFiles, error) {
	dir := path.Join(r.name, fmt.Sprint(in.n))
	fix, err := readTree(path.Join(dir, "fix"))
	if err != nil {
		return nil, err
	}
	test, err := readTree(path.Join(dir, "test"))
	if err != nil {
		return nil, err
	}
	issue, err := corpus.ReadFile(path.Join("_corpus", dir, "issue.md"))
	if err != nil {
		return nil, fmt.Errorf("demobench corpus %s: %w", dir, err)
	}
	return &instanceFiles{fix: fix, test: test, issue: string(issue)}, nil
}

// patchOf returns the unified diff that turns base into the given new contents, files in path order. Files absent
// from base are created.
func patchOf(base, changed map[string][]byte) string {
	paths := make([]string, 0, len(changed))
	for p := range changed {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var b strings.Builder
	for _, p := range paths {
		b.WriteString(diff.Unified(p, base[p], changed[p]))
	}
	return b.String()
}

var (
	goTestFuncRE = regexp.MustCompile(`(?m)^func (Test\w+)\(t \*testing\.T\)`)
	// Python tests are unittest methods of a TestCase class, indented once.
	pyTestFuncRE = regexp.MustCompile(`(?m)^    def (test_\w+)\(self`)
)

// isTestFile says whether a path is a test file, as the grader counts them: Go _test.go files; Python test_*.py,
// *_test.py and conftest.py, and anything under a tests/ folder.
func isTestFile(lang, p string) bool {
	base := path.Base(p)
	if lang == langPython {
		return strings.HasPrefix(p, "tests/") || strings.Contains(p, "/tests/") || base == "conftest.py" ||
			(strings.HasPrefix(base, "test_") || strings.HasSuffix(base, "_test.py")) && strings.HasSuffix(base, ".py")
	}
	return strings.HasSuffix(p, "_test.go")
}

// testFuncs lists the test functions declared in the test files of a tree, keyed by a qualified id with their count:
// Go "<package folder>::TestX" ("." for the root package), Python "<file>::test_x" (the test method, whatever its
// class).
func testFuncs(lang string, files map[string][]byte) map[string]int {
	out := map[string]int{}
	for p, data := range files {
		if !isTestFile(lang, p) {
			continue
		}
		switch lang {
		case langPython:
			if strings.HasSuffix(p, ".py") {
				for _, m := range pyTestFuncRE.FindAllStringSubmatch(string(data), -1) {
					out[p+"::"+m[1]]++
				}
			}
		default:
			for _, m := range goTestFuncRE.FindAllStringSubmatch(string(data), -1) {
				out[path.Dir(p)+"::"+m[1]]++
			}
		}
	}
	return out
}

// testIDs returns the ids (as testFuncs keys them) a listed test name stands for in a repository: a Python node
// id stands for itself; a Go name "./pkg::TestX" or "example.com/<repo>/pkg::TestX" for that package's TestX, and a
// bare "TestX" for the TestX of every package.
func testIDs(r repoSpec, name string, funcs map[string]int) []string {
	if langOf(r) == langPython {
		if id := pythonTestID(name); funcs[id] > 0 {
			return []string{id}
		}
		return nil
	}
	pkg, fn, qualified := strings.Cut(name, "::")
	if !qualified {
		fn = name
		var ids []string
		for id := range funcs {
			if strings.HasSuffix(id, "::"+fn) {
				ids = append(ids, id)
			}
		}
		sort.Strings(ids)
		return ids
	}
	module := "example.com/" + r.name
	switch {
	case pkg == "." || pkg == "./" || pkg == module:
		pkg = "."
	case strings.HasPrefix(pkg, "./"):
		pkg = strings.TrimPrefix(pkg, "./")
	case strings.HasPrefix(pkg, module+"/"):
		pkg = strings.TrimPrefix(pkg, module+"/")
	default:
		return nil
	}
	if id := pkg + "::" + fn; funcs[id] > 0 {
		return []string{id}
	}
	return nil
}

// pythonTestID is the testFuncs id of a unittest name as the rows carry it, the dotted id that `python3 -m unittest`
// takes ("tests.test_align.AlignTest.test_x" is "tests/test_align.py::test_x").
func pythonTestID(name string) string {
	parts := strings.Split(name, ".") // module path, class, method
	if len(parts) < 3 {
		return name
	}
	return strings.Join(parts[:len(parts)-2], "/") + ".py::" + parts[len(parts)-1]
}

// packageQualifiedNames says whether rows carry Go test names as the spec writes them ("./pkg::TestX"), which
// needs a grader that runs each name in its own package, or bare ("TestX", run and graded in every package that
// declares it). ctxlab's grader reads both.
const packageQualifiedNames = true

// testNames returns the FAIL_TO_PASS and PASS_TO_PASS lists of an instance as rows carry them (see
// packageQualifiedNames): with bare names, a name already in FAIL_TO_PASS is left out of PASS_TO_PASS, since it is
// graded there, in every package.
func testNames(r repoSpec, in instanceSpec) (failToPass, passToPass []string) {
	if langOf(r) != langGo || packageQualifiedNames {
		return in.failToPass, in.passToPass
	}
	seen := map[string]bool{}
	bare := func(names []string) []string {
		var out []string
		for _, n := range names {
			if _, fn, ok := strings.Cut(n, "::"); ok {
				n = fn
			}
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
		return out
	}
	failToPass = bare(in.failToPass)
	return failToPass, bare(in.passToPass)
}

// funcBody returns the text of a test function's declaration in src, or "" when src does not declare it.
func funcBody(lang, src, fn string) string {
	var start int
	if lang == langPython {
		start = strings.Index(src, "\n    def "+fn+"(")
	} else {
		start = strings.Index(src, "\nfunc "+fn+"(")
	}
	if start < 0 {
		return ""
	}
	rest := src[start+1:]
	end := len(rest)
	if lang == langPython {
		// Up to the next line indented no deeper than the method's def (the next method, or the class's end).
		for i := strings.Index(rest, "\n"); i >= 0 && i+1 < len(rest); {
			if line := rest[i+1:]; line[0] != '\n' && !strings.HasPrefix(line, "     ") && !strings.HasPrefix(line, "\t") {
				end = i
				break
			}
			next := strings.Index(rest[i+1:], "\n")
			if next < 0 {
				break
			}
			i += 1 + next
		}
	} else if i := strings.Index(rest, "\n}\n"); i >= 0 {
		end = i + 3
	}
	return rest[:end]
}

// fileOfID returns the file that declares a test id in files (Go: the package folder's _test.go files).
func fileOfID(lang, id string, files map[string][]byte) string {
	loc, fn, _ := strings.Cut(id, "::")
	if lang == langPython {
		return loc
	}
	var found []string
	for p, data := range files {
		if isTestFile(lang, p) && path.Dir(p) == loc && goTestFuncRE.MatchString(string(data)) &&
			funcBody(lang, "\n"+string(data), fn) != "" {
			found = append(found, p)
		}
	}
	sort.Strings(found)
	if len(found) == 0 {
		return ""
	}
	return found[0]
}
