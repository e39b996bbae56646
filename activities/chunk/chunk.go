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
// other units (DefaultWindow when < 1). An empty file gives no chunks. The chunks' texts are pieces of one copy of
// src.
func Split(p string, src []byte, unit Unit, window int) []Chunk {
	if window < 1 {
		window = DefaultWindow
	}
	ls := newLines(string(src))
	if ls.n() == 0 {
		return nil
	}
	switch unit {
	case File:
		return []Chunk{{Path: p, Start: 1, End: ls.n(), Kind: "file", Text: ls.s}}
	case Window:
		return windows(p, ls, window)
	}
	var spans []span
	switch strings.ToLower(path.Ext(p)) {
	case ".go":
		var ok bool
		if spans, ok = goSpans(src, unit); !ok {
			return windows(p, ls, window)
		}
	case ".py", ".pyi":
		spans = pySpans(ls, unit)
	default:
		return windows(p, ls, window)
	}
	return fill(p, ls, spans)
}

// lines are a text's lines, each keeping its "\n": line k (from 1) is s[start[k-1]:start[k]].
type lines struct {
	s     string
	start []int
}

func newLines(s string) lines {
	n := strings.Count(s, "\n")
	if s != "" && s[len(s)-1] != '\n' {
		n++
	}
	start := make([]int, 1, n+1)
	for at := 0; at < len(s); {
		i := strings.IndexByte(s[at:], '\n')
		if i < 0 {
			at = len(s)
		} else {
			at += i + 1
		}
		start = append(start, at)
	}
	return lines{s, start}
}

// n is the number of lines.
func (ls lines) n() int { return len(ls.start) - 1 }

// line is line k (from 1).
func (ls lines) line(k int) string { return ls.s[ls.start[k-1]:ls.start[k]] }

// text is lines from..to (from 1, inclusive).
func (ls lines) text(from, to int) string { return ls.s[ls.start[from-1]:ls.start[to]] }

// span is a definition's line range.
type span struct {
	start, end int
	kind       string
}

// fill turns sorted, non-overlapping spans into chunks, adding a "gap" chunk for each run of lines outside every
// span that holds anything but blank lines.
func fill(p string, ls lines, spans []span) []Chunk {
	var out []Chunk
	next := 1
	gap := func(from, to int) {
		for from <= to && strings.TrimSpace(ls.line(from)) == "" {
			from++
		}
		for to >= from && strings.TrimSpace(ls.line(to)) == "" {
			to--
		}
		if from <= to {
			out = append(out, mk(p, ls, from, to, "gap"))
		}
	}
	for _, s := range spans {
		if s.start < next { // overlapping span (nested); the outer one already holds it
			continue
		}
		gap(next, s.start-1)
		out = append(out, mk(p, ls, s.start, s.end, s.kind))
		next = s.end + 1
	}
	gap(next, ls.n())
	return out
}

func mk(p string, ls lines, start, end int, kind string) Chunk {
	return Chunk{Path: p, Start: start, End: end, Kind: kind, Text: ls.text(start, end)}
}

// windows cuts the whole text into windows of size lines.
func windows(p string, ls lines, size int) []Chunk {
	out := make([]Chunk, 0, (ls.n()+size-1)/size)
	for s := 1; s <= ls.n(); s += size {
		out = append(out, mk(p, ls, s, min(s+size-1, ls.n()), "window"))
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
func pySpans(ls lines, unit Unit) []span {
	stmts := pyStatements(ls)
	var spans []span
	for i := 0; i < len(stmts); i++ {
		s := stmts[i]
		kind := ""
		switch {
		case s.head == pyDef:
			kind = "def"
		case s.head == pyClass && unit == Definition:
			kind = "class"
		}
		if kind == "" || (unit == Definition && s.indent != 0) {
			continue
		}
		start := s.first
		for j := i - 1; j >= 0 && stmts[j].indent == s.indent && stmts[j].head == pyDecorator; j-- {
			start = stmts[j].first
		}
		end := s.last
		j := i + 1
		for ; j < len(stmts) && stmts[j].indent > s.indent; j++ {
			end = stmts[j].last
		}
		spans = append(spans, span{start: int(start), end: int(end), kind: kind})
		if unit == Function {
			i = j - 1 // nested defs stay inside this one
		}
	}
	return spans
}

// pyStatement is a logical line of Python: physical lines first..last (from 1), the first one's indentation and
// what the statement starts with.
type pyStatement struct {
	first, last, indent int32
	head                pyHead
}

// pyHead is what a statement starts with, as far as pySpans cares.
type pyHead uint8

const (
	pyOther     pyHead = iota
	pyDef              // "def " or "async def "
	pyClass            // "class "
	pyDecorator        // "@"
)

// pyStatements joins physical lines into logical ones, skipping blank lines between statements.
func pyStatements(ls lines) []pyStatement {
	var stmts []pyStatement
	depth, inStr := 0, byte(0)
	for k := 1; k <= ls.n(); k++ {
		l := ls.line(k)
		if depth == 0 && inStr == 0 {
			t := strings.TrimSpace(l)
			if t == "" {
				continue
			}
			stmts = append(stmts, pyStatement{first: int32(k), indent: int32(IndentWidth(l)), head: headOf(t)})
		}
		stmts[len(stmts)-1].last = int32(k)
		depth, inStr = scanPy(l, depth, inStr)
		if depth < 0 {
			depth = 0
		}
	}
	return stmts
}

func headOf(t string) pyHead {
	switch {
	case strings.HasPrefix(t, "def "), strings.HasPrefix(t, "async def "):
		return pyDef
	case strings.HasPrefix(t, "class "):
		return pyClass
	case strings.HasPrefix(t, "@"):
		return pyDecorator
	}
	return pyOther
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

// scanPy updates the bracket depth and the open triple-quoted string (its quote character, 0 for none) over one
// line, skipping comments and strings.
func scanPy(l string, depth int, inStr byte) (int, byte) {
	for i := 0; i < len(l); i++ {
		if inStr != 0 {
			if tripleQuote(l, i, inStr) {
				i += 2
				inStr = 0
			} else if l[i] == '\\' {
				i++
			}
			continue
		}
		c := l[i]
		if !pySignificant[c] {
			continue
		}
		switch c {
		case '#':
			return depth, inStr
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		case '"', '\'':
			if tripleQuote(l, i, c) {
				inStr = c
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

// pySignificant are the bytes scanPy looks at outside strings.
var pySignificant = [256]bool{'#': true, '(': true, '[': true, '{': true, ')': true, ']': true, '}': true, '"': true,
	'\'': true}

// tripleQuote says whether l holds three quote characters q at i.
func tripleQuote(l string, i int, q byte) bool {
	return i+2 < len(l) && l[i] == q && l[i+1] == q && l[i+2] == q
}
