package textutil

import (
	"strings"
	"unicode/utf8"
)

// PadRight appends spaces to s until it is n runes long.
func PadRight(s string, n int) string {
	if c := utf8.RuneCountInString(s); c < n {
		return s + strings.Repeat(" ", n-c)
	}
	return s
}

// PadLeft prepends spaces to s until it is n runes long.
func PadLeft(s string, n int) string {
	if c := utf8.RuneCountInString(s); c < n {
		return strings.Repeat(" ", n-c) + s
	}
	return s
}

// Center surrounds s with spaces so that it sits in the middle of n runes; an odd space goes to the right.
func Center(s string, n int) string {
	c := utf8.RuneCountInString(s)
	if c >= n {
		return s
	}
	left := (n - c) / 2
	return strings.Repeat(" ", left) + s + strings.Repeat(" ", n-c-left)
}

// Ellipsis shortens s to at most n runes, ending it with "…" when it was cut.
func Ellipsis(s string, n int) string {
	if n <= 0 {
		return ""
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
