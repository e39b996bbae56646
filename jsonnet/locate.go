package jsonnet

import (
	"sort"
	"strconv"
	"strings"

	gojsonnet "github.com/google/go-jsonnet"
	"github.com/google/go-jsonnet/ast"
	"github.com/google/go-jsonnet/formatter"
	"github.com/google/go-jsonnet/toolutils"

	"ctxlab/specs"
)

// occurrence is one place in a source file that a validation error may point at.
type occurrence struct {
	seq       int // files in the order they were visited, the spec first
	file      string
	line, col int
	// field is the name of the object field whose value this is, when the literal is directly a field's value.
	field string
}

// sourceIndex maps string literals and object field names of the spec and the files it imports (not the embedded
// library: a researcher cannot fix that) to their places, in source order.
type sourceIndex struct {
	spec     string
	literals map[string][]occurrence
	// numbers are number literals, by their value in Go's shortest form ("1.5" for 1.50).
	numbers map[string][]occurrence
	keys    map[string][]occurrence
	// refs are field accesses by name (ctxlab.methods.no_source), for values that come from the library.
	refs map[string][]occurrence
	seq  int // the file being walked
	// broken holds files that do not parse, found while following imports.
	broken []staticError
}

// indexSources parses the spec and, following import expressions, every file it imports, with go-jsonnet's parser.
// It reads files through the VM so that it sees exactly what evaluation saw.
func indexSources(vm *gojsonnet.VM, spec string) *sourceIndex {
	ix := &sourceIndex{spec: spec, literals: map[string][]occurrence{}, numbers: map[string][]occurrence{},
		keys: map[string][]occurrence{}, refs: map[string][]occurrence{}}
	seen := map[string]bool{}
	var visit func(from, imported string)
	visit = func(from, imported string) {
		text, foundAt, err := vm.ImportData(from, imported)
		if err != nil || seen[foundAt] || isLibrary(foundAt) {
			return
		}
		seen[foundAt] = true
		// ImportAST also runs go-jsonnet's static checks (unknown variables), and returns the very error that
		// evaluation wrapped into a runtime error at the import.
		if _, _, err := vm.ImportAST(from, imported); err != nil {
			if se, ok := err.(staticError); ok {
				ix.broken = append(ix.broken, se)
			}
		}
		node, _, err := formatter.SnippetToRawAST(foundAt, text)
		if err != nil {
			return
		}
		var imports []string
		ix.seq = len(seen)
		ix.walk(foundAt, node, "", &imports)
		for _, imp := range imports {
			visit(foundAt, imp)
		}
	}
	visit("", spec)
	for _, m := range []map[string][]occurrence{ix.literals, ix.numbers, ix.keys, ix.refs} {
		for _, occ := range m {
			sort.SliceStable(occ, func(i, j int) bool {
				if occ[i].seq != occ[j].seq {
					return occ[i].seq < occ[j].seq
				}
				if occ[i].line != occ[j].line {
					return occ[i].line < occ[j].line
				}
				return occ[i].col < occ[j].col
			})
		}
	}
	return ix
}

// walk records the literals and field names under node. field is the name of the field node is the value of.
func (ix *sourceIndex) walk(file string, node ast.Node, field string, imports *[]string) {
	if node == nil {
		return
	}
	switch n := node.(type) {
	case *ast.LiteralString:
		if loc := n.LocRange; loc.IsSet() {
			ix.literals[n.Value] = append(ix.literals[n.Value], occurrence{ix.seq, file, loc.Begin.Line, loc.Begin.Column, field})
		}
		return
	case *ast.LiteralNumber:
		if x, err := strconv.ParseFloat(n.OriginalString, 64); err == nil && n.LocRange.IsSet() {
			v := strconv.FormatFloat(x, 'g', -1, 64)
			ix.numbers[v] = append(ix.numbers[v], occurrence{ix.seq, file, n.LocRange.Begin.Line,
				n.LocRange.Begin.Column, field})
		}
		return
	case *ast.Import:
		if n.File != nil {
			*imports = append(*imports, n.File.Value)
		}
		return
	case *ast.ImportStr, *ast.ImportBin:
		return
	case *ast.Object:
		ix.fields(file, n.Fields, imports)
		return
	case *ast.ObjectComp:
		ix.fields(file, n.Fields, imports)
		for spec := &n.Spec; spec != nil; spec = spec.Outer {
			ix.walk(file, spec.Expr, "", imports)
			for _, c := range spec.Conditions {
				ix.walk(file, c.Expr, "", imports)
			}
		}
		return
	case *ast.Parens:
		ix.walk(file, n.Inner, field, imports)
		return
	case *ast.Index:
		if n.Id != nil && n.LocRange.IsSet() {
			name := string(*n.Id)
			ix.refs[name] = append(ix.refs[name], occurrence{ix.seq, file, n.LocRange.Begin.Line,
				n.LocRange.Begin.Column, field})
		}
	}
	for _, c := range children(node) {
		ix.walk(file, c, "", imports)
	}
}

