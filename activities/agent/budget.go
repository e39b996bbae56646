package agent

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"ctxlab/activities/contexts"
	"ctxlab/activities/tokens"
)

// Shown is a tool result as the agent sees it: the text, the lines of it that show repository text, and its tokens.
type Shown struct {
	Text   string
	Lines  []Line // the repository lines kept
	Tokens int    // tokens of Text
	// Cut is true when the budget dropped lines of the result.
	Cut bool
}

// Budget counts the tokens of tool output against a limit; a result that would pass it is cut to whole lines that
// fit, and once it is spent every result is a notice that it is.
type Budget struct {
	Tokenizer string
	Limit     int // tokens; 0 for no limit
	Used      int
}

// Show cuts a result to what the budget leaves and counts it.
func (b *Budget) Show(res Result) (Shown, error) {
	var text strings.Builder
	for _, l := range res.Lines {
		text.WriteString(l.Text)
		text.WriteString("\n")
	}
	full := text.String()
	n, err := tokens.Count(b.Tokenizer, full)
	if err != nil {
		return Shown{}, err
	}
	if b.Limit <= 0 || b.Used+n <= b.Limit {
		b.Used += n
		return Shown{Text: full, Lines: repoLines(res.Lines), Tokens: n}, nil
	}
	left := max(b.Limit-b.Used, 0)
	kept, kn, err := tokens.Truncate(b.Tokenizer, full, left)
	if err != nil {
		return Shown{}, err
	}
	b.Used += kn
	keptLines := res.Lines[:strings.Count(kept, "\n")]
	notice := fmt.Sprintf("[tool output budget spent: %d of %d tokens shown; answer with what you have]\n", b.Used, b.Limit)
	return Shown{Text: kept + notice, Lines: repoLines(keptLines), Tokens: kn, Cut: true}, nil
}

// Spent reports whether no more tool output can be shown.
func (b *Budget) Spent() bool { return b.Limit > 0 && b.Used >= b.Limit }

func repoLines(lines []Line) []Line {
	var out []Line
	for _, l := range lines {
		if l.Path != "" {
			out = append(out, l)
		}
	}
	return out
}

// Seen is every repository line the agent was shown, by path: the union over its turns is its context.
type Seen map[string]map[int]bool

// Add records the repository lines of a shown result.
func (s Seen) Add(lines []Line) {
	for _, l := range lines {
		if s[l.Path] == nil {
			s[l.Path] = map[int]bool{}
		}
		s[l.Path][l.No] = true
	}
}

// Ranges lists the seen lines as sorted runs per path: path -> [[start, end], ...], paths sorted.
func (s Seen) Ranges() map[string][][2]int {
	out := map[string][][2]int{}
	for p, set := range s {
		nos := slices.Sorted(maps.Keys(set))
		for _, n := range nos {
			r := out[p]
			if len(r) > 0 && r[len(r)-1][1] == n-1 {
				r[len(r)-1][1] = n
			} else {
				r = append(r, [2]int{n, n})
			}
			out[p] = r
		}
	}
	return out
}

// SeenFromRanges rebuilds Seen from Ranges' form.
func SeenFromRanges(r map[string][][2]int) Seen {
	s := Seen{}
	for p, runs := range r {
		for _, run := range runs {
			for n := run[0]; n <= run[1]; n++ {
				s.Add([]Line{{Path: p, No: n}})
			}
		}
	}
	return s
}

// Context is the union of what the agent saw as a context: per file, in path order, each run of seen lines a
// snippet of the file's real text (a file seen whole is one file block), so the method is measured like any other.
func (s Seen) Context(issue string, read func(string) (string, bool)) contexts.Context {
	c := contexts.Context{Issue: issue}
	ranges := s.Ranges()
	for _, p := range slices.Sorted(maps.Keys(ranges)) {
		text, ok := read(p)
		if !ok {
			continue
		}
		lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
		runs := ranges[p]
		if len(runs) == 1 && runs[0][0] == 1 && runs[0][1] >= len(lines) {
			c.Blocks = append(c.Blocks, contexts.Block{Path: p, Kind: contexts.KindFile, Start: 1, Text: text})
			continue
		}
		for _, r := range runs {
			if r[0] > len(lines) {
				continue
			}
			end := min(r[1], len(lines))
			c.Blocks = append(c.Blocks, contexts.Block{Path: p, Kind: contexts.KindSnippet, Start: r[0],
				Text: strings.Join(lines[r[0]-1:end], "\n") + "\n"})
		}
	}
	return c
}
