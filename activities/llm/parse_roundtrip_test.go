package llm

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/bluekeyes/go-gitdiff/gitdiff"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"

	"ctxlab/demobench"
	"ctxlab/patch/diff"
)

// The property of ExtractDiff: every valid unified diff D, written in any shape a model or the offline stand-in
// answers with, is read back as D byte for byte.

// answerShapes writes the diff d as the answers models give: fenced with several info words and fence kinds, bare
// with prose around it, with CRLF line ends, with spaces after the fences, one fence per file.
func answerShapes(d string) map[string]string {
	shapes := map[string]string{
		"fenced diff":            "Here is the fix:\n\n```diff\n" + d + "```\n\nThis sets x to 2.\n",
		"fenced patch":           "```patch\n" + d + "```",
		"fenced bare":            "The change:\n```\n" + d + "```\n",
		"tilde fence":            "~~~diff\n" + d + "~~~\n",
		"four backticks":         "````diff\n" + d + "````\nDone.",
		"spaces after fences":    "Fix:\n```diff   \n" + d + "```  \t\nThanks.\n",
		"blank before the close": "```diff\n" + d + "\n\n```\n",
		"unclosed fence":         "```diff\n" + d,
		"bare":                   d,
		"bare with prose":        "I changed one file.\n\n" + d + "\nThis fixes the bug.\n",
		"bare then blank prose":  "Patch:\n" + d + "\n\n- it keeps the old behaviour\n- and adds a test\n",
		"bare without last newline": func() string {
			return strings.TrimSuffix(d, "\n")
		}(),
		"other code first": "```go\nfunc main() {}\n```\n\n```diff\n" + d + "```\n",
	}
	shapes["crlf fenced"] = strings.ReplaceAll(shapes["fenced diff"], "\n", "\r\n")
	shapes["crlf bare"] = strings.ReplaceAll(shapes["bare with prose"], "\n", "\r\n")
	if files := splitFiles(d); len(files) > 1 {
		var b strings.Builder
		for i, f := range files {
			fmt.Fprintf(&b, "File %d:\n\n```diff\n%s```\n\n", i+1, f)
		}
		shapes["one fence per file"] = b.String()
	}
	return shapes
}

// splitFiles cuts a git diff at its "diff --git" lines.
func splitFiles(d string) []string {
	var out []string
	lines := strings.SplitAfter(d, "\n")
	start := 0
	for i, l := range lines {
		if i > start && strings.HasPrefix(l, "diff --git ") {
			out = append(out, strings.Join(lines[start:i], ""))
			start = i
		}
	}
	return append(out, strings.Join(lines[start:], ""))
}

// filePair is a file's content before and after an edit; nil is a file that does not exist.
type filePair struct{ old, new []byte }

