package llm

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"ctxlab/patch/diff"
)

// Diffs: the unified diff in a model's answer, read exactly as written.

// ErrNoDiff is wrapped by the errors of ExtractDiff, ParseSearchReplace and SearchReplaceDiff when an answer holds
// no edit at all (as opposed to an edit that is malformed): the caller records an empty patch.
var ErrNoDiff = errors.New("the answer holds no edit")

type fenced struct {
	info string // the word after the opening fence, lowercased ("diff", "python", "")
	body string // the lines between the fences, each ending in "\n"
}

// fencedBlocks returns the ``` (or ~~~) blocks of an answer; an unclosed last block runs to the end.
func fencedBlocks(text string) []fenced {
	var out []fenced
	var cur *fenced
	var body strings.Builder
	var marker string
	for _, line := range strings.SplitAfter(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		t := strings.TrimSpace(line)
		if cur == nil {
			if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
				marker = t[:3]
				info := strings.TrimSpace(strings.TrimLeft(t, marker[:1]))
				if f := strings.Fields(info); len(f) > 0 {
					info = f[0]
				}
				cur = &fenced{info: strings.ToLower(info)}
				body.Reset()
			}
			continue
		}
		if strings.HasPrefix(t, marker) && strings.Trim(t, marker[:1]) == "" {
			cur.body = body.String()
			out = append(out, *cur)
			cur = nil
			continue
		}
		body.WriteString(line)
		if !strings.HasSuffix(line, "\n") {
			body.WriteString("\n")
		}
	}
	if cur != nil {
		cur.body = body.String()
		out = append(out, *cur)
	}
	return out
}

// ExtractedDiff is the unified diff read from a model's answer.
type ExtractedDiff struct {
	// Patch is the diff, ending in a newline.
	Patch string
	// Recounted is the number of hunks whose header counts disagreed with their body by blank lines at the hunk's
	// end only and were repaired (diff.RecountBlankTails); 0 when the answer's diff was taken as written.
	Recounted int
}

// ExtractDiff returns the unified diff in a model's answer; see ExtractDiffDetail. A caller that stores the result
// should use ExtractDiffDetail, so that a repaired hunk header is recorded.
func ExtractDiff(text string) (string, error) {
	d, err := ExtractDiffDetail(text)
	return d.Patch, err
}

// ExtractDiffDetail returns the unified diff in a model's answer: the fenced blocks (```, ~~~, with any info word)
// that hold a diff, joined in order (for answers that fence each file apart), or else the diffs in the bare text.
// A diff runs from its first "diff --git" (or "--- " and "+++ ") line through its hunks, each read by the line counts
// of its header, so blank and whitespace-only context lines, lines that look like fences or headers, and hunks at a
// file's end are kept exactly, and blank lines the answer puts after the diff are not taken in. A valid diff written
// into an answer is read back byte for byte.
//
// Line ends: when every header line of the answer's diffs ends in "\r\n" (the whole answer went through a CRLF
// conversion), one "\r" is removed before each "\n" of the answer, so the diff comes back with the LF line ends it
// was written with; "\r" that belong to the diff's content (a CRLF file's lines, in an LF answer) are kept.
//
// A hunk whose header miscounts its lines by blank lines at its end only is repaired as git apply --recount would
// (diff.RecountBlankTails) and counted in Recounted; any other miscount is left as written, for the patch parser. An
// answer without a diff gives an error wrapping ErrNoDiff.
func ExtractDiffDetail(text string) (ExtractedDiff, error) {
	lines := answerDiffLines(text)
	var parts []string
	for _, b := range diffFences(lines) {
		parts = append(parts, diffsIn(lines[b[0]:b[1]], true)...)
	}
	if len(parts) == 0 {
		parts = diffsIn(lines, false)
	}
	if len(parts) == 0 {
		return ExtractedDiff{}, fmt.Errorf("no unified diff (a \"diff --git\" or \"--- \" header) in the answer: %w", ErrNoDiff)
	}
	patch, n := diff.RecountBlankTails(strings.Join(parts, ""))
	return ExtractedDiff{Patch: patch, Recounted: n}, nil
}

