package llm

import (
	"sort"
	"strings"
	"testing"

	"github.com/bluekeyes/go-gitdiff/gitdiff"

	"ctxlab/patch/diff"
)

// canonicalDiff reports whether d is a valid text diff in git's format: it parses, and go-gitdiff writes exactly d
// back from what it parsed (so d has no stray lines, miscounted hunks or text outside the diff). Binary patches are
// left out: ExtractDiff reads text diffs.
func canonicalDiff(d string) bool {
	if !strings.HasPrefix(d, "diff --git ") || !strings.HasSuffix(d, "\n") {
		return false
	}
	files, _, err := gitdiff.Parse(strings.NewReader(d))
	if err != nil || len(files) == 0 {
		return false
	}
	var b strings.Builder
	for _, f := range files {
		if f.IsBinary || f.BinaryFragment != nil {
			return false
		}
		b.WriteString(f.String())
	}
	return b.String() == d
}

func sortedShapeNames(d string) []string {
	var names []string
	for n := range answerShapes(d) {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// FuzzExtractDiff checks that ExtractDiffDetail never fails on any answer, and that a canonical diff written in any
// answer shape comes back byte for byte with no hunk recounted. The diff is either d itself (when canonical) or the
// diff diff.Unified writes for an edit of one file from before to after, so that the fuzzer's changes to file
// content, which keep the diff valid, reach the parser. It is seeded with the round-trip corpus and its edits.
func FuzzExtractDiff(f *testing.F) {
	corpus := diffCorpus(f)
	names := make([]string, 0, len(corpus))
	for n := range corpus {
		names = append(names, n)
	}
	sort.Strings(names)
	for i, n := range names {
		f.Add(corpus[n], "", "", uint8(i))
	}
	cases := generatedCases()
	caseNames := make([]string, 0, len(cases))
	for n := range cases {
		caseNames = append(caseNames, n)
	}
	sort.Strings(caseNames)
	for i, n := range caseNames {
		for _, p := range cases[n] {
			if p.old != nil && p.new != nil {
				f.Add("", string(p.old), string(p.new), uint8(i))
			}
		}
	}
	f.Fuzz(func(t *testing.T, d, before, after string, shape uint8) {
		if got, err := ExtractDiffDetail(d); err == nil && !strings.HasSuffix(got.Patch, "\n") {
			t.Fatalf("extracted diff does not end in a newline: %q", got.Patch)
		}
		if canonicalDiff(d) {
			checkRoundTrip(t, d, shape)
		}
		edit := diff.Unified("dir/file.txt", []byte(before), []byte(after))
		if edit == "" {
			return
		}
		if _, err := diff.Parse(edit); err != nil {
			t.Fatalf("diff.Unified wrote a diff that does not parse: %v\n%q", err, edit)
		}
		checkRoundTrip(t, edit, shape)
	})
}

// checkRoundTrip writes a valid diff d in one answer shape and checks that it is read back exactly.
func checkRoundTrip(t *testing.T, d string, shape uint8) {
	t.Helper()
	shapes := answerShapes(d)
	names := sortedShapeNames(d)
	name := names[int(shape)%len(names)]
	got, err := ExtractDiffDetail(shapes[name])
	if err != nil {
		t.Fatalf("%s: %v\ndiff: %q", name, err, d)
	}
	if got.Patch != d || got.Recounted != 0 {
		t.Fatalf("%s: extracted diff differs (recounted %d): %s\ndiff: %q", name, got.Recounted,
			firstDifference(got.Patch, d), d)
	}
}
