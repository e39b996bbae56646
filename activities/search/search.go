// Package search is the evidence step's search over a repository at one commit: fixed-string grep (as `git grep -F`
// does) and the snippet around a hit, which is the enclosing definition (Go through go/ast, Python by indentation)
// or, where there is none, a window of lines.
package search

import (
	"go/ast"
	"go/parser"
	"go/token"
	"sort"
	"strings"

	"ctxlab/activities/chunk"
)

// Hit is one line of a file containing a pattern.
type Hit struct {
	Path    string `json:"path"`
	Line    int    `json:"line"` // 1-based
	Pattern string `json:"pattern"`
}

// File is a file's text as search reads it.
type File struct {
	Path string
	Text string
}

// maxFileBytes skips generated and data files too large to be read as code.
const maxFileBytes = 1 << 20

// Grep returns, per file, the lines containing any of the fixed strings (case-sensitive), in file order then line
// order. Binary files (with a NUL byte) and files over 1 MiB are skipped; empty patterns are ignored.
func Grep(files []File, patterns []string) []Hit {
	var pats []string
	for _, p := range patterns {
		if p != "" {
			pats = append(pats, p)
		}
	}
	if len(pats) == 0 {
		return nil
	}
	var hits []Hit
	for _, f := range files {
		if len(f.Text) > maxFileBytes || strings.IndexByte(f.Text, 0) >= 0 {
			continue
		}
		matched := false
		for _, p := range pats {
			if strings.Contains(f.Text, p) {
				matched = true
				break
			}
		}
		if !matched {
			continue
		}
		for i, line := range strings.Split(f.Text, "\n") {
			for _, p := range pats {
				if strings.Contains(line, p) {
					hits = append(hits, Hit{Path: f.Path, Line: i + 1, Pattern: p})
					break
				}
			}
		}
	}
	return hits
}

// Snippet is lines Start..End (1-based, inclusive) of a file.
type Snippet struct {
	Path  string `json:"path"`
	Start int    `json:"start"`
	End   int    `json:"end"`
	Text  string `json:"text"`
	// Kind says how the lines were chosen: "definition" or "window".
	Kind string `json:"kind"`
	// Name is the enclosing definition's name, when there is one.
	Name string `json:"name,omitempty"`
}

// DefaultWindow is the half-height of a line window.
const DefaultWindow = 15

// maxDefinitionLines bounds an enclosing definition; a bigger one (a huge function or class) falls back to a window,
// so one hit never brings in a whole module.
const maxDefinitionLines = 400

// Around returns the snippet of text around line: the enclosing top-level Go declaration (with its doc comment) for
// .go files, the enclosing Python def or class (outermost under the module, with decorators) for .py files, else a
// window of window lines either side.
func Around(path, text string, line, window int) Snippet {
	if window <= 0 {
		window = DefaultWindow
	}
	lines := strings.Split(text, "\n")
	if strings.HasSuffix(text, "\n") {
		lines = lines[:len(lines)-1]
	}
	if line < 1 {
		line = 1
	}
	if line > len(lines) {
		line = len(lines)
	}
	start, end, name, ok := 0, 0, "", false
	switch {
	case strings.HasSuffix(path, ".go"):
		start, end, name, ok = goDefinition(path, text, line)
	case strings.HasSuffix(path, ".py") || strings.HasSuffix(path, ".pyi"):
		start, end, name, ok = pythonDefinition(lines, line)
	}
	kind := "definition"
	if !ok || end-start+1 > maxDefinitionLines {
		start, end, name, kind = max(1, line-window), min(len(lines), line+window), "", "window"
	}
	return Snippet{Path: path, Start: start, End: end, Kind: kind, Name: name,
		Text: strings.Join(lines[start-1:end], "\n") + "\n"}
}

// goDefinition finds the top-level declaration of a Go file that contains line.
func goDefinition(path, text string, line int) (start, end int, name string, ok bool) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, text, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil && f == nil {
		return 0, 0, "", false
	}
	for _, d := range f.Decls {
		from, to := d.Pos(), d.End()
		var doc *ast.CommentGroup
		switch d := d.(type) {
		case *ast.FuncDecl:
			doc, name = d.Doc, d.Name.Name
			if d.Recv != nil && len(d.Recv.List) > 0 {
				name = recvName(d.Recv.List[0].Type) + "." + name
			}
		case *ast.GenDecl:
			doc = d.Doc
			name = genName(d)
		}
		if doc != nil {
			from = doc.Pos()
		}
		s, e := fset.Position(from).Line, fset.Position(to).Line
		if s <= line && line <= e {
			return s, e, name, true
		}
	}
	return 0, 0, "", false
}

