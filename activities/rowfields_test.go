package activities

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"

	"ctxlab/jsonnet"
	"ctxlab/specs"
)

// TestEveryActivityEmitsOnlyDeclaredFields runs the demo spec's whole plan (all its methods, so every activity of
// the catalog) on a demo instance with the real activities: a node whose row sets a field its activity does not
// declare, or a value of another kind, fails, and so does this test. An activity of the catalog that the demo does
// not run is an error too, unless notInDemo names the test that runs it, so a new activity cannot escape the check.
func TestEveryActivityEmitsOnlyDeclaredFields(t *testing.T) {
	if testing.Short() {
		t.Skip("runs and grades every demo method on one instance")
	}
	f := newFixture(t)
	e, err := jsonnet.Compile(filepath.Join("..", "specs", "demo.jsonnet"), jsonnet.Options{})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := specs.BuildPlan(e)
	if err != nil {
		t.Fatal(err)
	}
	outs := f.runPlan(plan, inst) // fails on the first node the check refuses
	ran := map[string]bool{}
	for _, n := range plan.Nodes {
		ran[n.Activity] = true
		// Checked again after Temporal's JSON round trip, as the workflow receives it.
		if err := specs.CheckRow(n.Activity, n.Steps[0], outs[n.Key].Row); err != nil {
			t.Error(err)
		}
	}
	for _, name := range specs.ActivityNames() {
		if _, elsewhere := notInDemo[name]; !ran[name] && !elsewhere {
			t.Errorf("activity %s is not in the demo's plan: run it there, or name the test that runs it in notInDemo",
				name)
		}
	}
}

// notInDemo names the activities the demo spec does not run, each with the test that runs it through the node
// wrapper (which checks its row fields).
var notInDemo = map[string]string{
	"rerank_example": "TestRerankExample",
}

// TestNodeRefusesUndeclaredRowFields: a node whose row sets a field its activity does not declare, or a declared
// field with a value of another kind, fails for good with an error naming the instance, step and field; a row of
// declared fields passes.
func TestNodeRefusesUndeclaredRowFields(t *testing.T) {
	f := newFixture(t)
	for i, tc := range []struct {
		row  map[string]any
		want string // "" when the node must succeed
	}{
		{map[string]any{"repo_files": 3}, ""},
		{map[string]any{"repo_files": 3, "repo_fiels": 3}, `"repo_fiels" is not declared by activity checkout`},
		{map[string]any{"repo_files": "many"}, `"repo_files" holds string, but activity checkout declares it int`},
		{map[string]any{"repo_files": 2.5}, `"repo_files" holds float64`},
		{map[string]any{"resolved": true}, `"resolved" is not declared by activity checkout`},
	} {
		in := NodeInput{Run: "t", Instance: f.refs[inst], Node: "rowcheck-" + strconv.Itoa(i), Step: "m.checkout"}
		_, err := f.a.node(context.Background(), in, "checkout", func(context.Context, *job) (NodeOutput, error) {
			return NodeOutput{Row: tc.row}, nil
		})
		if tc.want == "" {
			if err != nil {
				t.Errorf("row %v: %v", tc.row, err)
			}
			continue
		}
		var app *temporal.ApplicationError
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "step m.checkout") ||
			!strings.Contains(err.Error(), inst) {
			t.Errorf("row %v: error %v, want one naming instance %s, step m.checkout and %s", tc.row, err, inst, tc.want)
		} else if !nonRetryable(err) || !asApp(err, &app) || app.Type() != ErrUndeclaredField {
			t.Errorf("row %v: error %v is not a permanent %s", tc.row, err, ErrUndeclaredField)
		}
	}
}

func asApp(err error, app **temporal.ApplicationError) bool { return errors.As(err, app) }

