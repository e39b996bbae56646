package dotenv

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
)

// Var is one assignment of a .env file.
type Var struct {
	Key   string
	Value string
	Line  int
}

// ParseError reports a line that is not an assignment.
type ParseError struct {
	Line int
	Text string
	Msg  string
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("dotenv: line %d: %s: %q", e.Line, e.Msg, e.Text)
}

// Parse reads assignments from r in file order. Blank lines and lines starting with '#' are skipped. A value may
// be single-quoted (taken literally), double-quoted (with \n, \t, \" and \\ escapes) or bare.
func Parse(r io.Reader) ([]Var, error) {
	var vars []Var
	sc := bufio.NewScanner(r)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		key, raw, ok := strings.Cut(line, "=")
		key = strings.TrimSpace(key)
		if !ok {
			return nil, &ParseError{Line: n, Text: line, Msg: "missing '='"}
		}
		if !validKey(key) {
			return nil, &ParseError{Line: n, Text: line, Msg: "invalid variable name"}
		}
		value, err := parseValue(strings.TrimSpace(raw))
		if err != nil {
			return nil, &ParseError{Line: n, Text: line, Msg: err.Error()}
		}
		vars = append(vars, Var{Key: key, Value: value, Line: n})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("dotenv: %w", err)
	}
	return vars, nil
}

// Map returns the assignments of r as a map; a later assignment of the same key wins.
func Map(r io.Reader) (map[string]string, error) {
	vars, err := Parse(r)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(vars))
	for _, v := range vars {
		out[v.Key] = v.Value
	}
	return out, nil
}

// Load reads the named files in order and sets every variable that the environment does not already hold.
func Load(files ...string) error {
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return fmt.Errorf("dotenv: %w", err)
		}
		vars, err := Parse(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		for _, v := range vars {
			if _, set := os.LookupEnv(v.Key); !set {
				os.Setenv(v.Key, v.Value)
			}
		}
	}
	return nil
}

func validKey(k string) bool {
	if k == "" {
		return false
	}
	for i, c := range k {
		switch {
		case c == '_', c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

func parseValue(raw string) (string, error) {
	switch {
	case strings.HasPrefix(raw, "'"):
		end := strings.Index(raw[1:], "'")
		if end < 0 {
			return "", fmt.Errorf("unterminated single-quoted value")
		}
		return raw[1 : end+1], nil
	case strings.HasPrefix(raw, `"`):
		return doubleQuoted(raw)
	default:
		return unquoted(raw), nil
	}
}

// unquoted reads a bare value: the text after '=' up to an inline comment (a '#' after a space), with the
// surrounding space removed.
func unquoted(raw string) string {
	v, _, _ := strings.Cut(raw, " #")
	v = strings.TrimSpace(v)
	return v
}

func doubleQuoted(raw string) (string, error) {
	var b strings.Builder
	for i := 1; i < len(raw); i++ {
		c := raw[i]
		switch {
		case c == '"':
			return b.String(), nil
		case c == '\\' && i+1 < len(raw):
			i++
			switch raw[i] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			default:
				b.WriteByte(raw[i])
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", fmt.Errorf("unterminated double-quoted value")
}
