package steps

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestRowsAreWrittenByHandle inspects the steps' source: no row map is keyed by a string literal (row["x"],
// out.Row["x"], a map literal of a row): a step sets its row fields through their specs handles, so a field's name
// is written once, in its declaration, and a misspelt one does not compile.
func TestRowsAreWrittenByHandle(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		literal := func(e ast.Expr) {
			if lit, ok := e.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				t.Errorf("%s: row field %s named by a literal: set it through its specs handle",
					fset.Position(e.Pos()), lit.Value)
			}
		}
		ast.Inspect(af, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.IndexExpr:
				if isRowMap(n.X) {
					literal(n.Index)
				}
			case *ast.CompositeLit:
				if isStringAnyMap(n.Type) {
					for _, el := range n.Elts {
						literal(el.(*ast.KeyValueExpr).Key)
					}
				}
			}
			return true
		})
	}
}

// isRowMap reports whether e is a row fragment: a variable named row or a .Row field.
func isRowMap(e ast.Expr) bool {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name == "row"
	case *ast.SelectorExpr:
		return x.Sel.Name == "Row"
	}
	return false
}

func isStringAnyMap(e ast.Expr) bool {
	m, ok := e.(*ast.MapType)
	if !ok {
		return false
	}
	k, kok := m.Key.(*ast.Ident)
	v, vok := m.Value.(*ast.Ident)
	return kok && vok && k.Name == "string" && v.Name == "any"
}
