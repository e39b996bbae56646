package relnotes

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// Kind is the group an entry belongs to.
type Kind string

// The kinds, in the order Render prints them.
const (
	Added   Kind = "added"
	Changed Kind = "changed"
	Fixed   Kind = "fixed"
	Removed Kind = "removed"
)

// Kinds lists every kind in render order.
var Kinds = []Kind{Added, Changed, Fixed, Removed}

// Entry is one line of the changelog: "- kind: text".
type Entry struct {
	Kind Kind
	Text string
}

// Parse reads the entries of the "## Unreleased" section of a changelog. Lines are "- kind: text"; a line starting
// with two spaces continues the entry above it.
func Parse(r io.Reader) ([]Entry, error) {
	var out []Entry
	in := false
	sc := bufio.NewScanner(r)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			in = strings.EqualFold(strings.TrimSpace(line[3:]), "unreleased")
			continue
		case !in || strings.TrimSpace(line) == "":
			continue
		case strings.HasPrefix(line, "  ") && len(out) > 0:
			out[len(out)-1].Text += " " + strings.TrimSpace(line)
			continue
		}
		body, ok := strings.CutPrefix(line, "- ")
		if !ok {
			return nil, fmt.Errorf("relnotes: line %d: want \"- kind: text\", got %q", n, line)
		}
		kind, text, ok := strings.Cut(body, ":")
		k := Kind(strings.ToLower(strings.TrimSpace(kind)))
		if !ok || !known(k) {
			return nil, fmt.Errorf("relnotes: line %d: unknown kind %q", n, strings.TrimSpace(kind))
		}
		out = append(out, Entry{Kind: k, Text: strings.TrimSpace(text)})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("relnotes: %w", err)
	}
	return out, nil
}

func known(k Kind) bool {
	for _, x := range Kinds {
		if x == k {
			return true
		}
	}
	return false
}
