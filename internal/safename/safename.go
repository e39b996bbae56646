// Package safename maps any string a dataset may hold as an instance id (unicode, a newline, NUL, kilobytes) to a
// file name and to a part of a Temporal workflow id. A plain string maps to itself; any other maps to a readable
// prefix and a digest of the whole string, in a form no plain string has, so two strings never share a name.
package safename

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// MaxFile is the longest plain file name kept as it is; file systems allow 255 bytes in a name.
const MaxFile = 128

// MaxWorkflowPart is the longest plain string kept as it is inside a workflow id: Temporal refuses ids over 1,000
// bytes, and an issue's id holds the run's name and its Agent children's ids add a node key.
const MaxWorkflowPart = 512

// prefixLen is how many bytes of the original a digested name keeps, for people reading it.
const prefixLen = 48

// sep joins a digested name's prefix and digest. Neither plain set holds it, so a digested name is never plain.
const sep = "~"

// File returns s as one file or folder name: s itself when it is made of ASCII letters, digits, '-', '_' and '.',
// is not "." or "..", and has at most MaxFile bytes; otherwise a prefix of s in those characters, "~" and a digest
// of s. Only '~' names are digested, so the map is one to one.
func File(s string) string {
	plain := func(r rune) bool {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.'
	}
	if s != "" && s != "." && s != ".." && len(s) <= MaxFile && all(s, plain) {
		return s
	}
	return digested(s, plain)
}

// WorkflowPart returns s as a part of a workflow id, and whether that is s itself: printable ASCII of at most
// MaxWorkflowPart bytes is kept (Temporal carries workflow ids in gRPC headers, which take printable ASCII only);
// anything else becomes a printable prefix, "~" and a digest of s. A digested part can equal a plain string that
// holds "~": a caller keeps the two apart by where it puts them (see workflows' issue ids).
func WorkflowPart(s string) (part string, plain bool) {
	printable := func(r rune) bool { return r >= 0x20 && r <= 0x7e }
	if len(s) <= MaxWorkflowPart && all(s, printable) {
		return s, true
	}
	printable = func(r rune) bool { return r > 0x20 && r <= 0x7e && r != '~' }
	return digested(s, printable), false
}

func all(s string, ok func(rune) bool) bool {
	for _, r := range s { // invalid UTF-8 reads as utf8.RuneError, which neither set holds
		if !ok(r) {
			return false
		}
	}
	return true
}

// digested is the first prefixLen bytes of s with every rune keep refuses mapped to '_', then "~" and the hex of
// s's SHA-256, cut to 32 digits (128 bits).
func digested(s string, keep func(rune) bool) string {
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= prefixLen {
			break
		}
		if !keep(r) {
			r = '_'
		}
		b.WriteRune(r)
	}
	sum := sha256.Sum256([]byte(s))
	return b.String() + sep + hex.EncodeToString(sum[:])[:32]
}
