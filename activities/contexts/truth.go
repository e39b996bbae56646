package contexts

import (
	"path"
	"slices"
	"strings"

	"github.com/bluekeyes/go-gitdiff/gitdiff"
	"github.com/sergi/go-diff/diffmatchpatch"

	"ctxlab/activities/chunk"
	"ctxlab/patch/diff"
)

// Gold is what the gold patch says a context should show, at three levels (docs/methods.md, "Line-level context
// truth"): the files it edits, the lines of the base files it deletes or replaces (for a pure insertion, the nearest
// non-blank line above and below the insertion point), and the lines of the function or block enclosing each of
// those (activities/chunk's function units). Lines are 1-based, non-blank, sorted.
type Gold struct {
	Files  []string
	Lines  map[string][]int
	Blocks map[string][]int
}

// GoldOf reads the gold patch against the base files (read gives a file's text at base_commit, false when it does
// not exist). A file the patch creates is a gold file with no gold lines; a binary file has none either.
func GoldOf(patch string, read func(path string) (string, bool)) (Gold, error) {
	files, err := diff.ChangedFiles(patch)
	if err != nil {
		return Gold{}, err
	}
	parsed, err := diff.Parse(patch)
	if err != nil {
		return Gold{}, err
	}
	g := Gold{Files: files, Lines: map[string][]int{}, Blocks: map[string][]int{}}
	for _, f := range parsed {
		if f.IsNew || f.IsBinary {
			continue
		}
		name := path.Clean(f.OldName)
		text, ok := read(name)
		if !ok {
			continue
		}
		lines := splitText(text)
		set := map[int]bool{}
		for _, frag := range f.TextFragments {
			for _, n := range fragmentGold(frag, lines) {
				set[n] = true
			}
		}
		if len(set) == 0 {
			continue
		}
		g.Lines[name] = sortedSet(set)
		g.Blocks[name] = enclosingBlocks(name, text, lines, set)
	}
	return g, nil
}

// fragmentGold lists the base lines one hunk deletes, and for each run of added lines with no deletion beside it,
// the nearest non-blank base lines on either side of where it goes.
func fragmentGold(frag *gitdiff.TextFragment, lines []string) []int {
	old := int(frag.OldPosition)
	if frag.OldLines == 0 {
		old++ // "-5,0" inserts after line 5
	}
	var out []int
	for i := 0; i < len(frag.Lines); {
		if frag.Lines[i].Op == gitdiff.OpContext {
			old++
			i++
			continue
		}
		deleted := false
		for ; i < len(frag.Lines) && frag.Lines[i].Op != gitdiff.OpContext; i++ {
			if frag.Lines[i].Op == gitdiff.OpDelete {
				if nonBlank(lines, old) {
					out = append(out, old)
				}
				deleted = true
				old++
			}
		}
		if !deleted { // a pure insertion before base line old
			for above := old - 1; above >= 1; above-- {
				if nonBlank(lines, above) {
					out = append(out, above)
					break
				}
			}
			for below := old; below <= len(lines); below++ {
				if nonBlank(lines, below) {
					out = append(out, below)
					break
				}
			}
		}
	}
	return out
}

// enclosingBlocks lists the non-blank lines of every function unit of the file holding a gold line.
func enclosingBlocks(name, text string, lines []string, gold map[int]bool) []int {
	set := map[int]bool{}
	for _, c := range chunk.Split(name, []byte(text), chunk.Function, 0) {
		holds := false
		for n := c.Start; n <= c.End && !holds; n++ {
			holds = gold[n]
		}
		for n := c.Start; holds && n <= c.End; n++ {
			if nonBlank(lines, n) {
				set[n] = true
			}
		}
	}
	return sortedSet(set)
}

// Truth is a context's recall and precision against the gold patch at file, block and line level. A recall is nil
// when there is nothing to recall (no gold file; no gold line, as for a patch that only creates files), a precision
// when the context shows nothing (no file; no non-blank repository line).
type Truth struct {
	// FileRecall is the share of gold files shown (rho); FilePrecision the share of shown files that are gold.
	FileRecall, FilePrecision *float64
	// BlockRecall is the share of the gold blocks' lines shown verbatim at their place; BlockPrecision the share of
	// the context's lines that are such lines.
	BlockRecall, BlockPrecision *float64
	// LineRecall is the share of gold lines shown verbatim at their place; LinePrecision the share of the context's
	// lines that are gold lines.
	LineRecall, LinePrecision *float64
	// GoldLines, GoldBlockLines and ContextLines are the denominators: gold lines, gold blocks' lines, and the
	// context's non-blank repository lines.
	GoldLines, GoldBlockLines, ContextLines int
}

