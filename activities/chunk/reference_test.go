package chunk

// The chunker before issue 31 (lines joined into new strings), kept only as the reference that TestMatchesReference
// compares Split against.

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"strings"
)

// refSplit cuts one file into chunks of the unit. window is the window size for Window and for the fallback of
// other units (DefaultWindow when < 1). An empty file gives no chunks.
func refSplit(p string, src []byte, unit Unit, window int) []Chunk {
	if window < 1 {
		window = DefaultWindow
	}
	lines := refSplitLines(string(src))
	if len(lines) == 0 {
		return nil
	}
	switch unit {
	case File:
		return []Chunk{{Path: p, Start: 1, End: len(lines), Kind: "file", Text: string(src)}}
	case Window:
		return refWindows(p, lines, 1, len(lines), window, "window")
	}
	var spans []refSpan
	switch strings.ToLower(path.Ext(p)) {
	case ".go":
		var ok bool
		if spans, ok = refGoSpans(src, unit); !ok {
			return refWindows(p, lines, 1, len(lines), window, "window")
		}
	case ".py", ".pyi":
		spans = refPySpans(lines, unit)
	default:
		return refWindows(p, lines, 1, len(lines), window, "window")
	}
	return refFill(p, lines, spans)
}

// refSpan is a definition's line range.
type refSpan struct {
	start, end int
	kind       string
}

// refFill turns sorted, non-overlapping spans into chunks, adding a "gap" chunk for each run of lines outside every
// refSpan that holds anything but blank lines.
func refFill(p string, lines []string, spans []refSpan) []Chunk {
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
			out = append(out, refMk(p, lines, from, to, "gap"))
		}
	}
	for _, s := range spans {
		if s.start < next { // overlapping refSpan (nested); the outer one already holds it
			continue
		}
		gap(next, s.start-1)
		out = append(out, refMk(p, lines, s.start, s.end, s.kind))
		next = s.end + 1
	}
	gap(next, len(lines))
	return out
}

func refMk(p string, lines []string, start, end int, kind string) Chunk {
	return Chunk{Path: p, Start: start, End: end, Kind: kind, Text: strings.Join(lines[start-1:end], "")}
}

func refWindows(p string, lines []string, from, to, size int, kind string) []Chunk {
	var out []Chunk
	for s := from; s <= to; s += size {
		out = append(out, refMk(p, lines, s, min(s+size-1, to), kind))
	}
	return out
}

// refSplitLines splits text into lines that keep their "\n".
func refSplitLines(s string) []string {
	if s == "" {
		return nil
	}
	out := strings.SplitAfter(s, "\n")
	if out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

// refGoSpans lists the top-level declarations of a Go file (with their doc comments). For Function, only function
// and method declarations are spans; the rest of the file becomes gap chunks.
func refGoSpans(src []byte, unit Unit) ([]refSpan, bool) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, false
	}
	var spans []refSpan
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
		spans = append(spans, refSpan{start: fset.Position(start).Line, end: fset.Position(d.End()).Line, kind: kind})
	}
	return spans, true
}

// refPySpans finds Python definitions by indentation: a def or class header (with the decorators above it) and every
// following line that is blank or indented deeper than the header. Lines inside brackets or triple-quoted strings
// continue the statement they belong to whatever their indentation. For Definition only column-0 definitions count;
// for Function, every def (outermost first, so nested functions stay in their parent) and no classes.
func refPySpans(lines []string, unit Unit) []refSpan {
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
		depth, inStr = refScanPy(l, depth, inStr)
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
	var spans []refSpan
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
		spans = append(spans, refSpan{start: start, end: end, kind: kind})
		if unit == Function {
			i = j - 1 // nested defs stay inside this one
		}
	}
	return spans
}

// refScanPy updates the bracket depth and open triple-quote state over one line, skipping comments and strings.
func refScanPy(l string, depth int, inStr string) (int, string) {
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
