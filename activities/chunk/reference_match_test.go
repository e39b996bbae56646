package chunk

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"ctxlab/demobench"
	"ctxlab/testkit/synthrepo"
)

// TestMatchesReference requires Split to cut every file exactly as the chunker before issue 31 did (reference_test.go),
// every unit and two window sizes, over the demo dataset's repositories, testkit/synthrepo's repository and random
// Python- and Go-like text (quotes, brackets, decorators, tabs, blank lines, no final newline).
func TestMatchesReference(t *testing.T) {
	files := map[string][]byte{}
	dir := t.TempDir()
	res, err := demobench.Generate(filepath.Join(dir, "dataset"))
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(res.DatasetDir, demobench.ReposDir)
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			if d != nil && d.Name() == ".git" {
				return filepath.SkipDir
			}
			return err
		}
		data, err := os.ReadFile(p)
		files[p] = data
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no demo files")
	}
	if !testing.Short() {
		for _, f := range synthrepo.Generate(1) {
			files[f.Path] = f.Content
		}
	}
	rng := rand.New(rand.NewPCG(31, 7))
	for i := range 3000 {
		files[fmt.Sprintf("random/%d.%s", i, []string{"py", "go", "pyi", "txt"}[i%4])] = randomSource(rng)
	}
	for p, data := range files {
		for _, u := range Units {
			for _, w := range []int{0, 7} {
				if got, want := Split(p, data, u, w), refSplit(p, data, u, w); !reflect.DeepEqual(got, want) {
					t.Fatalf("%s %s window %d: chunks differ from the reference\ngot  %+v\nwant %+v", p, u, w, got, want)
				}
			}
		}
	}
}

// randomSource is up to 40 lines of Python- and Go-like statements at random indentation, with quotes, brackets,
// escapes and comments after them; the last line may lack its newline.
func randomSource(rng *rand.Rand) []byte {
	indents := []string{"", "", "    ", "        ", "\t", "  \t", " "}
	heads := []string{"def f(a,", "async def g():", "class K:", "@deco", "@deco(1)", "x = 1", "return y", "pass", "",
		"func F() {", "}", "package p", "type T int", "var v = 2", "import \"os\"", "# c", "// c", "é = 2", "print(x)"}
	tails := []string{"", "", "", ` """`, ` '''`, ` "a`, ` 'b'`, ` \`, " # (", " (", " )", " [", "]", " {", "}", ` "\""`,
		` """x"""`, ` b):`, "\r", `\"""`, `\'`}
	var b []byte
	for range rng.IntN(40) {
		b = append(b, indents[rng.IntN(len(indents))]...)
		b = append(b, heads[rng.IntN(len(heads))]...)
		for range rng.IntN(3) {
			b = append(b, tails[rng.IntN(len(tails))]...)
		}
		b = append(b, '\n')
	}
	if len(b) > 0 && rng.IntN(2) == 0 {
		b = b[:len(b)-1]
	}
	return b
}
