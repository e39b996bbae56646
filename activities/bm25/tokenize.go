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
		dst = appendIdent(dst, text[i:j])
		i = j
	}
	return dst
}

func isWord(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

func appendIdent(dst []string, id string) []string {
	whole := strings.ToLower(strings.Trim(id, "_"))
	if whole == "" {
		return dst
	}
	dst = append(dst, whole)
	n := len(dst)
	for _, p := range strings.Split(id, "_") {
		dst = appendCamel(dst, p)
	}
	if len(dst) == n+1 && dst[n] == whole { // a single part equal to the whole: no split
		dst = dst[:n]
	}
	return dst
}

// appendCamel splits one underscore-free word at case and letter-digit boundaries.
func appendCamel(dst []string, w string) []string {
	start := 0
	emit := func(end int) {
		if end-start > 1 {
			dst = append(dst, strings.ToLower(w[start:end]))
		}
		start = end
	}
	for i := 1; i < len(w); i++ {
		prev, cur := class(w[i-1]), class(w[i])
		switch {
		case prev == lower && cur == upper, // parseHTTP: e|H
			prev == digit && cur != digit, prev != digit && cur == digit: // utf8Decode, v2
			emit(i)
		case prev == upper && cur == upper && i+1 < len(w) && class(w[i+1]) == lower: // HTTPServer: P|Se
			emit(i)
		}
	}
	emit(len(w))
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
