package diff

import (
	"fmt"
	"strconv"
	"strings"
)

// HunkCounts reads the old and new line counts of a hunk header "@@ -a[,b] +c[,d] @@ ..." (a missing count is 1,
// as in git). ok is false for any other line. A trailing "\r" is allowed.
func HunkCounts(line string) (oldLines, newLines int, ok bool) {
	h, err := parseHunkHeader(line)
	if err != nil {
		return 0, 0, false
	}
	return h.oldLines, h.newLines, true
}

// HunkLineCounts says how a line inside a hunk counts against the header: a context line (" x", or an empty line,
// which git and GNU diff take for a blank context line) counts for both sides, "-" for the old side, "+" for the
// new, and a "\ No newline at end of file" marker for neither. ok is false for a line that cannot be in a hunk.
func HunkLineCounts(line string) (oldLines, newLines int, ok bool) {
	if line == "\n" {
		return 1, 1, true
	}
	if line == "" {
		return 0, 0, false
	}
	switch line[0] {
	case ' ':
		return 1, 1, true
	case '-':
		return 1, 0, true
	case '+':
		return 0, 1, true
	case '\\':
		return 0, 0, isNoNewlineMarker(line)
	}
	return 0, 0, false
}

func isNoNewlineMarker(line string) bool { return strings.HasPrefix(line, "\\ ") }

type hunkHeader struct {
	oldStart, oldLines, newStart, newLines int
	section                                string // everything after the closing "@@", newline included
}

func parseHunkHeader(line string) (hunkHeader, error) {
	rest, ok := strings.CutPrefix(line, "@@ -")
	if !ok {
		return hunkHeader{}, fmt.Errorf("not a hunk header")
	}
	ranges, section, ok := strings.Cut(rest, " @@")
	if !ok {
		return hunkHeader{}, fmt.Errorf("hunk header without a closing @@")
	}
	oldRange, newRange, ok := strings.Cut(ranges, " +")
	if !ok {
		return hunkHeader{}, fmt.Errorf("hunk header without a new range")
	}
	var h hunkHeader
	var err error
	if h.oldStart, h.oldLines, err = parseRange(oldRange); err != nil {
		return hunkHeader{}, err
	}
	if h.newStart, h.newLines, err = parseRange(newRange); err != nil {
		return hunkHeader{}, err
	}
	h.section = section
	return h, nil
}

func parseRange(s string) (start, count int, err error) {
	a, b, hasCount := strings.Cut(s, ",")
	if start, err = strconv.Atoi(a); err != nil || start < 0 {
		return 0, 0, fmt.Errorf("bad hunk range %q", s)
	}
	count = 1
	if hasCount {
		if count, err = strconv.Atoi(b); err != nil || count < 0 {
			return 0, 0, fmt.Errorf("bad hunk range %q", s)
		}
	}
	return start, count, nil
}

func (h hunkHeader) String() string {
	return fmt.Sprintf("@@ -%d,%d +%d,%d @@%s", h.oldStart, h.oldLines, h.newStart, h.newLines, h.section)
}

// RecountBlankTails repairs the hunks whose header counts disagree with their body by blank lines at the hunk's end
// only, the way git apply --recount would, and returns the repaired patch and how many hunks it repaired. Two
// mismatches are repaired:
//
//   - a hunk that ends (at the next header or the end of the patch) short of the same number n >= 1 of old and new
//     lines, where n and the context lines after its last change add up to at most Context (git's trailing context):
//     the blank context lines that ended it were lost (a model, an editor or a chat window trims trailing
//     whitespace), so the header is recounted from the body;
//   - whitespace-only lines between a hunk whose counts are complete and the next hunk of the same file: the answer
//     added them, so they are dropped (the header is right; kept, they would end the file's hunks early).
//
// Any other miscount is left as it is, for Parse to report as ErrMalformed. A patch without such hunks is returned
// unchanged with 0, so a correct patch goes through byte for byte.
func RecountBlankTails(patch string) (string, int) {
	lines := strings.SplitAfter(patch, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	var out strings.Builder
	out.Grow(len(patch))
	repaired := 0
	for i := 0; i < len(lines); {
		h, err := parseHunkHeader(lines[i])
		if err != nil {
			out.WriteString(lines[i])
			i++
			continue
		}
		remOld, remNew := h.oldLines, h.newLines
		changes, trailing := 0, 0 // change lines, and context lines after the last change
		j := i + 1
		for ; j < len(lines) && (remOld > 0 || remNew > 0); j++ {
			o, n, ok := HunkLineCounts(lines[j])
			if !ok || (plainFileHeader(lines, j) && (remOld != 1 || remNew != 1)) {
				break
			}
			remOld, remNew = remOld-o, remNew-n
			switch {
			case o != n:
				changes++
				trailing = 0
			case o == 1:
				trailing++
			}
		}
		if remOld == 0 && remNew == 0 && j < len(lines) && isNoNewlineMarker(lines[j]) {
			j++
		}
		header := lines[i]
		next := j
		switch {
		case remOld == 0 && remNew == 0:
			k := j
			for k < len(lines) && strings.TrimSpace(lines[k]) == "" {
				k++
			}
			if k > j && k < len(lines) && strings.HasPrefix(lines[k], "@@ -") {
				next = k
				repaired++
			}
		case remOld == remNew && remOld >= 1 && trailing+remOld <= Context && changes > 0 &&
			remOld < h.oldLines && remNew < h.newLines && endsHunk(lines, j):
			h.oldLines -= remOld
			h.newLines -= remNew
			header = h.String()
			repaired++
		}
		out.WriteString(header)
		for _, l := range lines[i+1 : j] {
			out.WriteString(l)
		}
		i = next
	}
	if repaired == 0 {
		return patch, 0
	}
	return out.String(), repaired
}

// plainFileHeader reports whether lines[j] starts a file header without "diff --git": "--- ", "+++ ", "@@ -". Inside
// a hunk those lines could also be a removed "-- " line and an added "++ " line, so only a hunk that the two lines
// would not complete stops there.
func plainFileHeader(lines []string, j int) bool {
	return j+2 < len(lines) && strings.HasPrefix(lines[j], "--- ") && strings.HasPrefix(lines[j+1], "+++ ") &&
		strings.HasPrefix(lines[j+2], "@@ -")
}

// endsHunk reports whether lines[j] may follow a hunk: the end of the patch, another hunk or a file header.
func endsHunk(lines []string, j int) bool {
	if j >= len(lines) {
		return true
	}
	l := lines[j]
	return strings.HasPrefix(l, "@@ -") || strings.HasPrefix(l, "diff --git ") ||
		(strings.HasPrefix(l, "--- ") && j+1 < len(lines) && strings.HasPrefix(lines[j+1], "+++ "))
}
