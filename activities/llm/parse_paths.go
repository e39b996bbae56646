package llm

import (
	"regexp"
	"strings"
)

// Parsers of model answers. Models wrap what was asked for in prose, fences, markdown and numbering; these read
// through that and keep only what the caller can check: ranked paths here, evidence plans (parse_plan.go), diffs
// (parse_diff.go) and search/replace edits (searchreplace.go).

var (
	// listMarker is a numbered or bulleted list item's prefix: "1.", "1)", "(1)", "#1", "-", "*", "+", "•", "> ".
	listMarker = regexp.MustCompile(`^\s*(?:>\s*)*(?:\(?\d{1,3}[.)\]:]|#\d{1,3}[.):]?|[-*+•·▪‣◦])\s+`)
	// pathToken is a run of characters a path can hold.
	pathToken = regexp.MustCompile("[^\\s`'\"*,;()\\[\\]<>{}|•]+")
	// lineSuffix is a location after a path: ":123", ":12:5", ":10-20", "#L12", "#L10-L20".
	lineSuffix = regexp.MustCompile(`(?::\d+(?::\d+)?(?:-\d+)?|#L\d+(?:-L?\d+)?)$`)
	// explanation starts the part of a line that explains a path: " (reason)", " - reason", ": reason".
	explanation = regexp.MustCompile(`\s+\(|\s+[-–—]\s+|:\s+`)
	// extension is a file name's extension.
	extension = regexp.MustCompile(`\.[A-Za-z][A-Za-z0-9_+-]{0,15}$`)
)

// ParseRankedPaths reads a ranked list of repository paths from a model's answer. It accepts numbered ("1. a.go",
// "1) a.go"), bulleted (-, *, +, •) and bare lists, fenced code blocks, paths in backticks, quotes or markdown bold,
// "./", "a/" and "b/" prefixes, absolute paths ending in a repository path, and suffixes such as ":123", "#L5" or
// " (reason)"; several paths on one line count in their order. When the answer has list items or fenced lines,
// prose lines around them are ignored; otherwise paths are read from the prose.
//
// Paths for which known returns false are dropped; a nil known keeps every token that looks like a path (has a "/"
// or an extension). The result keeps the order of first mention, without duplicates.
func ParseRankedPaths(text string, known func(path string) bool) []string {
	accept := known
	if accept == nil {
		accept = func(p string) bool { return looksLikePath(p) }
	}
	lines := answerLines(text)
	var listed, prose []string
	for _, l := range lines {
		if l.structured {
			listed = append(listed, pathsOnLine(l.text, accept)...)
		} else {
			prose = append(prose, pathsOnLine(l.text, accept)...)
		}
	}
	found := listed
	if len(found) == 0 {
		found = prose
	}
	seen := map[string]bool{}
	out := []string{}
	for _, p := range found {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

type answerLine struct {
	text string
	// structured: inside a fence, a list item, a line holding one token (a bare list) or a diff header.
	structured bool
}

// answerLines splits an answer into lines without the fence markers, stripped of list markers.
func answerLines(text string) []answerLine {
	var out []answerLine
	inFence := false
	for _, raw := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		t := strings.TrimSpace(raw)
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			inFence = !inFence
			continue
		}
		if t == "" {
			continue
		}
		l := answerLine{text: t, structured: inFence}
		if loc := listMarker.FindStringIndex(t); loc != nil {
			l.text = t[loc[1]:]
			l.structured = true
		}
		if len(strings.Fields(l.text)) == 1 || strings.HasPrefix(l.text, "[") || strings.HasPrefix(l.text, "\"") ||
			strings.HasPrefix(t, "--- ") || strings.HasPrefix(t, "+++ ") || strings.HasPrefix(t, "diff --git ") {
			l.structured = true
		}
		out = append(out, l)
	}
	return out
}

// pathsOnLine returns the accepted paths of one line in order. After the first path, an explanation (" (", " - ",
// ": ") ends the line, so that files a reason mentions do not count.
func pathsOnLine(line string, accept func(string) bool) []string {
	var out []string
	rest := line
	for rest != "" {
		loc := pathToken.FindStringIndex(rest)
		if loc == nil {
			break
		}
		tok := rest[loc[0]:loc[1]]
		rest = rest[loc[1]:]
		if p, ok := resolvePath(tok, accept); ok {
			out = append(out, p)
			if strings.HasSuffix(tok, ":") {
				break
			}
			if e := explanation.FindStringIndex(rest); e != nil && strings.Trim(rest[:e[0]], " \t`'\"*_~") == "" {
				break
			}
		}
	}
	return out
}

// resolvePath cleans a token into a repository path and checks it with accept, trying the spellings a model uses
// for the same path.
func resolvePath(tok string, accept func(string) bool) (string, bool) {
	p := strings.Trim(tok, "_~")
	p = strings.TrimRight(p, ".,:;!?")
	p = lineSuffix.ReplaceAllString(p, "")
	p = strings.TrimRight(p, ".,:;!?")
	if p == "" || strings.Contains(p, "://") || strings.HasSuffix(p, "/") {
		return "", false
	}
	p = strings.ReplaceAll(p, "\\", "/")
	for strings.HasPrefix(p, "./") {
		p = p[2:]
	}
	if p == "" {
		return "", false
	}
	var tries []string
	tries = append(tries, p)
	if strings.HasPrefix(p, "a/") || strings.HasPrefix(p, "b/") {
		tries = append(tries, p[2:])
	}
	if strings.HasPrefix(p, "/") {
		// An absolute path (a checkout such as /testbed/pkg/x.py): its repository path is one of its suffixes.
		parts := strings.Split(strings.TrimLeft(p, "/"), "/")
		for i := range parts {
			tries = append(tries, strings.Join(parts[i:], "/"))
		}
	}
	for _, t := range tries {
		if t != "" && !strings.HasPrefix(t, "/") && accept(t) {
			return t, true
		}
	}
	return "", false
}

// looksLikePath is the check used without a known-path function: a "/" or an extension, and not a number.
func looksLikePath(p string) bool {
	if strings.HasPrefix(p, "-") || strings.HasPrefix(p, "..") {
		return false
	}
	return strings.Contains(strings.Trim(p, "/"), "/") || extension.MatchString(p)
}
