// Package chunk splits source files into the retrieval units of PAPER.md: top-level definitions, functions,
// fixed-size line windows and whole files. Go files are split through go/ast, Python files by indentation, and any
// other file (or a Go file that does not parse) by windows. Chunks are whole lines, numbered from 1, and never
// overlap; text outside every definition (package clauses, imports, comments between definitions) is kept as chunks
// of its own so that no line of a file is lost to retrieval.
package chunk

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"strings"
)

// Unit is a kind of retrieval unit.
type Unit string

// Units.
const (
	// Definition: each top-level definition (Go: func, method, type, var, const, import declaration; Python: a
	// top-level def or class with its decorators); text between definitions is grouped into chunks of its own.
	Definition Unit = "definition"
	// Function: each function or method (Python methods are split out of their classes); the remaining text of the
	// file is kept as definition chunks and gaps.
	Function Unit = "function"
	// Window: consecutive windows of Lines lines.
	Window Unit = "window"
	// File: the whole file.
	File Unit = "file"
)

// Units lists every unit, for error messages.
var Units = []Unit{Definition, Function, Window, File}

// DefaultWindow is the window size of PAPER.md's line-window unit.
const DefaultWindow = 60

// Chunk is lines Start..End (1-based, inclusive) of a file.
type Chunk struct {
	Path  string `json:"path"`
	Start int    `json:"start"`
	End   int    `json:"end"`
	// Kind says what the chunk holds: func, type, def, class, gap, window, file.
	Kind string `json:"kind"`
	Text string `json:"text"`
}

// ParseUnit checks a unit name.
func ParseUnit(s string) (Unit, error) {
	for _, u := range Units {
		if string(u) == s {
			return u, nil
		}
	}
	return "", fmt.Errorf("unknown chunk unit %q (known: definition, function, window, file)", s)
}

// Split cuts one file into chunks of the unit. window is the window size for Window and for the fallback of
// other units (DefaultWindow when < 1). An empty file gives no chunks.
func Split(p string, src []byte, unit Unit, window int) []Chunk {
	if window < 1 {
		window = DefaultWindow
	}
	lines := splitLines(string(src))
	if len(lines) == 0 {
		return nil
	}
	switch unit {
	case File:
		return []Chunk{{Path: p, Start: 1, End: len(lines), Kind: "file", Text: string(src)}}
	case Window:
		return windows(p, lines, 1, len(lines), window, "window")
	}
	var spans []span
	switch strings.ToLower(path.Ext(p)) {
	case ".go":
		var ok bool
		if spans, ok = goSpans(src, unit); !ok {
			return windows(p, lines, 1, len(lines), window, "window")
		}
	case ".py", ".pyi":
		spans = pySpans(lines, unit)
	default:
		return windows(p, lines, 1, len(lines), window, "window")
	}
	return fill(p, lines, spans)
}

// span is a definition's line range.
type span struct {
	start, end int
	kind       string
}

// fill turns sorted, non-overlapping spans into chunks, adding a "gap" chunk for each run of lines outside every
// span that holds anything but blank lines.
func fill(p string, lines []string, spans []span) []Chunk {
	var out []Chunk
	next := 1
	gap := func(from, to int) {
		for from <= to && strings.TrimSpace(lines[from-1]) == "" {
			from++
		}
		for to >= from && strings.TrimSpace(lines[to-1]) == "" {
			to--
		}
		if from <= to {
			out = append(out, mk(p, lines, from, to, "gap"))
		}
	}
	for _, s := range spans {
		if s.start < next { // overlapping span (nested); the outer one already holds it
			continue
		}
		gap(next, s.start-1)
		out = append(out, mk(p, lines, s.start, s.end, s.kind))
		next = s.end + 1
	}
	gap(next, len(lines))
	return out
}

func mk(p string, lines []string, start, end int, kind string) Chunk {
	return Chunk{Path: p, Start: start, End: end, Kind: kind, Text: strings.Join(lines[start-1:end], "")}
}

func windows(p string, lines []string, from, to, size int, kind string) []Chunk {
	var out []Chunk
	for s := from; s <= to; s += size {
		out = append(out, mk(p, lines, s, min(s+size-1, to), kind))
	}
	return out
}