// TestRowKeysInSourceAreDeclared inspects the activities' source: every string literal (or results.Field constant)
// used as a key of a row map (row[...], out.Row[...], a map literal given as a Row) must be a field some activity
// declares. It catches fields written only on paths the demo run does not take (errors, dense retrieval, reruns).
func TestRowKeysInSourceAreDeclared(t *testing.T) {
	fset := token.NewFileSet()
	resultsConsts := constStrings(t, fset, filepath.Join("..", "results", "row.go"))
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	declared := map[string]bool{}
	for _, info := range specs.Catalog {
		for _, fd := range info.Fields {
			declared[fd.Name] = true
		}
	}
	seen := 0
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		local := constAliases(af, resultsConsts)
		keyOf := func(e ast.Expr) (string, bool) {
			switch k := e.(type) {
			case *ast.BasicLit:
				if k.Kind == token.STRING {
					s, err := strconv.Unquote(k.Value)
					return s, err == nil
				}
			case *ast.SelectorExpr:
				if x, ok := k.X.(*ast.Ident); ok && x.Name == "results" {
					s, ok := resultsConsts[k.Sel.Name]
					return s, ok
				}
			case *ast.Ident:
				s, ok := local[k.Name]
				return s, ok
			}
			return "", false
		}
		check := func(e ast.Expr) {
			if name, ok := keyOf(e); ok {
				seen++
				if !declared[name] {
					t.Errorf("%s: row field %q is set but no activity declares it", fset.Position(e.Pos()), name)
				}
			}
		}
		ast.Inspect(af, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.IndexExpr:
				if isRowMap(n.X) {
					check(n.Index)
				}
			case *ast.KeyValueExpr:
				// Row: map[string]any{...}, and the literal a row helper (usageRow, fitRow) returns.
				if id, ok := n.Key.(*ast.Ident); ok && id.Name == "Row" {
					if lit, ok := n.Value.(*ast.CompositeLit); ok {
						for _, el := range lit.Elts {
							check(el.(*ast.KeyValueExpr).Key)
						}
					}
				}
			case *ast.FuncDecl:
				if strings.HasSuffix(n.Name.Name, "Row") && n.Body != nil {
					ast.Inspect(n.Body, func(m ast.Node) bool {
						if lit, ok := m.(*ast.CompositeLit); ok && isStringAnyMap(lit.Type) {
							for _, el := range lit.Elts {
								check(el.(*ast.KeyValueExpr).Key)
							}
						}
						return true
					})
				}
			case *ast.AssignStmt:
				// row := map[string]any{...}
				for i, lhs := range n.Lhs {
					if id, ok := lhs.(*ast.Ident); ok && id.Name == "row" && i < len(n.Rhs) {
						if lit, ok := n.Rhs[i].(*ast.CompositeLit); ok {
							for _, el := range lit.Elts {
								check(el.(*ast.KeyValueExpr).Key)
							}
						}
					}
				}
			}
			return true
		})
	}
	if seen < 50 {
		t.Errorf("found only %d row keys in the activities' source; the inspection has lost track of how rows are written", seen)
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

// constStrings returns the string constants a file declares, by name.
func constStrings(t *testing.T, fset *token.FileSet, path string) map[string]string {
	t.Helper()
	af, err := parser.ParseFile(fset, path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	eachConst(af, func(name string, value ast.Expr) {
		if lit, ok := value.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			out[name], _ = strconv.Unquote(lit.Value)
		}
	})
	if len(out) == 0 {
		t.Fatalf("no string constants in %s", path)
	}
	return out
}

// constAliases returns a file's constants defined as results.Field constants (const fieldX = results.FieldX).
func constAliases(af *ast.File, resultsConsts map[string]string) map[string]string {
	out := map[string]string{}
	eachConst(af, func(name string, value ast.Expr) {
		if sel, ok := value.(*ast.SelectorExpr); ok {
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "results" {
				if v, ok := resultsConsts[sel.Sel.Name]; ok {
					out[name] = v
				}
			}
		}
	})
	return out
}

// eachConst calls f with each constant a file declares with a value of its own, and that value.
func eachConst(af *ast.File, f func(name string, value ast.Expr)) {
	for _, d := range af.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if i < len(vs.Values) {
					f(name.Name, vs.Values[i])
				}
			}
		}
	}
}
