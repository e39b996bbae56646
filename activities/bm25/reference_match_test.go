package bm25

import (
	"bytes"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"ctxlab/activities/chunk"
	"ctxlab/demobench"
	"ctxlab/testkit/synthrepo"
)

// repoFile is one file of a snapshot a retriever indexes.
type repoFile struct {
	path string
	data []byte
}

// corpus is a snapshot with the queries asked of it.
type corpus struct {
	name    string
	files   []repoFile
	queries []string
}

// synthIssue is the issue of testkit/benchmarks: camelCase, snake_case and repeated words.
const synthIssue = `TimeoutError when the session cache reloads its config: parse_header returns the stale token.
Steps: call sessionManager.reloadConfig() with a retry option; the request handler raises TimeoutError.`

// edgeQueries hold no term, unknown terms only, one repeated term, acronyms, digits and non-ASCII letters.
var edgeQueries = []string{"", "+-*/ ()", "zzqqxunknownterm", "token token token", "HTTPServer utf8Decode v2 __init__",
	"Größe ÜBER naïve café", "_"}

// TestMatchesReference builds the index of before issue 31 (reference_test.go) and today's over the demo dataset's
// snapshots and testkit/synthrepo's repository, for every retrieval unit and several parameters and queries, and
// requires the same scores bit for bit and the same rankings, ties included.
func TestMatchesReference(t *testing.T) {
	corpora := demoCorpora(t)
	if !testing.Short() {
		files := synthrepo.Generate(1)
		c := corpus{name: "synthrepo", queries: append([]string{synthIssue}, edgeQueries...)}
		for _, f := range files {
			c.files = append(c.files, repoFile{f.Path, f.Content})
		}
		corpora = append(corpora, c)
	}
	params := []Params{Defaults(), {K1: 1.2, B: 0.75}, {K1: 0, B: 0}, {K1: 2, B: 1}}
	units := []string{"definition", "function", "window", "file", "swebench_file"}
	for _, c := range corpora {
		for ui, unit := range units {
			docs := docsOf(c.files, unit)
			for pi, p := range params {
				if c.name == "synthrepo" && pi != ui%len(params) && pi != 0 {
					continue // every unit with the defaults and one other setting: the reference is slow
				}
				ref, ix := newRef(p), New(p)
				for i, d := range docs {
					if i%2 == 0 {
						ref.Add(d)
						ix.Add(d)
					} else { // AddTerms too
						ref.AddTerms(refTokenize(d))
						ix.AddTerms(Tokenize(d))
					}
				}
				for qi, q := range c.queries {
					compare(t, c.name, unit, p, qi, ref, ix, q)
				}
			}
		}
	}
}

func compare(t *testing.T, name, unit string, p Params, qi int, ref *refIndex, ix *Index, q string) {
	t.Helper()
	if ix.Len() != len(ref.lens) {
		t.Fatalf("%s %s: %d documents, reference %d", name, unit, ix.Len(), len(ref.lens))
	}
	want, got := ref.Scores(q), ix.Scores(q)
	for d := range want {
		if math.Float64bits(got[d]) != math.Float64bits(want[d]) {
			t.Fatalf("%s %s %+v query %d doc %d: score %v, reference %v", name, unit, p, qi, d, got[d], want[d])
		}
	}
	if r, w := ix.Rank(q), ref.Rank(q); !slices.Equal(r, w) {
		t.Fatalf("%s %s %+v query %d: ranking differs from the reference", name, unit, p, qi)
	}
	for _, term := range refTokenize(q) {
		if a, b := ix.IDF(term), ref.IDF(term); math.Float64bits(a) != math.Float64bits(b) {
			t.Fatalf("%s %s: IDF(%q) %v, reference %v", name, unit, term, a, b)
		}
	}
}

// docsOf cuts the files into the documents activities.Retrieve indexes for a unit (swebench_file: path and
// contents of whole files).
func docsOf(files []repoFile, unit string) []string {
	u := chunk.Unit(unit)
	if unit == "swebench_file" {
		u = chunk.File
	}
	var docs []string
	for _, f := range files {
		if len(f.data) == 0 || bytes.IndexByte(f.data[:min(len(f.data), 8000)], 0) >= 0 {
			continue
		}
		for _, c := range chunk.Split(f.path, f.data, u, chunk.DefaultWindow) {
			if unit == "swebench_file" {
				docs = append(docs, c.Path+"\n"+c.Text)
			} else {
				docs = append(docs, c.Text)
			}
		}
	}
	return docs
}

// demoCorpora are the demo dataset's snapshots at every instance's base commit, asked the instance's problem
// statement and the edge queries.
func demoCorpora(t *testing.T) []corpus {
	dir, err := os.MkdirTemp("", "ctxlab-bm25-demo-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	res, err := demobench.Generate(filepath.Join(dir, "dataset"))
	if err != nil {
		t.Fatal(err)
	}
	var out []corpus
	for _, in := range res.Instances {
		r, err := git.PlainOpen(demobench.RepoDir(res.DatasetDir, in.Repo))
		if err != nil {
			t.Fatal(err)
		}
		commit, err := r.CommitObject(plumbing.NewHash(in.BaseCommit))
		if err != nil {
			t.Fatal(err)
		}
		tree, err := commit.Tree()
		if err != nil {
			t.Fatal(err)
		}
		c := corpus{name: in.InstanceID, queries: append([]string{in.ProblemStatement}, edgeQueries...)}
		err = tree.Files().ForEach(func(f *object.File) error {
			s, err := f.Contents()
			c.files = append(c.files, repoFile{f.Name, []byte(s)})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		sort.Slice(c.files, func(i, j int) bool { return c.files[i].path < c.files[j].path })
		out = append(out, c)
	}
	if len(out) == 0 {
		t.Fatal("the demo dataset has no instances")
	}
	return out
}

// TestTokenizeMatchesReference compares the tokenizer with the one before issue 31 on random identifier soup:
// underscores, case and digit boundaries, multi-byte and invalid UTF-8.
func TestTokenizeMatchesReference(t *testing.T) {
	alphabet := []string{"a", "b", "Z", "Q", "x", "_", "__", "1", "9", " ", ".", "é", "Ü", "ß", "\xff", "\xc3", "İ", "K",
		"HTTP", "Server", "v2", "\n", "ǅ"}
	rng := rand.New(rand.NewPCG(31, 31))
	for range 20000 {
		var b []byte
		for range rng.IntN(12) {
			b = append(b, alphabet[rng.IntN(len(alphabet))]...)
		}
		s := string(b)
		if got, want := Tokenize(s), refTokenize(s); !slices.Equal(got, want) {
			t.Fatalf("Tokenize(%q) = %q, reference %q", s, got, want)
		}
		ref, ix := newRef(Defaults()), New(Defaults())
		ref.Add(s)
		ix.Add(s)
		ref.Add("x " + s + " QQ")
		ix.Add("x " + s + " QQ")
		compare(t, "random", "text", Defaults(), 0, ref, ix, s)
	}
}
