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

	"ctxlab/activities/diff"
)

//go:embed all:_corpus
var corpus embed.FS

// generatorRevision is bumped when the generator's output changes for reasons the corpus hash cannot see.
const generatorRevision = "1"

var versionOnce = sync.OnceValue(func() string {
	h := sha256.New()
	fmt.Fprintf(h, "generator %s\n", generatorRevision)
	fmt.Fprintf(h, "%#v\n", repos)
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

// snapshots returns the full file tree of every commit of a repository.
func snapshots(r repoSpec) ([]map[string][]byte, error) {
	common, err := readTree("common")
	if err != nil {
		return nil, err
	}
	cur := map[string][]byte{
		"go.mod": []byte("module example.com/" + r.name + "\n\ngo 1.21\n"),
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

var testFuncRE = regexp.MustCompile(`(?m)^func (Test\w+)\(t \*testing\.T\)`)

// testFuncs lists the test functions declared in the _test.go files of a tree, with their count.
func testFuncs(files map[string][]byte) map[string]int {
	out := map[string]int{}
	for p, data := range files {
		if !strings.HasSuffix(p, "_test.go") {
			continue
		}
		for _, m := range testFuncRE.FindAllStringSubmatch(string(data), -1) {
			out[m[1]]++
		}
	}
	return out
}