// answerDiffLines splits an answer into lines that keep their "\n", removing the "\r" of CRLF line ends when every
// diff header line has one (see ExtractDiffDetail).
func answerDiffLines(text string) []string {
	lines := strings.SplitAfter(text, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	headers, crlf := 0, 0
	for _, l := range lines {
		if strings.HasPrefix(l, "diff --git ") || strings.HasPrefix(l, "--- ") || strings.HasPrefix(l, "+++ ") ||
			strings.HasPrefix(l, "@@ -") {
			headers++
			if strings.HasSuffix(l, "\r\n") {
				crlf++
			}
		}
	}
	if headers == 0 || crlf < headers {
		return lines
	}
	for i, l := range lines {
		if strings.HasSuffix(l, "\r\n") {
			lines[i] = l[:len(l)-2] + "\n"
		}
	}
	return lines
}

// hunkLines follows a hunk through the lines its header announces.
type hunkLines struct{ old, new int }

// take reports whether line is a hunk header or a line of the open hunk, counting it; any other line closes it.
func (h *hunkLines) take(line string) bool {
	if h.old > 0 || h.new > 0 {
		if o, n, ok := diff.HunkLineCounts(line); ok {
			h.old, h.new = h.old-o, h.new-n
			return true
		}
		h.old, h.new = 0, 0
	}
	if o, n, ok := diff.HunkCounts(line); ok {
		h.old, h.new = o, n
		return true
	}
	return false
}

// diffFences returns the [start, end) line ranges of the bodies of the answer's fenced blocks. Inside a block, the
// lines a hunk header announces are the hunk's even when they look like a closing fence (" ```" is a context line of
// a markdown file). An unclosed block runs to the end.
func diffFences(lines []string) [][2]int {
	var out [][2]int
	var hunk hunkLines // a hunk of a bare diff, which no fence opens inside
	for i := 0; i < len(lines); i++ {
		if hunk.take(lines[i]) {
			continue
		}
		t := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(t, "```") && !strings.HasPrefix(t, "~~~") {
			continue
		}
		fence := t[:len(t)-len(strings.TrimLeft(t, t[:1]))] // the run of ` or ~ that opens the block
		start := i + 1
		end := len(lines)
		for j := start; j < len(lines); j++ {
			if hunk.take(lines[j]) {
				continue
			}
			if c := strings.TrimSpace(lines[j]); strings.HasPrefix(c, fence) && strings.Trim(c, fence[:1]) == "" {
				end = j
				break
			}
		}
		out = append(out, [2]int{start, end})
		i = end
		hunk = hunkLines{}
	}
	return out
}

// diffsIn returns the diffs in lines, in order, each ending in a newline. In a fenced block (fenced) every line
// belongs to the answer's code, so lines after a complete hunk that a hunk can hold are kept for the patch parser to
// judge; in bare text a blank line after a complete hunk ends the diff, as prose follows.
func diffsIn(lines []string, fenced bool) []string {
	var out []string
	for from := 0; from < len(lines); {
		start, end := diffSpan(lines, from, fenced)
		if start < 0 {
			break
		}
		d := strings.Join(lines[start:end], "")
		if !strings.HasSuffix(d, "\n") {
			d += "\n"
		}
		d = terminateBinaryBlocks(d)
		if holdsChange(d) {
			out = append(out, d)
		}
		from = max(end, start+1)
	}
	return out
}

// holdsChange reports whether a diff's text changes something: a hunk, or a header that creates, deletes, renames,
// copies or changes the mode of a file, or a binary change. A lone "--- " line in prose does not.
func holdsChange(d string) bool {
	for _, marker := range []string{"\n@@", "\nnew file mode", "\ndeleted file mode", "\nrename ", "\ncopy ",
		"\nnew mode ", "Binary files", "GIT binary patch"} {
		if strings.Contains(d, marker) {
			return true
		}
	}
	return false
}

// diffSpan finds the first diff in lines[from:] and returns its line range, or start -1.
func diffSpan(lines []string, from int, fenced bool) (start, end int) {
	start = diffStart(lines, from)
	if start < 0 {
		return -1, -1
	}
	end = start
	var hunk hunkLines
	loose := false // under a hunk header without counts ("@@ ... @@"): take the lines a hunk can hold
	for pos := start; pos < len(lines); {
		if next, underLoose, ok := headerOrHunkLines(lines, pos, &hunk); ok {
			pos, end, loose = next, next, underLoose
			continue
		}
		// Past a complete hunk: a run of lines a hunk can hold, up to the next header.
		run := hunkRunAt(lines, pos)
		switch {
		case run.end == pos:
			return start, end // prose or a closing fence
		case run.blank && run.end < len(lines) && startsHeader(lines, run.end):
			pos, end = run.end, run.end // blank lines between hunks or files: kept, diff.RecountBlankTails judges them
		case run.blank:
			return start, end // the answer's spacing after the diff
		case !fenced && !loose && strings.TrimSpace(lines[pos]) == "":
			return start, end // prose after a blank line, such as a bulleted list
		default:
			// A hunk longer than its header says (or one under a header without counts): keep it as written, so
			// that the patch is judged as the model wrote it (git apply, like the patch parser, reads a hunk by its
			// header and takes the extra lines for text between files) instead of being cut here.
			pos, end = run.end, run.lastText
			if run.end < len(lines) && startsHeader(lines, run.end) {
				end = run.end
			}
		}
	}
	return start, end
}

// diffStart is the first line at or after from that starts a diff ("diff --git", or "--- " then "+++ "), or -1.
func diffStart(lines []string, from int) int {
	for i := from; i < len(lines); i++ {
		if strings.HasPrefix(lines[i], "diff --git ") || plainFileStart(lines, i) {
			return i
		}
	}
	return -1
}

// headerOrHunkLines reads the lines at lines[pos] that a diff's headers and counted hunks account for: a line of
// the open hunk, a hunk header (loose when it has no counts), a binary patch's blocks or a file header line. It
// returns the line after them; ok is false when lines[pos] is none of those.
func headerOrHunkLines(lines []string, pos int, hunk *hunkLines) (next int, loose, ok bool) {
	l := lines[pos]
	switch {
	case hunk.take(l): // a short hunk closes at a line it cannot hold; diff.RecountBlankTails or the patch parser judges it
		return pos + 1, false, true
	case strings.HasPrefix(l, "@@"):
		return pos + 1, true, true
	case strings.HasPrefix(l, "GIT binary patch"):
		return binaryBlocksEnd(lines, pos+1), false, true
	case isFileHeaderLine(l):
		return pos + 1, false, true
	}
	return pos, false, false
}

// hunkRun is the run of lines a hunk can hold (hunk lines and blank ones) from a position up to the next header.
type hunkRun struct {
	end      int  // the line after the run
	lastText int  // the line after its last non-blank line
	blank    bool // the run is blank lines only
}

func hunkRunAt(lines []string, pos int) hunkRun {
	run := hunkRun{end: pos, lastText: pos, blank: true}
	for ; run.end < len(lines) && !startsHeader(lines, run.end); run.end++ {
		_, _, ok := diff.HunkLineCounts(lines[run.end])
		isBlank := strings.TrimSpace(lines[run.end]) == ""
		if !ok && !isBlank {
			break
		}
		if !isBlank {
			run.blank = false
			run.lastText = run.end + 1
		}
	}
	return run
}

// binaryBlocksEnd returns the line after the blocks of a "GIT binary patch" starting at lines[pos]: the forward and
// the optional reverse block, each a "literal N" or "delta N" line, its base85 data lines and the blank line that
// ends it (git apply reads each block to that blank line). A line that is not the next one of a block ends them.
func binaryBlocksEnd(lines []string, pos int) int {
	for range 2 {
		if pos >= len(lines) || !binaryBlockHeader.MatchString(trimLineEnd(lines[pos])) {
			return pos
		}
		pos++
		for pos < len(lines) && isBase85Line(trimLineEnd(lines[pos])) {
			pos++
		}
		if pos < len(lines) && trimLineEnd(lines[pos]) == "" {
			pos++
		}
	}
	return pos
}

// terminateBinaryBlocks adds the blank line that ends a binary block where the answer lost it (an answer trimmed
// at its end, a fence closed right after the data): git apply refuses a block without it as corrupt.
func terminateBinaryBlocks(d string) string {
	if !strings.Contains(d, "GIT binary patch") {
		return d
	}
	lines := strings.SplitAfter(strings.TrimSuffix(d, "\n"), "\n") // d ends in "\n": no empty last element
	lines[len(lines)-1] += "\n"
	var b strings.Builder
	inBlock := false
	for _, l := range lines {
		t := trimLineEnd(l)
		switch {
		case binaryBlockHeader.MatchString(t):
			inBlock = true
		case inBlock && !isBase85Line(t):
			if t != "" {
				b.WriteString("\n")
			}
			inBlock = false
		}
		b.WriteString(l)
	}
	if inBlock {
		b.WriteString("\n")
	}
	return b.String()
}

var binaryBlockHeader = regexp.MustCompile(`^(literal|delta) [0-9]+$`)

// trimLineEnd removes a line's "\n" or "\r\n".
func trimLineEnd(l string) string { return strings.TrimSuffix(strings.TrimSuffix(l, "\n"), "\r") }

// isBase85Line reports whether l is a data line of a git binary block: a length character ('A'-'Z' for 1-26 bytes,
// 'a'-'z' for 27-52) and then five characters of git's base85 alphabet for every four bytes.
func isBase85Line(l string) bool {
	if len(l) < 6 {
		return false
	}
	var n int
	switch c := l[0]; {
	case c >= 'A' && c <= 'Z':
		n = int(c-'A') + 1
	case c >= 'a' && c <= 'z':
		n = int(c-'a') + 27
	default:
		return false
	}
	if len(l)-1 != (n+3)/4*5 {
		return false
	}
	for i := 1; i < len(l); i++ {
		if !strings.ContainsRune(base85Alphabet, rune(l[i])) {
			return false
		}
	}
	return true
}

// base85Alphabet is git's (base85.c).
const base85Alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~"

// plainFileStart reports whether lines[i] starts a file header without "diff --git": "--- " then "+++ ".
func plainFileStart(lines []string, i int) bool {
	return strings.HasPrefix(lines[i], "--- ") && i+1 < len(lines) && strings.HasPrefix(lines[i+1], "+++ ")
}

// startsHeader reports whether lines[i] starts a hunk or a file.
func startsHeader(lines []string, i int) bool {
	return strings.HasPrefix(lines[i], "@@") || strings.HasPrefix(lines[i], "diff --git ") || plainFileStart(lines, i)
}

// fileHeaderPrefixes start the lines of a git diff's file header, outside hunks.
var fileHeaderPrefixes = []string{"diff --git ", "index ", "--- ", "+++ ", "new file mode", "deleted file mode",
	"old mode", "new mode", "similarity index", "dissimilarity index", "rename from", "rename to", "copy from",
	"copy to", "Binary files", "GIT binary patch", "\\ No newline"}

func isFileHeaderLine(l string) bool {
	for _, p := range fileHeaderPrefixes {
		if strings.HasPrefix(l, p) {
			return true
		}
	}
	return false
}