// MeasureTruth measures c against g. A context line counts as a base line when an alignment of its block with the
// file (the longest common subsequence of their non-blank lines, from the block's first line on) pairs it with an
// equal line, up to trailing whitespace: a line changed by compression or corruption, or the same text elsewhere in
// the file, is not the gold line.
func MeasureTruth(c Context, g Gold, read func(path string) (string, bool)) Truth {
	var t Truth
	gold, blocks := lineSets(g.Lines), lineSets(g.Blocks)
	for _, ns := range g.Lines {
		t.GoldLines += len(ns)
	}
	for _, ns := range g.Blocks {
		t.GoldBlockLines += len(ns)
	}
	shownGold, shownBlock := map[string]map[int]bool{}, map[string]map[int]bool{}
	inGold, inBlock := 0, 0
	for _, b := range c.Blocks {
		text, _ := read(b.Path)
		for _, n := range alignBlock(splitText(text), b) {
			t.ContextLines++
			if gold[b.Path][n] {
				inGold++
				mark(shownGold, b.Path, n)
			}
			if blocks[b.Path][n] {
				inBlock++
				mark(shownBlock, b.Path, n)
			}
		}
	}
	isGold := map[string]bool{}
	for _, f := range g.Files {
		isGold[f] = true
	}
	shownFiles, goldShown := c.Files(), 0
	for _, f := range shownFiles {
		if isGold[f] {
			goldShown++
		}
	}
	t.FileRecall, t.FilePrecision = share(goldShown, len(isGold)), share(goldShown, len(shownFiles))
	t.LineRecall, t.LinePrecision = share(count(shownGold), t.GoldLines), share(inGold, t.ContextLines)
	t.BlockRecall, t.BlockPrecision = share(count(shownBlock), t.GoldBlockLines), share(inBlock, t.ContextLines)
	return t
}

// alignBlock returns, for each non-blank line of the block, the base line it is a verbatim copy of (0 for none).
func alignBlock(file []string, b Block) []int {
	start := max(b.Start, 1)
	var fileNums []int
	var fileKeys, shownKeys []rune
	keys := map[string]rune{}
	key := func(l string) rune {
		k, ok := keys[l]
		if !ok {
			// Distinct lines become distinct runes, skipping the surrogates (not runes of a Go string).
			k = rune(len(keys) + 1)
			if k >= 0xD800 {
				k += 0x800
			}
			keys[l] = k
		}
		return k
	}
	for n := start; n <= len(file); n++ {
		if t := strings.TrimRight(file[n-1], " \t\r"); strings.TrimSpace(t) != "" {
			fileNums = append(fileNums, n)
			fileKeys = append(fileKeys, key(t))
		}
	}
	for _, l := range splitText(b.Text) {
		if t := strings.TrimRight(l, " \t\r"); strings.TrimSpace(t) != "" {
			shownKeys = append(shownKeys, key(t))
		}
	}
	out := make([]int, len(shownKeys))
	dmp := diffmatchpatch.New()
	dmp.DiffTimeout = 0 // no deadline: the alignment is always the longest one, whatever the machine's speed
	fi, si := 0, 0
	for _, d := range dmp.DiffMainRunes(fileKeys, shownKeys, false) {
		n := len([]rune(d.Text))
		switch d.Type {
		case diffmatchpatch.DiffEqual:
			for k := 0; k < n; k++ {
				out[si+k] = fileNums[fi+k]
			}
			fi, si = fi+n, si+n
		case diffmatchpatch.DiffDelete:
			fi += n
		case diffmatchpatch.DiffInsert:
			si += n
		}
	}
	return out
}

// splitText splits a text into its lines, without their "\n" (a final newline ends the last line).
func splitText(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// nonBlank reports whether line n (1-based) exists and holds more than whitespace.
func nonBlank(lines []string, n int) bool {
	return n >= 1 && n <= len(lines) && strings.TrimSpace(lines[n-1]) != ""
}

func sortedSet(set map[int]bool) []int {
	out := make([]int, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

func lineSets(m map[string][]int) map[string]map[int]bool {
	out := map[string]map[int]bool{}
	for p, ns := range m {
		out[p] = map[int]bool{}
		for _, n := range ns {
			out[p][n] = true
		}
	}
	return out
}

func mark(m map[string]map[int]bool, p string, n int) {
	if m[p] == nil {
		m[p] = map[int]bool{}
	}
	m[p][n] = true
}

func count(m map[string]map[int]bool) int {
	n := 0
	for _, s := range m {
		n += len(s)
	}
	return n
}

// share is num/den, nil when den is 0.
func share(num, den int) *float64 {
	if den == 0 {
		return nil
	}
	v := float64(num) / float64(den)
	return &v
}
