package relnotes

import (
	"fmt"
	"io"
	"strings"

	"example.org/textwrap"
)

// headings are the section titles Render prints for each kind.
var headings = map[Kind]string{
	Added:   "Added",
	Changed: "Changed",
	Fixed:   "Fixed",
	Removed: "Removed",
}

// bullet starts every entry; the lines an entry wraps onto are indented to line up with its text.
const bullet = "  - "

// Render writes the entries grouped by kind, in Kinds order, each group under a "### Heading" line and separated by
// a blank line. Entries are wrapped so that no line is longer than width runes (unless a single word is), bullet
// included.
func Render(w io.Writer, entries []Entry, width int) error {
	first := true
	for _, k := range Kinds {
		var group []Entry
		for _, e := range entries {
			if e.Kind == k {
				group = append(group, e)
			}
		}
		if len(group) == 0 {
			continue
		}
		if !first {
			if _, err := fmt.Fprintln(w); err != nil {
				return err
			}
		}
		first = false
		if _, err := fmt.Fprintf(w, "### %s\n\n", headings[k]); err != nil {
			return err
		}
		for _, e := range group {
			lines := textwrap.Wrap(e.Text, width-len(bullet))
			text := textwrap.Indent(lines, bullet, strings.Repeat(" ", len(bullet)))
			if _, err := fmt.Fprintln(w, text); err != nil {
				return err
			}
		}
	}
	return nil
}