// splitLines splits text into lines that keep their "\n".
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	out := strings.SplitAfter(s, "\n")
	if out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

// goSpans lists the top-level declarations of a Go file (with their doc comments). For Function, only function
// and method declarations are spans; the rest of the file becomes gap chunks.
func goSpans(src []byte, unit Unit) ([]span, bool) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, false
	}
	var spans []span
	for _, d := range f.Decls {
		start := d.Pos()
		kind := "decl"
		switch d := d.(type) {
		case *ast.FuncDecl:
			kind = "func"
			if d.Doc != nil {
				start = d.Doc.Pos()
			}
		case *ast.GenDecl:
			if unit == Function {
				continue
			}
			kind = strings.ToLower(d.Tok.String())
			if d.Doc != nil {
				start = d.Doc.Pos()
			}
		}
		spans = append(spans, span{start: fset.Position(start).Line, end: fset.Position(d.End()).Line, kind: kind})
	}
	return spans, true
}

// pySpans finds Python definitions by indentation: a def or class header (with the decorators above it) and every
// following line that is blank or indented deeper than the header. Lines inside brackets or triple-quoted strings
// continue the statement they belong to whatever their indentation. For Definition only column-0 definitions count;
// for Function, every def (outermost first, so nested functions stay in their parent) and no classes.
func pySpans(lines []string, unit Unit) []span {
	type logical struct {
		first, last int // 1-based
		indent      int
		text        string
	}
	// Join physical lines into logical ones.
	var stmts []logical
	depth, inStr := 0, ""
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if depth == 0 && inStr == "" {
			if strings.TrimSpace(l) == "" {
				continue
			}
			stmts = append(stmts, logical{first: i + 1, indent: IndentWidth(l), text: strings.TrimSpace(l)})
		}
		stmts[len(stmts)-1].last = i + 1
		depth, inStr = scanPy(l, depth, inStr)
		if depth < 0 {
			depth = 0
		}
	}
	isDef := func(t string) (string, bool) {
		switch {
		case strings.HasPrefix(t, "def "), strings.HasPrefix(t, "async def "):
			return "def", true
		case strings.HasPrefix(t, "class "):
			return "class", unit == Definition
		}
		return "", false
	}
	var spans []span
	for i := 0; i < len(stmts); i++ {
		s := stmts[i]
		kind, ok := isDef(s.text)
		if !ok || (unit == Definition && s.indent != 0) {
			continue
		}
		start := s.first
		for j := i - 1; j >= 0 && stmts[j].indent == s.indent && strings.HasPrefix(stmts[j].text, "@"); j-- {
			start = stmts[j].first
		}
		end := s.last
		j := i + 1
		for ; j < len(stmts) && stmts[j].indent > s.indent; j++ {
			end = stmts[j].last
		}
		spans = append(spans, span{start: start, end: end, kind: kind})
		if unit == Function {
			i = j - 1 // nested defs stay inside this one
		}
	}
	return spans
}

// IndentWidth is the width of a line's leading whitespace, tabs to the next multiple of 8 (Python's rule).
func IndentWidth(l string) int {
	n := 0
	for _, r := range l {
		switch r {
		case ' ':
			n++
		case '\t':
			n += 8 - n%8
		default:
			return n
		}
	}
	return n
}

// scanPy updates the bracket depth and open triple-quote state over one line, skipping comments and strings.
func scanPy(l string, depth int, inStr string) (int, string) {
	for i := 0; i < len(l); i++ {
		if inStr != "" {
			if strings.HasPrefix(l[i:], inStr) {
				i += len(inStr) - 1
				inStr = ""
			} else if l[i] == '\\' {
				i++
			}
			continue
		}
		switch c := l[i]; c {
		case '#':
			return depth, inStr
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		case '"', '\'':
			q := string(c)
			if strings.HasPrefix(l[i:], q+q+q) {
				inStr = q + q + q
				i += 2
				continue
			}
			// A one-line string: skip to its end.
			for i++; i < len(l) && l[i] != c; i++ {
				if l[i] == '\\' {
					i++
				}
			}
		}
	}
	return depth, inStr
}
