// Package textutil holds small string helpers shared by the command-line tools of this module.
package textutil

import (
	"strings"
	"unicode"
)

// Wrap breaks s into lines of at most width runes, splitting at spaces. Words longer than width are put on a
// line of their own rather than cut. A width below 1 returns s as a single line.
func Wrap(s string, width int) []string {
	if width < 1 {
		return []string{s}
	}
	words := strings.FieldsFunc(s, unicode.IsSpace)
	if len(words) == 0 {
		return nil
	}
	var lines []string
	var cur strings.Builder
	curLen := 0
	for _, w := range words {
		wl := len([]rune(w))
		switch {
		case curLen == 0:
			cur.WriteString(w)
			curLen = wl
		case curLen+1+wl <= width:
			cur.WriteByte(' ')
			cur.WriteString(w)
			curLen += 1 + wl
		default:
			lines = append(lines, cur.String())
			cur.Reset()
			cur.WriteString(w)
			curLen = wl
		}
	}
	if curLen > 0 {
		lines = append(lines, cur.String())
	}
	return lines
}

// Indent prefixes every non-empty line of s with prefix.
func Indent(s, prefix string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "\n")
}
