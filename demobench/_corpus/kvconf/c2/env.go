package kvconf

import (
	"os"
	"strings"
)

// ExpandEnv replaces ${NAME} and ${NAME:-default} in every value of f using lookup (os.LookupEnv when nil).
// A reference to an unset variable without a default becomes the empty string. "$$" is a literal dollar sign.
func ExpandEnv(f *File, lookup func(string) (string, bool)) {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	for _, s := range f.Sections {
		for _, k := range s.Keys {
			k.Value = expand(k.Value, lookup)
		}
	}
}

func expand(s string, lookup func(string) (string, bool)) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == '$' {
			b.WriteByte('$')
			i++
			continue
		}
		if i+1 >= len(s) || s[i+1] != '{' {
			b.WriteByte('$')
			continue
		}
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			b.WriteString(s[i:])
			break
		}
		ref := s[i+2 : i+end]
		name, def, hasDef := strings.Cut(ref, ":-")
		if v, ok := lookup(name); ok && (v != "" || !hasDef) {
			b.WriteString(v)
		} else if hasDef {
			b.WriteString(def)
		}
		i += end
	}
	return b.String()
}
