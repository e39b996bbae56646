package textutil

import (
	"strings"
	"unicode"
)

// SnakeCase turns "HTTPServerName" or "server name" into "http_server_name".
func SnakeCase(s string) string { return joinWords(splitWords(s), "_") }

// KebabCase turns "HTTPServerName" or "server name" into "http-server-name".
func KebabCase(s string) string { return joinWords(splitWords(s), "-") }

func joinWords(words []string, sep string) string {
	for i, w := range words {
		words[i] = strings.ToLower(w)
	}
	return strings.Join(words, sep)
}

// splitWords cuts s at spaces, punctuation and case changes, keeping acronyms together.
func splitWords(s string) []string {
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, string(cur))
			cur = cur[:0]
		}
	}
	rs := []rune(s)
	for i, r := range rs {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			flush()
		case unicode.IsUpper(r) && len(cur) > 0:
			prevLower := unicode.IsLower(cur[len(cur)-1])
			nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
			if prevLower || (nextLower && unicode.IsUpper(cur[len(cur)-1])) {
				flush()
			}
			cur = append(cur, r)
		default:
			cur = append(cur, r)
		}
	}
	flush()
	return words
}
