package kvconf

import (
	"bufio"
	"io"
	"strings"
)

// Write formats f in canonical form: sections in order, "key = value" lines, a blank line between sections.
// Values that would not read back unchanged are quoted. Comments are not preserved.
func Write(w io.Writer, f *File) error {
	bw := bufio.NewWriter(w)
	first := true
	for _, s := range f.Sections {
		if !first {
			bw.WriteString("\n")
		}
		first = false
		if s.Name != "" {
			bw.WriteString(sectionHeader(s.Name))
			bw.WriteString("\n")
		}
		for _, k := range s.Keys {
			bw.WriteString(k.Name)
			bw.WriteString(" = ")
			bw.WriteString(quoteIfNeeded(k.Value))
			bw.WriteString("\n")
		}
	}
	return bw.Flush()
}

// sectionHeader writes "name.sub" back as [name "sub"] so that dots in subsection names survive.
func sectionHeader(name string) string {
	base, sub, ok := strings.Cut(name, ".")
	if !ok {
		return "[" + name + "]"
	}
	return "[" + base + " " + quote(sub) + "]"
}

// quoteIfNeeded quotes values with surrounding spaces, comment characters, quotes, backslashes or line breaks.
func quoteIfNeeded(v string) string {
	if v == "" {
		return ""
	}
	if strings.TrimSpace(v) != v || strings.ContainsAny(v, "#;\"\\\n\t") {
		return quote(v)
	}
	return v
}

func quote(v string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}
