package bm25

import "strings"

// Tokenize splits text into lowercase terms for code search. Every identifier (a run of letters, digits and
// underscores) is kept whole, and when it has several parts (snake_case, camelCase, PascalCase, acronyms such as
// HTTPServer, letter-digit boundaries) each part is added too, so "parseHTTPHeader" matches queries for "parse",
// "http", "header" and "parsehttpheader". Parts of one character are dropped; punctuation is not a term.
func Tokenize(text string) []string {
	var out []string
	return AppendTokens(out, text)
}

// AppendTokens appends the terms of text to dst.
func AppendTokens(dst []string, text string) []string {
	var buf [64]span
	for start, end, kinds := nextWord(text, 0); start < end; start, end, kinds = nextWord(text, end) {
		if kinds == lowerBit { // lowercase ASCII letters only: the identifier is its one term
			dst = append(dst, text[start:end])
			continue
		}
		dst = appendTerms(dst, text[start:end], identSpans(buf[:0], text[start:end]))
	}
	return dst
}

// span is the byte range of one term in an identifier; every term is the lowercase of such a range.
type span struct{ start, end int }

// Bits of wordBits: what kind of identifier byte a byte is (0: not one).
const (
	lowerBit      = 1 << iota // a-z
	upperBit                  // A-Z
	digitBit                  // 0-9
	underscoreBit             // _
	multiByteBit              // a byte of a multi-byte rune (or of invalid UTF-8)
)

var wordBits = func() (w [256]uint8) {
	for c := range w {
		switch {
		case c >= 'a' && c <= 'z':
			w[c] = lowerBit
		case c >= 'A' && c <= 'Z':
			w[c] = upperBit
		case c >= '0' && c <= '9':
			w[c] = digitBit
		case c == '_':
			w[c] = underscoreBit
		case c >= 0x80:
			w[c] = multiByteBit
		}
	}
	return w
}()

// nextWord returns the bounds of the first identifier of text at or after from (start == end when there is none)
// and the union of its bytes' wordBits.
func nextWord(text string, from int) (start, end int, kinds uint8) {
	for from < len(text) && wordBits[text[from]] == 0 {
		from++
	}
	end = from
	for end < len(text) && wordBits[text[end]] != 0 {
		kinds |= wordBits[text[end]]
		end++
	}
	return from, end, kinds
}

// appendTerms appends the lowercase of the spans of word. The first span is the whole identifier and holds every
// other, so an ASCII word is lowercased once and its parts are pieces of that; lowercasing other text may change
// byte lengths, so each of its terms is lowercased on its own.
func appendTerms(dst []string, word string, spans []span) []string {
	if len(spans) == 0 {
		return dst
	}
	whole := word[spans[0].start:spans[0].end]
	for i := 0; i < len(whole); i++ {
		if whole[i] >= 0x80 {
			for _, s := range spans {
				dst = append(dst, strings.ToLower(word[s.start:s.end]))
			}
			return dst
		}
	}
	lowered, base := strings.ToLower(whole), spans[0].start
	for _, s := range spans {
		dst = append(dst, lowered[s.start-base:s.end-base])
	}
	return dst
}

// lowerASCII appends word lowercased to dst, or says it is not ASCII.
func lowerASCII(dst, word []byte) ([]byte, bool) {
	for _, c := range word {
		if c >= 0x80 {
			return dst, false
		}
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst, true
}

// identSpans appends the terms of one identifier: the whole without its outer underscores, then its parts unless
// the only part is the whole itself. A part is a substring of the whole cut at rune boundaries and lowercasing
// keeps the number of runes, so a part equals the whole (lowercased) exactly when their spans are equal.
func identSpans[T string | []byte](dst []span, word T) []span {
	start, end := 0, len(word)
	for start < end && word[start] == '_' {
		start++
	}
	for end > start && word[end-1] == '_' {
		end--
	}
	if start == end {
		return dst
	}
	dst = append(dst, span{start, end})
	n := len(dst)
	for p := 0; p <= len(word); {
		q := p
		for q < len(word) && word[q] != '_' {
			q++
		}
		dst = camelSpans(dst, word, p, q)
		p = q + 1
	}
	if len(dst) == n+1 && dst[n] == dst[n-1] { // a single part equal to the whole: no split
		dst = dst[:n]
	}
	return dst
}

// camelSpans splits one underscore-free word text[from:to] at case and letter-digit boundaries.
func camelSpans[T string | []byte](dst []span, text T, from, to int) []span {
	start := from
	for i := from + 1; i < to; i++ {
		prev, cur := wordBits[text[i-1]], wordBits[text[i]]
		switch {
		case prev == lowerBit && cur == upperBit, // parseHTTP: e|H
			prev == digitBit && cur != digitBit, prev != digitBit && cur == digitBit, // utf8Decode, v2
			prev == upperBit && cur == upperBit && i+1 < to && wordBits[text[i+1]] == lowerBit: // HTTPServer: P|Se
			if i-start > 1 {
				dst = append(dst, span{start, i})
			}
			start = i
		}
	}
	if to-start > 1 {
		dst = append(dst, span{start, to})
	}
	return dst
}