// generatedCases are edits chosen for the lines a parser trips on: hunks that end in blank or whitespace-only context
// lines, hunks at the end of a file, files without a final newline, created and deleted files, CRLF file content,
// markdown fences and lines that look like diff headers.
func generatedCases() map[string][]filePair {
	lines := func(n int, f func(i int) string) string {
		var b strings.Builder
		for i := 0; i < n; i++ {
			b.WriteString(f(i))
		}
		return b.String()
	}
	goFile := "package p\n\nfunc A() int {\n\treturn 1\n}\n\nfunc B() int {\n\treturn 2\n}\n\nfunc C() int {\n\treturn 3\n}\n"
	b := func(s string) []byte { return []byte(s) }
	return map[string][]filePair{
		"blank context at hunk end":           {{b(goFile), b(strings.Replace(goFile, "return 1", "return 10", 1))}},
		"two blank context lines at hunk end": {{b("a\nb\nc\nd\n\n\nz\ny\nx\n"), b("a\nb\nc\nD\n\n\nz\ny\nx\n")}},
		"whitespace-only context":             {{b("a\nb\nc\nd\n  \n\t\n \t \nz\n"), b("a\nb\nc\nD\n  \n\t\n \t \nz\n")}},
		"whitespace-only lines changed":       {{b("a\n \nb\n\t\nc\n"), b("a\n\nb\n  \nc\n")}},
		"blank lines added at file end":       {{b("a\nb\n"), b("a\nb\n\n\n")}},
		"blank lines removed at end":          {{b("a\nb\n\n\n\n"), b("a\nb\n")}},
		"no newline at end, old":              {{b("a\nb\nc"), b("a\nb\nc\n")}},
		"no newline at end, new":              {{b("a\nb\nc\n"), b("a\nb\nC")}},
		"no newline at end, both":             {{b("a\n\nb\n\nc"), b("a\n\nB\n\nc")}},
		"blank line without newline":          {{b("a\nb\n "), b("a\nB\n ")}},
		"new file":                            {{nil, b("package q\n\nvar X = 1\n\n")}},
		"new empty file":                      {{nil, b("")}},
		"deleted file":                        {{b("package q\n\n\nvar X = 1\n\n"), nil}},
		"crlf content":                        {{b("a\r\nb\r\n\r\nc\r\n"), b("a\r\nB\r\n\r\nc\r\n")}},
		"markdown fences": {{b("# T\n\n```go\nx := 1\n```\n\n~~~\ny\n~~~\n"),
			b("# T\n\n```go\nx := 2\n```\n\n~~~\ny\n~~~\n")}},
		"header lookalikes": {{b("-- a\n++ b\n@@ c\ndiff --git x y\n"), b("-- A\n++ B\n@@ C\ndiff --git x y\n")}},
		"hunks at both ends": {{b(lines(30, func(i int) string { return fmt.Sprintf("l%d\n", i) }) + "\n"),
			b("first\n" + lines(30, func(i int) string { return fmt.Sprintf("l%d\n", i) }) + "\n\nlast\n")}},
		"several files, blank tails": {
			{b(goFile), b(strings.Replace(goFile, "return 2", "return 20", 1))},
			{b("x\ny\n\n"), b("x\nY\n\n")},
			{nil, b("\n\n")},
		},
	}
}

// generatedDiffs are the diffs of generatedCases, written with diff.Unified.
func generatedDiffs() map[string]string {
	out := map[string]string{}
	for name, pairs := range generatedCases() {
		var d strings.Builder
		for i, p := range pairs {
			d.WriteString(diff.Unified(fmt.Sprintf("dir/f%d.txt", i), p.old, p.new))
		}
		out["generated/"+name] = d.String()
	}
	// Header-only changes, which diff.Unified does not write.
	out["literal/mode change"] = "diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n"
	out["literal/rename"] = "diff --git a/a.txt b/b.txt\nsimilarity index 100%\nrename from a.txt\nrename to b.txt\n"
	out["literal/rename and edit"] = "diff --git a/a.txt b/b.txt\nsimilarity index 80%\nrename from a.txt\nrename to b.txt\n" +
		"index 1111111..2222222 100644\n--- a/a.txt\n+++ b/b.txt\n@@ -1,3 +1,3 @@\n x\n-y\n+Y\n \n"
	return out
}

var demoCorpus struct {
	once  sync.Once
	diffs map[string]string
	err   error
}

// demoDiffs returns every commit diff of the demo repositories (each commit against its parent, all files in one
// diff, written with diff.Unified) and the gold and test patches of the demo instances.
func demoDiffs(t testing.TB) map[string]string {
	t.Helper()
	demoCorpus.once.Do(func() {
		dir, err := os.MkdirTemp("", "ctxlab-parse-corpus-")
		if err != nil {
			demoCorpus.err = err
			return
		}
		defer os.RemoveAll(dir)
		demoCorpus.diffs, demoCorpus.err = buildDemoDiffs(filepath.Join(dir, "dataset"))
	})
	if demoCorpus.err != nil {
		t.Fatal(demoCorpus.err)
	}
	return demoCorpus.diffs
}

