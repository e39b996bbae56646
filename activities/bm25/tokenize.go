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
	var spans [64]span
	for sp := range eachIdent(text, spans[:0]) {
		for _, s := range sp {
			dst = append(dst, strings.ToLower(text[s.start:s.end]))
		}
	}
	return dst
}

// span is the byte range of one term in the text; every term is the lowercase of such a range.
type span struct{ start, end int }

// eachIdent yields, identifier by identifier, the spans of the terms of text in Tokenize's order. The slice it
// yields is reused (it starts as buf) and holds only until the next iteration.
func eachIdent(text string, buf []span) func(yield func([]span) bool) {
	return func(yield func([]span) bool) {
		i := 0
		for i < len(text) {
			if !isWord(text[i]) {
				i++
				continue
			}
			j := i
			for j < len(text) && isWord(text[j]) {
				j++
			}
			buf = identSpans(buf[:0], text, i, j)
			if len(buf) > 0 && !yield(buf) {
				return
			}
			i = j
		}
	}
}

func isWord(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

// identSpans appends the terms of the identifier text[from:to]: the whole without its outer underscores, then its
// parts unless the only part is the whole itself. A part is a substring of the whole cut at rune boundaries and
// lowercasing keeps the number of runes, so a part equals the whole (lowercased) exactly when their spans are equal.
func identSpans(dst []span, text string, from, to int) []span {
	start, end := from, to
	for start < end && text[start] == '_' {
		start++
	}
	for end > start && text[end-1] == '_' {
		end--
	}
	if start == end {
		return dst
	}
	dst = append(dst, span{start, end})
	n := len(dst)
	for p := from; p <= to; {
		q := p
		for q < to && text[q] != '_' {
			q++
		}
		dst = camelSpans(dst, text, p, q)
		p = q + 1
	}
	if len(dst) == n+1 && dst[n] == dst[n-1] { // a single part equal to the whole: no split
		dst = dst[:n]
	}
	return dst
}

// camelSpans splits one underscore-free word text[from:to] at case and letter-digit boundaries.
func camelSpans(dst []span, text string, from, to int) []span {
	start := from
	for i := from + 1; i < to; i++ {
		prev, cur := class(text[i-1]), class(text[i])
		switch {
		case prev == lower && cur == upper, // parseHTTP: e|H
			prev == digit && cur != digit, prev != digit && cur == digit, // utf8Decode, v2
			prev == upper && cur == upper && i+1 < to && class(text[i+1]) == lower: // HTTPServer: P|Se
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

const (
	lower = iota
	upper
	digit
	other
)

func class(c byte) int {
	switch {
	case c >= 'a' && c <= 'z':
		return lower
	case c >= 'A' && c <= 'Z':
		return upper
	case c >= '0' && c <= '9':
		return digit
	}
	return other
}
