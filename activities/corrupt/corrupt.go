// Package corrupt makes the controlled corruptions of PAPER.md's controlled experiments from a context: deleting a
// fraction of the tokens of every line, deleting whole lines, and the two pairings that separate which files a
// context shows from how verbatim its text is ("same files, other text" and "same text, other files").
// Everything is seeded: the same context, rate and seed give the same result on every machine.
package corrupt

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"strings"

	"ctxlab/activities/contexts"
)

// Modes.
const (
	ModeTokens = "tokens" // delete a fraction of the tokens of every line
	ModeLines  = "lines"  // delete a fraction of the lines of every block
)

// Options say how much to corrupt.
type Options struct {
	Mode string  `json:"mode"`
	Rate float64 `json:"rate"`
	Seed int64   `json:"seed"`
}

// Check reports options that cannot be applied.
func (o Options) Check() error {
	if o.Mode != ModeTokens && o.Mode != ModeLines {
		return fmt.Errorf("corrupt: unknown mode %q (known: %s, %s)", o.Mode, ModeTokens, ModeLines)
	}
	if !(o.Rate >= 0 && o.Rate <= 1) {
		return fmt.Errorf("corrupt: rate %v must be in [0, 1]", o.Rate)
	}
	return nil
}

// Stats count what was deleted.
type Stats struct {
	Tokens, TokensDeleted int
	Lines, LinesDeleted   int
}

// Apply corrupts every block of c (the issue text is left alone). Each block gets its own random stream, keyed on
// the seed, its path and its first line, so a block is corrupted the same way whatever else the context holds.
func Apply(c contexts.Context, o Options) (contexts.Context, Stats, error) {
	var st Stats
	if err := o.Check(); err != nil {
		return c, st, err
	}
	out := contexts.Context{Issue: c.Issue, Blocks: make([]contexts.Block, len(c.Blocks))}
	for i, b := range c.Blocks {
		rng := stream(o.Seed, b.Path, b.Start)
		if o.Mode == ModeTokens {
			b.Text = deleteTokens(b.Text, o.Rate, rng, &st)
		} else {
			b.Text = deleteLines(b.Text, o.Rate, rng, &st)
		}
		out.Blocks[i] = b
	}
	return out, st, nil
}

func stream(seed int64, path string, start int) *rand.Rand {
	h := fnv.New64a()
	var buf [16]byte
	binary.LittleEndian.PutUint64(buf[:8], uint64(seed))
	binary.LittleEndian.PutUint64(buf[8:], uint64(start))
	h.Write(buf[:])
	h.Write([]byte(path))
	return rand.New(rand.NewPCG(h.Sum64(), uint64(seed)))
}

// quota is how many of n items to delete at rate: floor(rate*n), plus one more with probability equal to the
// fraction, so the expected share is exactly rate even on short lines.
func quota(n int, rate float64, rng *rand.Rand) int {
	x := rate * float64(n)
	k := int(math.Floor(x))
	if rng.Float64() < x-float64(k) {
		k++
	}
	return min(k, n)
}

// Tokens of a line: runs of letters, digits and underscores, and single other non-space characters. Whitespace is
// not a token and is kept.
func tokenSpans(line string) [][2]int {
	var spans [][2]int
	for i := 0; i < len(line); {
		c := line[i]
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			i++
		case isWord(c):
			j := i
			for j < len(line) && isWord(line[j]) {
				j++
			}
			spans = append(spans, [2]int{i, j})
			i = j
		default:
			spans = append(spans, [2]int{i, i + 1})
			i++
		}
	}
	return spans
}

func isWord(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

func deleteTokens(text string, rate float64, rng *rand.Rand, st *Stats) string {
	lines := strings.SplitAfter(text, "\n")
	var b strings.Builder
	for _, l := range lines {
		spans := tokenSpans(l)
		st.Tokens += len(spans)
		k := quota(len(spans), rate, rng)
		if k == 0 {
			b.WriteString(l)
			continue
		}
		st.TokensDeleted += k
		drop := map[int]bool{}
		for _, i := range rng.Perm(len(spans))[:k] {
			drop[i] = true
		}
		prev := 0
		for i, s := range spans {
			if drop[i] {
				b.WriteString(l[prev:s[0]])
				prev = s[1]
			}
		}
		b.WriteString(l[prev:])
	}
	return b.String()
}

func deleteLines(text string, rate float64, rng *rand.Rand, st *Stats) string {
	lines := strings.SplitAfter(text, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	var nonBlank []int
	for i, l := range lines {
		if strings.TrimSpace(l) != "" {
			nonBlank = append(nonBlank, i)
		}
	}
	st.Lines += len(nonBlank)
	k := quota(len(nonBlank), rate, rng)
	st.LinesDeleted += k
	drop := map[int]bool{}
	for _, i := range rng.Perm(len(nonBlank))[:k] {
		drop[nonBlank[i]] = true
	}
	var b strings.Builder
	for i, l := range lines {
		if !drop[i] {
			b.WriteString(l)
		}
	}
	return b.String()
}

// SameFilesOtherText keeps the files and lines of c but makes a share 1-epsilon of its non-blank lines
// non-verbatim (each chosen line loses one token), so the result has c's gold-file recall and the verbatim rate
// epsilon of another context. Lines of one token are never chosen, since deleting their only token blanks them.
func SameFilesOtherText(c contexts.Context, epsilon float64, seed int64) (contexts.Context, Stats, error) {
	var st Stats
	if !(epsilon >= 0 && epsilon <= 1) {
		return c, st, fmt.Errorf("corrupt: epsilon %v must be in [0, 1]", epsilon)
	}
	out := contexts.Context{Issue: c.Issue, Blocks: make([]contexts.Block, len(c.Blocks))}
	for i, b := range c.Blocks {
		rng := stream(seed, b.Path, b.Start)
		lines := strings.SplitAfter(b.Text, "\n")
		var eligible []int
		nb := 0
		for j, l := range lines {
			if strings.TrimSpace(l) == "" {
				continue
			}
			nb++
			if len(tokenSpans(l)) > 1 {
				eligible = append(eligible, j)
			}
		}
		st.Lines += nb
		// Aim at 1-epsilon of all non-blank lines of this block, taken among the eligible ones.
		k := min(quota(nb, 1-epsilon, rng), len(eligible))
		for _, j := range rng.Perm(len(eligible))[:k] {
			l := lines[eligible[j]]
			spans := tokenSpans(l)
			s := spans[rng.IntN(len(spans))]
			lines[eligible[j]] = l[:s[0]] + l[s[1]:]
		}
		st.LinesDeleted += k // lines made non-verbatim
		b.Text = strings.Join(lines, "")
		out.Blocks[i] = b
	}
	return out, st, nil
}

// FilesInOrder lists the files c shows, in the order they first appear: the ranking of the method that built it.
func FilesInOrder(c contexts.Context) []string {
	seen := map[string]bool{}
	var out []string
	for _, b := range c.Blocks {
		if !seen[b.Path] {
			seen[b.Path] = true
			out = append(out, b.Path)
		}
	}
	return out
}