func buildDemoDiffs(dir string) (map[string]string, error) {
	res, err := demobench.Generate(dir)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	repos := map[string]bool{}
	for _, in := range res.Instances {
		out["gold/"+in.InstanceID] = in.Patch
		out["test_patch/"+in.InstanceID] = in.TestPatch
		repos[in.Repo] = true
	}
	for name := range repos {
		repo, err := git.PlainOpen(demobench.RepoDir(res.DatasetDir, name))
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", name, err)
		}
		head, err := repo.Head()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		commits, err := repo.Log(&git.LogOptions{From: head.Hash()})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		err = commits.ForEach(func(c *object.Commit) error {
			files, err := commitFiles(c)
			if err != nil {
				return err
			}
			parent := map[string][]byte{}
			if p, err := c.Parent(0); err == nil {
				if parent, err = commitFiles(p); err != nil {
					return err
				}
			}
			var paths []string
			for p := range files {
				paths = append(paths, p)
			}
			for p := range parent {
				if _, ok := files[p]; !ok {
					paths = append(paths, p)
				}
			}
			sort.Strings(paths)
			var d strings.Builder
			for _, p := range paths {
				d.WriteString(diff.Unified(p, parent[p], files[p]))
			}
			if d.Len() > 0 {
				out["commit/"+name+"/"+c.Hash.String()[:10]] = d.String()
			}
			if c.Hash == head.Hash() {
				// Edits spread over every file of the last commit: real files give hunks that end in blank lines,
				// whitespace-only lines and file ends in the proportions real code has.
				for p, data := range files {
					if edited := editEvery(data, 9); edited != nil {
						out["edit/"+name+"/"+p] = diff.Unified(p, data, edited)
					}
				}
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	return out, nil
}

// commitFiles reads every file of a commit's tree.
func commitFiles(c *object.Commit) (map[string][]byte, error) {
	tree, err := c.Tree()
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	err = tree.Files().ForEach(func(f *object.File) error {
		r, err := f.Reader()
		if err != nil {
			return err
		}
		defer r.Close()
		data, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		out[f.Name] = data
		return nil
	})
	return out, err
}

// diffCorpus is the demo diffs and the generated ones, each checked to be a patch diff.Parse reads.
func diffCorpus(t testing.TB) map[string]string {
	t.Helper()
	out := generatedDiffs()
	for k, v := range demoDiffs(t) {
		out[k] = v
	}
	for name, d := range out {
		if _, err := diff.Parse(d); err != nil {
			t.Fatalf("%s: the corpus diff does not parse: %v\n%s", name, err, d)
		}
	}
	return out
}

func TestExtractDiffRoundTripsTheCorpus(t *testing.T) {
	corpus := diffCorpus(t)
	if len(corpus) < 40 {
		t.Fatalf("corpus has only %d diffs", len(corpus))
	}
	// The corpus must hold the shape that broke: hunks whose last line is a blank context line.
	blankTails := 0
	for _, d := range corpus {
		files, _ := diff.Parse(d)
		for _, f := range files {
			for _, frag := range f.TextFragments {
				if last := frag.Lines[len(frag.Lines)-1]; last.Op == gitdiff.OpContext && strings.TrimSpace(last.Line) == "" {
					blankTails++
				}
			}
		}
	}
	t.Logf("%d diffs, %d hunks ending in a blank context line", len(corpus), blankTails)
	if blankTails < 10 {
		t.Errorf("only %d corpus hunks end in a blank context line", blankTails)
	}
	names := make([]string, 0, len(corpus))
	for n := range corpus {
		names = append(names, n)
	}
	sort.Strings(names)
	failed := 0
	for _, name := range names {
		d := corpus[name]
		for shape, answer := range answerShapes(d) {
			got, err := ExtractDiffDetail(answer)
			if err != nil {
				t.Errorf("%s as %s: %v", name, shape, err)
				failed++
				continue
			}
			if got.Patch != d || got.Recounted != 0 {
				failed++
				if failed <= 5 {
					t.Errorf("%s as %s: extracted diff differs (recounted %d): %s", name, shape, got.Recounted,
						firstDifference(got.Patch, d))
				}
			}
		}
	}
	if failed > 0 {
		t.Errorf("%d answers of %d diffs did not round trip", failed, len(corpus))
	}
}

// firstDifference describes where got first differs from want, by line.
func firstDifference(got, want string) string {
	g, w := strings.SplitAfter(got, "\n"), strings.SplitAfter(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d: got %q, want %q (got %d lines, want %d)", i+1, gl, wl, len(g), len(w))
		}
	}
	return "no difference"
}

// editEvery changes every n-th line that has text (appending a marker), or returns nil when none has.
func editEvery(data []byte, n int) []byte {
	lines := strings.SplitAfter(string(data), "\n")
	changed := false
	for i, l := range lines {
		if i%n == n-1 && strings.TrimSpace(l) != "" {
			body, nl := strings.CutSuffix(l, "\n")
			lines[i] = body + " // edited"
			if nl {
				lines[i] += "\n"
			}
			changed = true
		}
	}
	if !changed {
		return nil
	}
	return []byte(strings.Join(lines, ""))
}