func (ix *sourceIndex) fields(file string, fields ast.ObjectFields, imports *[]string) {
	for _, f := range fields {
		name := ""
		switch f.Kind {
		case ast.ObjectFieldID:
			if f.Id != nil {
				name = string(*f.Id)
			}
		case ast.ObjectFieldStr:
			if s, ok := f.Expr1.(*ast.LiteralString); ok {
				name = s.Value
			}
		}
		// A field name written as a string ("name": x) is a key, not a literal value.
		if name != "" && f.LocRange.IsSet() {
			ix.keys[name] = append(ix.keys[name], occurrence{ix.seq, file, f.LocRange.Begin.Line, f.LocRange.Begin.Column, ""})
		}
		if f.Kind == ast.ObjectFieldExpr {
			ix.walk(file, f.Expr1, "", imports)
		}
		if f.Kind == ast.ObjectLocal || f.Kind == ast.ObjectAssert {
			name = ""
		}
		if f.Method != nil {
			ix.walk(file, f.Method, "", imports)
			continue
		}
		ix.walk(file, f.Expr2, name, imports)
		ix.walk(file, f.Expr3, "", imports)
	}
}

// children lists a node's children; it never panics, whatever node go-jsonnet hands it.
func children(node ast.Node) (out []ast.Node) {
	defer func() {
		if recover() != nil {
			out = nil
		}
	}()
	return toolutils.Children(node)
}

// locate finds the place a validation error points at: the string literal equal to its Value (preferring one that is
// the value of a field named like the last element of its Path), else a field access of that name
// (ctxlab.methods.no_source), or for Key errors the field of that name; failing that, for a path without indexes, a
// field named like its last element; failing that, line 1 of the spec. Occurrence picks among equal candidates, in
// source order, the spec first.
func (ix *sourceIndex) locate(v *specs.ValidationError) *Error {
	last := lastKey(v.Path)
	pick := func(occ []occurrence) *Error {
		if len(occ) == 0 {
			return nil
		}
		i := min(max(v.Occurrence, 0), len(occ)-1)
		return &Error{File: occ[i].file, Line: occ[i].line, Col: occ[i].col, Msg: v.Error()}
	}
	if v.Number {
		// A negative number is a unary minus on its literal.
		occ := ix.numbers[strings.TrimPrefix(v.Value, "-")]
		var named []occurrence
		for _, o := range occ {
			if o.field == last {
				named = append(named, o)
			}
		}
		if e := pick(named); e != nil {
			return e
		}
		if e := pick(occ); e != nil {
			return e
		}
	} else if v.Value != "" {
		if v.Key {
			if e := pick(ix.keys[v.Value]); e != nil {
				return e
			}
		} else {
			all := ix.literals[v.Value]
			var named []occurrence
			for _, o := range all {
				if o.field == last {
					named = append(named, o)
				}
			}
			if e := pick(named); e != nil {
				return e
			}
			if e := pick(all); e != nil {
				return e
			}
			if e := pick(ix.refs[v.Value]); e != nil {
				return e
			}
		}
	}
	// A field name such as "name" or "id" occurs in every method and step: only a path without indexes names one
	// field ("models", "limits.concurrency").
	if last != "" && !strings.Contains(v.Path, "[") {
		if occ := ix.keys[last]; len(occ) > 0 {
			return &Error{File: occ[0].file, Line: occ[0].line, Col: occ[0].col, Msg: v.Error()}
		}
	}
	return &Error{File: ix.spec, Line: 1, Msg: v.Error()}
}

// lastKey returns the last field name of a path such as "methods[2].steps[1].activity" ("activity").
func lastKey(path string) string {
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		path = path[i+1:]
	}
	if i := strings.IndexByte(path, '['); i >= 0 {
		path = path[:i]
	}
	return path
}
