package kvconf

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"
)

// MaxLineLength is the longest physical line the parser accepts.
const MaxLineLength = 64 * 1024

// Options change how a file is parsed. The zero value is the lenient default.
type Options struct {
	// Name labels errors ("app.conf:4: ..."); usually the file name.
	Name string
	// Strict rejects duplicate sections and duplicate keys within a section instead of keeping the last value.
	Strict bool
	// CaseSensitive keeps section and key names as written; by default they are lower-cased.
	CaseSensitive bool
	// AllowGlobal accepts keys before the first section header; they go into the section named "".
	AllowGlobal bool
}

// Parse reads a configuration file with default options.
func Parse(r io.Reader) (*File, error) { return ParseWithOptions(r, Options{}) }

// ParseString parses a configuration held in a string.
func ParseString(s string) (*File, error) { return Parse(strings.NewReader(s)) }

// ParseFile opens and parses the named file; errors carry its name.
func ParseFile(path string, opts Options) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if opts.Name == "" {
		opts.Name = path
	}
	return ParseWithOptions(f, opts)
}

// ParseWithOptions reads a configuration file.
//
// The format, line by line:
//
//	# comment                  (also "; comment")
//	[section]                  (also [section "sub"], stored as "section.sub")
//	key = value                (also "key: value")
//	key = "quoted value"       (escapes: \" \\ \n \t)
//	key = value   # comment    (an inline comment needs whitespace before it)
//	key = long value \         (a trailing backslash continues the value on the next line)
//	      continued
func ParseWithOptions(r io.Reader, opts Options) (*File, error) {
	p := &parser{opts: opts, file: newFile()}
	if err := p.run(r); err != nil {
		return nil, err
	}
	return p.file, nil
}

type parser struct {
	opts    Options
	file    *File
	section *Section
	lineNo  int
	// seenKeys tracks keys per section for strict mode.
	seenKeys map[string]map[string]int
}

func (p *parser) errorf(format string, args ...any) error {
	return newParseError(p.opts.Name, p.lineNo, format, args...)
}

func (p *parser) run(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), MaxLineLength+1)
	var pending strings.Builder // a logical line being continued
	pendingStart := 0
	for sc.Scan() {
		p.lineNo++
		raw := sc.Bytes()
		if p.lineNo == 1 {
			raw = bytes.TrimPrefix(raw, []byte("\xef\xbb\xbf"))
		}
		if len(raw) > MaxLineLength {
			return p.errorf(msgLineTooLong, MaxLineLength)
		}
		if !utf8.Valid(raw) {
			return p.errorf(msgInvalidUTF8)
		}
		line := strings.TrimRight(string(raw), "\r")
		if pending.Len() > 0 {
			line = strings.TrimLeft(line, " \t")
		}
		if cont, ok := continued(line); ok {
			if pending.Len() == 0 {
				pendingStart = p.lineNo
			}
			pending.WriteString(cont)
			continue
		}
		if pending.Len() > 0 {
			pending.WriteString(line)
			line = pending.String()
			pending.Reset()
			here := p.lineNo
			p.lineNo = pendingStart
			err := p.parseLine(line)
			p.lineNo = here
			if err != nil {
				return err
			}
			continue
		}
		if err := p.parseLine(line); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		if err == bufio.ErrTooLong {
			p.lineNo++
			return p.errorf(msgLineTooLong, MaxLineLength)
		}
		return err
	}
	if pending.Len() > 0 {
		return p.errorf(msgContinuationAtEOF)
	}
	return nil
}

// continued reports whether a line ends with an unescaped backslash, and returns it without the backslash.
func continued(line string) (string, bool) {
	trimmed := strings.TrimRight(line, " \t")
	if !strings.HasSuffix(trimmed, "\\") {
		return line, false
	}
	// An even number of backslashes is a run of escaped backslashes, not a continuation.
	n := 0
	for i := len(trimmed) - 1; i >= 0 && trimmed[i] == '\\'; i-- {
		n++
	}
	if n%2 == 0 {
		return line, false
	}
	return trimmed[:len(trimmed)-1], true
}

func (p *parser) parseLine(line string) error {
	trimmed := strings.TrimSpace(line)
	switch {
	case trimmed == "":
		return nil
	case trimmed[0] == '#' || trimmed[0] == ';':
		return nil
	case trimmed[0] == '[':
		return p.parseSectionHeader(trimmed)
	}
	return p.parseKeyValue(trimmed)
}

