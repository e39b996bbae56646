package llm

import (
	"fmt"
	pathpkg "path"
	"regexp"
	"strings"

	"ctxlab/patch/diff"
)

// Replace is one search/replace block: in the file at Path, the lines Search become the lines Replace. An empty
// Search creates the file (or appends to it).
type Replace struct {
	Path, Search, Replace string
}

var (
	searchMarker  = regexp.MustCompile(`^\s*<{5,9}\s*SEARCH\s*$`)
	dividerMarker = regexp.MustCompile(`^\s*={5,9}\s*$`)
	replaceMarker = regexp.MustCompile(`^\s*>{5,9}\s*REPLACE\s*$`)
	// pathLabel is the decoration models put around a block's file name: "File:", "### ", "**", backticks.
	pathLabel = regexp.MustCompile(`^(?:#+\s*)?(?:(?i:file|path|filename)\s*:\s*)?`)
)

// ParseSearchReplace reads the search/replace blocks of a model's answer:
//
//	path/to/file.go
//	<<<<<<< SEARCH
//	old lines
//	=======
//	new lines
//	>>>>>>> REPLACE
//
// The path is the last non-empty line before "<<<<<<< SEARCH" that is not a fence marker (so blocks inside ``` fences
// work), stripped of markdown ("### File: `a.go`" is a.go); a block with no path line of its own takes the previous
// block's. An answer without blocks gives an error wrapping ErrNoDiff; an unfinished block, or one with no path,
// an error naming the block.
func ParseSearchReplace(text string) ([]Replace, error) {
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	var blocks []Replace
	lastPath := ""
	candidate := "" // the last path-like line seen outside a block
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if !searchMarker.MatchString(l) {
			t := strings.TrimSpace(l)
			if t != "" && !strings.HasPrefix(t, "```") && !strings.HasPrefix(t, "~~~") {
				candidate = t
			}
			continue
		}
		n := len(blocks) + 1
		path := cleanBlockPath(candidate)
		if path == "" {
			path = lastPath
		}
		if path == "" {
			return nil, fmt.Errorf("search/replace block %d (line %d) has no file path on the line before %q", n, i+1, strings.TrimSpace(l))
		}
		var search, repl []string
		j := i + 1
		for ; j < len(lines) && !dividerMarker.MatchString(lines[j]); j++ {
			if searchMarker.MatchString(lines[j]) || replaceMarker.MatchString(lines[j]) {
				return nil, fmt.Errorf("search/replace block %d (%s, line %d): no ======= line between SEARCH and REPLACE", n, path, i+1)
			}
			search = append(search, lines[j])
		}
		if j == len(lines) {
			return nil, fmt.Errorf("search/replace block %d (%s, line %d): no ======= line after SEARCH", n, path, i+1)
		}
		k := j + 1
		for ; k < len(lines) && !replaceMarker.MatchString(lines[k]); k++ {
			if searchMarker.MatchString(lines[k]) {
				return nil, fmt.Errorf("search/replace block %d (%s, line %d): no >>>>>>> REPLACE line", n, path, i+1)
			}
			repl = append(repl, lines[k])
		}
		if k == len(lines) {
			return nil, fmt.Errorf("search/replace block %d (%s, line %d): no >>>>>>> REPLACE line", n, path, i+1)
		}
		blocks = append(blocks, Replace{Path: path, Search: joinLines(search), Replace: joinLines(repl)})
		lastPath, candidate = path, ""
		i = k
	}
	if len(blocks) == 0 {
		return nil, fmt.Errorf("no search/replace blocks (a path line, then <<<<<<< SEARCH, =======, >>>>>>> REPLACE) in the answer: %w", ErrNoDiff)
	}
	return blocks, nil
}

// joinLines joins lines into text where every line ends in "\n" ("" for none).
func joinLines(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}

// cleanBlockPath strips markdown from a block's path line; "" when the line is not a single path.
func cleanBlockPath(line string) string {
	t := pathLabel.ReplaceAllString(strings.TrimSpace(line), "")
	t = strings.Trim(strings.TrimSpace(t), "`*\"'")
	t = strings.TrimSuffix(strings.TrimSpace(t), ":")
	t = strings.Trim(t, "`*\"'")
	for strings.HasPrefix(t, "./") {
		t = t[2:]
	}
	if t == "" || strings.ContainsAny(t, " \t") {
		return ""
	}
	return t
}

