// Package textwrap wraps plain text to a width, greedily, counting runes.
package textwrap

import (
	"strings"
	"unicode/utf8"
)

// Wrap splits s into words at white space and fills lines of at most width runes with them, one space between
// words. A word longer than width gets a line of its own. Wrap returns no lines for text with no words.
func Wrap(s string, width int) []string {
	var lines []string
	var cur strings.Builder
	n := 0
	for _, w := range strings.Fields(s) {
		wl := utf8.RuneCountInString(w)
		if n > 0 && n+1+wl > width {
			lines = append(lines, cur.String())
			cur.Reset()
			n = 0
		}
		if n > 0 {
			cur.WriteByte(' ')
			n++
		}
		cur.WriteString(w)
		n += wl
	}
	if n > 0 {
		lines = append(lines, cur.String())
	}
	return lines
}

// Indent returns the lines with first before the first one and rest before each other one, joined by newlines.
func Indent(lines []string, first, rest string) string {
	var b strings.Builder
	for i, l := range lines {
		if i == 0 {
			b.WriteString(first)
		} else {
			b.WriteByte('\n')
			b.WriteString(rest)
		}
		b.WriteString(l)
	}
	return b.String()
}