func recvName(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return recvName(t.X)
	case *ast.Ident:
		return t.Name
	case *ast.IndexExpr:
		return recvName(t.X)
	case *ast.IndexListExpr:
		return recvName(t.X)
	}
	return ""
}

func genName(d *ast.GenDecl) string {
	if len(d.Specs) != 1 {
		return ""
	}
	switch s := d.Specs[0].(type) {
	case *ast.TypeSpec:
		return s.Name.Name
	case *ast.ValueSpec:
		if len(s.Names) > 0 {
			return s.Names[0].Name
		}
	}
	return ""
}

// pythonDefinition finds the definition around line: of the def and class headers enclosing it, the outermost one,
// except that a method is shown rather than its whole class. The snippet runs from the header's decorators to the
// last line indented deeper than the header.
func pythonDefinition(lines []string, line int) (start, end int, name string, ok bool) {
	idx := line - 1
	level := 1 << 30 // indentation a header must be below to enclose what was seen so far
	if strings.TrimSpace(lines[idx]) != "" {
		level = chunk.IndentWidth(lines[idx]) + 1
	}
	var chain []int // enclosing headers, innermost first
	for i := idx; i >= 0; i-- {
		l := lines[i]
		if strings.TrimSpace(l) == "" {
			continue
		}
		ind := chunk.IndentWidth(l)
		if ind >= level {
			continue
		}
		level = ind
		if isPyHeader(l) {
			chain = append(chain, i)
		}
		if ind == 0 {
			break
		}
	}
	if len(chain) == 0 {
		return 0, 0, "", false
	}
	hdr := chain[len(chain)-1]
	if strings.HasPrefix(strings.TrimSpace(lines[hdr]), "class ") && len(chain) >= 2 {
		hdr = chain[len(chain)-2]
	}
	ind := chunk.IndentWidth(lines[hdr])
	s := hdr
	for s > 0 && strings.HasPrefix(strings.TrimSpace(lines[s-1]), "@") && chunk.IndentWidth(lines[s-1]) == ind {
		s--
	}
	// The header may span lines (a long signature) up to the line ending with a colon.
	e := hdr
	for e < len(lines)-1 && e-hdr < 30 && !strings.HasSuffix(strings.TrimRight(stripPyComment(lines[e]), " \t"), ":") {
		e++
	}
	for i := e + 1; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) == "" {
			continue
		}
		if chunk.IndentWidth(lines[i]) <= ind {
			break
		}
		e = i
	}
	if e < idx {
		return 0, 0, "", false
	}
	trim := strings.TrimSpace(lines[hdr])
	trim = strings.TrimPrefix(strings.TrimPrefix(strings.TrimPrefix(trim, "async "), "def "), "class ")
	if i := strings.IndexAny(trim, "(:"); i >= 0 {
		trim = trim[:i]
	}
	return s + 1, e + 1, strings.TrimSpace(trim), true
}

func isPyHeader(l string) bool {
	t := strings.TrimSpace(l)
	return strings.HasPrefix(t, "def ") || strings.HasPrefix(t, "async def ") || strings.HasPrefix(t, "class ")
}

// stripPyComment drops a trailing # comment (not inside quotes is not checked: headers rarely hold '#').
func stripPyComment(l string) string {
	if i := strings.Index(l, "#"); i >= 0 {
		return l[:i]
	}
	return l
}

// Files groups hits by file, files in order of first appearance, and sorts each file's hits by line.
func Files(hits []Hit) (order []string, byFile map[string][]Hit) {
	byFile = map[string][]Hit{}
	for _, h := range hits {
		if _, ok := byFile[h.Path]; !ok {
			order = append(order, h.Path)
		}
		byFile[h.Path] = append(byFile[h.Path], h)
	}
	for _, hs := range byFile {
		sort.SliceStable(hs, func(i, j int) bool { return hs[i].Line < hs[j].Line })
	}
	return order, byFile
}

// DefinesName reports whether line of a file's text declares name: "func name", "func (r T) name", "type name",
// "name =" / "name :=" at the start of a line, "def name", "class name". It lets a definition search put the
// declaring file before files that only mention the name.
func DefinesName(line, name string) bool {
	t := strings.TrimSpace(line)
	if i := strings.LastIndex(name, "."); i >= 0 {
		name = name[i+1:]
	}
	if name == "" {
		return false
	}
	for _, pre := range []string{"func " + name + "(", "func " + name + "[", "type " + name + " ", "def " + name + "(",
		"async def " + name + "(", "class " + name + "(", "class " + name + ":", "var " + name + " ",
		"const " + name + " ", name + " = ", name + " := "} {
		if strings.HasPrefix(t, pre) {
			return true
		}
	}
	if strings.HasPrefix(t, "func (") {
		if i := strings.Index(t, ") "+name+"("); i >= 0 {
			return true
		}
	}
	return false
}