// SearchReplaceDiff applies blocks, in order, to the real files (read returns a file's text and whether it exists)
// and returns the change as one unified diff made by diff.Unified, files in order of first mention. Each SEARCH
// text must occur exactly once: an exact match is tried first, then a match of whole lines that ignores leading
// and trailing whitespace (the replacement then takes the file's indentation). An empty SEARCH creates a missing
// file, or appends to an existing one. A path "a/x" or "b/x" that does not exist while "x" does means "x".
// Errors name the block (numbered from 1) and its file; blocks that change nothing give an error wrapping
// ErrNoDiff.
func SearchReplaceDiff(blocks []Replace, read func(path string) (string, bool)) (string, error) {
	type file struct {
		old, cur string
		existed  bool
		exists   bool
	}
	files := map[string]*file{}
	var order []string
	for i, b := range blocks {
		n := i + 1
		path := b.Path
		if clean := pathpkg.Clean(path); path == "" || pathpkg.IsAbs(path) || clean == ".." || strings.HasPrefix(clean, "../") ||
			clean == ".git" || strings.HasPrefix(clean, ".git/") {
			return "", fmt.Errorf("search/replace block %d: path %q is not a file inside the repository", n, path)
		}
		if _, seen := files[path]; !seen {
			if _, ok := read(path); !ok && (strings.HasPrefix(path, "a/") || strings.HasPrefix(path, "b/")) {
				if _, ok := read(path[2:]); ok {
					path = path[2:]
				}
			}
		}
		f, seen := files[path]
		if !seen {
			text, ok := read(path)
			f = &file{old: text, cur: text, existed: ok, exists: ok}
			files[path] = f
			order = append(order, path)
		}
		if strings.TrimSpace(b.Search) == "" {
			if !f.exists {
				f.cur, f.exists = b.Replace, true
				continue
			}
			if f.cur != "" && !strings.HasSuffix(f.cur, "\n") {
				f.cur += "\n"
			}
			f.cur += b.Replace
			continue
		}
		if !f.exists {
			return "", fmt.Errorf("search/replace block %d: %s does not exist (an empty SEARCH creates a file)", n, path)
		}
		out, err := replaceOnce(f.cur, b.Search, b.Replace)
		if err != nil {
			return "", fmt.Errorf("search/replace block %d (%s): %w", n, path, err)
		}
		f.cur = out
	}
	var d strings.Builder
	for _, p := range order {
		f := files[p]
		var old []byte
		if f.existed {
			old = []byte(f.old)
		}
		d.WriteString(diff.Unified(p, old, []byte(f.cur)))
	}
	if d.Len() == 0 {
		return "", fmt.Errorf("the %d search/replace blocks change nothing: %w", len(blocks), ErrNoDiff)
	}
	return d.String(), nil
}

// replaceOnce replaces the one occurrence of search in text with repl.
func replaceOnce(text, search, repl string) (string, error) {
	switch c := strings.Count(text, search); {
	case c == 1:
		return strings.Replace(text, search, repl, 1), nil
	case c > 1:
		return "", fmt.Errorf("the SEARCH text occurs %d times; it must match one place (add lines around it): %s", c, firstLine(search))
	}
	return replaceLines(text, search, repl)
}

// replaceLines matches search's lines against whole lines of text, ignoring leading and trailing whitespace and
// blank lines around search. The replacement's lines take the indentation the file adds to the search's.
func replaceLines(text, search, repl string) (string, error) {
	lines := strings.SplitAfter(text, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	want := strings.Split(strings.TrimRight(search, "\n"), "\n")
	for len(want) > 0 && strings.TrimSpace(want[0]) == "" {
		want = want[1:]
	}
	for len(want) > 0 && strings.TrimSpace(want[len(want)-1]) == "" {
		want = want[:len(want)-1]
	}
	if len(want) == 0 {
		return "", fmt.Errorf("the SEARCH text is only blank lines")
	}
	var at []int
	for i := 0; i+len(want) <= len(lines); i++ {
		ok := true
		for j, w := range want {
			if strings.TrimSpace(lines[i+j]) != strings.TrimSpace(w) {
				ok = false
				break
			}
		}
		if ok {
			at = append(at, i)
		}
	}
	switch {
	case len(at) == 0:
		return "", fmt.Errorf("the SEARCH text is not in the file, even ignoring whitespace: %s", firstLine(search))
	case len(at) > 1:
		return "", fmt.Errorf("the SEARCH text matches %d places when whitespace is ignored; it must match one (add lines around it): %s", len(at), firstLine(search))
	}
	i := at[0]
	indent := addedIndent(lines[i:i+len(want)], want)
	var b strings.Builder
	for _, l := range lines[:i] {
		b.WriteString(l)
	}
	crlf := strings.HasSuffix(lines[i], "\r\n")
	for _, r := range strings.SplitAfter(repl, "\n") {
		if r == "" {
			continue
		}
		if strings.TrimSpace(r) != "" {
			b.WriteString(indent)
		}
		if crlf && strings.HasSuffix(r, "\n") && !strings.HasSuffix(r, "\r\n") {
			r = r[:len(r)-1] + "\r\n" // keep the file's line endings
		}
		b.WriteString(r)
	}
	rest := lines[i+len(want):]
	lastReplaced := !strings.HasSuffix(lines[i+len(want)-1], "\n")
	if lastReplaced && len(rest) == 0 {
		// The match ran to the end of a file without a final newline: keep it without one.
		s := strings.TrimSuffix(b.String(), "\n")
		b.Reset()
		b.WriteString(s)
	}
	for _, l := range rest {
		b.WriteString(l)
	}
	return b.String(), nil
}

// addedIndent is the leading whitespace every non-blank matched file line has in front of the search line's own,
// or "" when the lines do not agree on one.
func addedIndent(got, want []string) string {
	indent, set := "", false
	for j, w := range want {
		if strings.TrimSpace(w) == "" {
			continue
		}
		g := strings.TrimRight(got[j], "\r\n")
		wl := leading(w)
		gl := leading(g)
		if !strings.HasSuffix(gl, wl) {
			return ""
		}
		add := gl[:len(gl)-len(wl)]
		if set && add != indent {
			return ""
		}
		indent, set = add, true
	}
	return indent
}

func leading(s string) string { return s[:len(s)-len(strings.TrimLeft(s, " \t"))] }

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " ..."
	}
	return fmt.Sprintf("%q", clip(s, 120))
}