func (p *parser) parseSectionHeader(line string) error {
	line = strings.TrimSpace(stripInlineComment(line))
	if !strings.HasSuffix(line, "]") {
		return p.errorf(msgBadSection)
	}
	inner := strings.TrimSpace(line[1 : len(line)-1])
	name := inner
	// [section "sub"] is stored as section.sub
	if i := strings.IndexByte(inner, '"'); i >= 0 {
		base := strings.TrimSpace(inner[:i])
		rest := inner[i:]
		if len(rest) < 2 || !strings.HasSuffix(rest, "\"") || base == "" {
			return p.errorf(msgBadSection)
		}
		sub, err := unquote(rest[1 : len(rest)-1])
		if err != nil {
			return p.errorf("%s", err.Error())
		}
		name = base + "." + sub
	}
	if name == "" {
		return p.errorf(msgEmptySection)
	}
	if strings.ContainsAny(name, "[]=") {
		return p.errorf(msgBadSection)
	}
	if !p.opts.CaseSensitive {
		name = strings.ToLower(name)
	}
	if s := p.file.Section(name); s != nil {
		if p.opts.Strict {
			return p.errorf(msgDuplicateSection, name)
		}
		p.section = s
		return nil
	}
	p.section = p.file.addSection(name, p.lineNo)
	return nil
}

func (p *parser) parseKeyValue(line string) error {
	sep := strings.IndexAny(line, "=:")
	if sep < 0 {
		key := strings.TrimSpace(stripInlineComment(line))
		return p.errorf(msgMissingSeparator, key)
	}
	key := strings.TrimSpace(line[:sep])
	if key == "" {
		return p.errorf(msgEmptyKey)
	}
	for _, r := range key {
		if !validKeyRune(r) {
			return p.errorf(msgBadKey, r)
		}
	}
	if !p.opts.CaseSensitive {
		key = strings.ToLower(key)
	}
	value, err := p.parseValue(line[sep+1:])
	if err != nil {
		return err
	}
	if p.section == nil {
		if !p.opts.AllowGlobal {
			return p.errorf(msgKeyOutsideSection, key)
		}
		p.section = p.file.addSection("", p.lineNo)
	}
	if p.opts.Strict {
		if p.seenKeys == nil {
			p.seenKeys = map[string]map[string]int{}
		}
		seen := p.seenKeys[p.section.Name]
		if seen == nil {
			seen = map[string]int{}
			p.seenKeys[p.section.Name] = seen
		}
		if _, dup := seen[key]; dup {
			return p.errorf(msgDuplicateKey, key, p.section.Name)
		}
		seen[key] = p.lineNo
	}
	p.section.set(key, value, p.lineNo)
	return nil
}

func validKeyRune(r rune) bool {
	return r == '_' || r == '-' || r == '.' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
}

// parseValue reads the text after the separator: an inline comment is dropped, surrounding whitespace trimmed and
// a quoted value unquoted.
func (p *parser) parseValue(raw string) (string, error) {
	v := strings.TrimSpace(stripInlineComment(raw))
	if v == "" || v[0] != '"' {
		return v, nil
	}
	end := closingQuote(v)
	if end < 0 {
		return "", p.errorf(msgUnterminatedQuote)
	}
	if rest := strings.TrimSpace(v[end+1:]); rest != "" {
		return "", p.errorf(msgTextAfterQuote)
	}
	s, err := unquote(v[1:end])
	if err != nil {
		return "", p.errorf("%s", err.Error())
	}
	return s, nil
}

// stripInlineComment removes a comment that starts with '#' or ';' preceded by whitespace. Comment characters
// inside a double-quoted value do not start a comment.
func stripInlineComment(s string) string {
	inQuote := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case inQuote && c == '\\':
			i++
		case c == '"':
			inQuote = !inQuote
		case !inQuote && i > 0 && (c == '#' || c == ';') && (s[i-1] == ' ' || s[i-1] == '\t'):
			return s[:i]
		}
	}
	return s
}

// closingQuote returns the index of the quote that closes the quoted string starting at s[0], or -1.
func closingQuote(s string) int {
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return -1
}

// unquote interprets the escapes of a quoted value (without its quotes).
func unquote(s string) (string, error) {
	if !strings.ContainsRune(s, '\\') {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		i++
		if i == len(s) {
			return "", errors.New(msgUnterminatedQuote)
		}
		switch s[i] {
		case '"', '\\':
			b.WriteByte(s[i])
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		default:
			return "", fmt.Errorf(msgBadEscape, s[i])
		}
	}
	return b.String(), nil
}
