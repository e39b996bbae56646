// Package contexts holds the context a method builds for the model: the issue text plus blocks of repository text
// (whole files or snippets), how it is rendered into a prompt, and the offline metrics computed on it (rho, epsilon,
// share of lines in gold files).
package contexts

import (
	"fmt"
	"sort"
	"strings"
)

// Block kinds.
const (
	KindFile    = "file"    // a whole file, verbatim
	KindSnippet = "snippet" // lines Start.. of a file
)

// Context is what a method shows the model besides the instructions.
type Context struct {
	Issue  string  `json:"issue"`
	Blocks []Block `json:"blocks"`
}

// Block is repository text from one file. Text may have been cut, compressed or corrupted by the method; the metrics
// compare it with the real file.
type Block struct {
	Path string `json:"path"`
	Kind string `json:"kind"`
	// Start is the 1-based line of the file where Text starts (1 for whole files).
	Start int    `json:"start,omitempty"`
	Text  string `json:"text"`
}

// Render is the repository part of the prompt: each block under a header naming its file (and lines).
func (c Context) Render() string {
	var b strings.Builder
	for i, blk := range c.Blocks {
		if i > 0 {
			b.WriteString("\n")
		}
		if blk.Kind == KindSnippet {
			n := strings.Count(strings.TrimSuffix(blk.Text, "\n"), "\n") + 1
			fmt.Fprintf(&b, "[%s lines %d-%d]\n", blk.Path, blk.Start, blk.Start+n-1)
		} else {
			fmt.Fprintf(&b, "[%s]\n", blk.Path)
		}
		b.WriteString(blk.Text)
		if !strings.HasSuffix(blk.Text, "\n") {
			b.WriteString("\n")
		}
	}
	return b.String()
}

// Files lists the distinct paths shown, sorted.
func (c Context) Files() []string {
	seen := map[string]bool{}
	var out []string
	for _, b := range c.Blocks {
		if !seen[b.Path] {
			seen[b.Path] = true
			out = append(out, b.Path)
		}
	}
	sort.Strings(out)
	return out
}

// LinesOf returns the non-blank lines shown for path, trailing whitespace removed, as a set.
func (c Context) LinesOf(path string) map[string]bool {
	set := map[string]bool{}
	for _, b := range c.Blocks {
		if b.Path != path {
			continue
		}
		for _, l := range strings.Split(b.Text, "\n") {
			if t := strings.TrimRight(l, " \t\r"); strings.TrimSpace(t) != "" {
				set[t] = true
			}
		}
	}
	return set
}

// Metrics are the offline measures of a context against the repository and the gold patch.
type Metrics struct {
	// Rho is gold-file recall: the share of gold files shown at all.
	Rho float64
	// Epsilon is the verbatim rate: the share of shown non-blank lines that occur, up to trailing whitespace, in the
	// file they came from. Nil when the context shows no repository lines.
	Epsilon *float64
	// GoldLineShare is the share of shown non-blank lines that come from gold files. Nil when no lines are shown.
	GoldLineShare *float64
	// Lines is the number of non-blank repository lines shown.
	Lines int
	// GoldFilesMissed is true when no gold file is shown at all.
	GoldFilesMissed bool
}

// Measure computes the metrics. read returns a file's text at base_commit (false when the file does not exist);
// gold lists the files the gold patch edits.
func Measure(c Context, gold []string, read func(path string) (string, bool)) Metrics {
	goldSet := map[string]bool{}
	for _, g := range gold {
		goldSet[g] = true
	}
	var m Metrics
	shown := 0
	for _, f := range c.Files() {
		if goldSet[f] {
			shown++
		}
	}
	if len(goldSet) > 0 {
		m.Rho = float64(shown) / float64(len(goldSet))
	}
	m.GoldFilesMissed = shown == 0

	fileLines := map[string]map[string]bool{}
	verbatim, inGold := 0, 0
	for _, b := range c.Blocks {
		lines, ok := fileLines[b.Path]
		if !ok {
			lines = map[string]bool{}
			if text, exists := read(b.Path); exists {
				for _, l := range strings.Split(text, "\n") {
					lines[strings.TrimRight(l, " \t\r")] = true
				}
			}
			fileLines[b.Path] = lines
		}
		for _, l := range strings.Split(b.Text, "\n") {
			t := strings.TrimRight(l, " \t\r")
			if strings.TrimSpace(t) == "" {
				continue
			}
			m.Lines++
			if lines[t] {
				verbatim++
			}
			if goldSet[b.Path] {
				inGold++
			}
		}
	}
	if m.Lines > 0 {
		eps := float64(verbatim) / float64(m.Lines)
		share := float64(inGold) / float64(m.Lines)
		m.Epsilon, m.GoldLineShare = &eps, &share
	}
	return m
}
