package layers

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// maxFunctionLines is the longest a non-test function (its declaration through its closing brace, closures inside
// it included) may be: past it, a function mixes steps that read better as functions of their own.
const maxFunctionLines = 80

// TestNoLongFunctions fails for every non-test function of the module over maxFunctionLines.
func TestNoLongFunctions(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	root := strings.TrimSpace(string(out))
	long, err := longFunctions(root, maxFunctionLines)
	if err != nil {
		t.Fatal(err)
	}
	for name, lines := range long {
		t.Errorf("%s is %d lines (at most %d): split it", name, lines, maxFunctionLines)
	}
}

// longFunctions returns the non-test functions under root longer than limit lines, by "path: name" (path relative
// to root, name Type.Method for methods).
func longFunctions(root string, limit int) (map[string]int, error) {
	long := map[string]int{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			if n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1; n > limit {
				long[fmt.Sprintf("%s: %s", filepath.ToSlash(rel), funcName(fn))] = n
			}
		}
		return nil
	})
	return long, err
}

// funcName is fn's name, with its receiver's type for a method.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	t := fn.Recv.List[0].Type
	if star, ok := t.(*ast.StarExpr); ok {
		t = star.X
	}
	if idx, ok := t.(*ast.IndexExpr); ok { // a generic receiver
		t = idx.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fn.Name.Name
	}
	return fn.Name.Name
}

func TestLongFunctionsCountsWholeDeclarations(t *testing.T) {
	dir := t.TempDir()
	body := "package p\n\nfunc short() {}\n\nfunc (r *T) long() {\n" + strings.Repeat("\t_ = 1\n", 10) + "}\n\ntype T struct{}\n"
	if err := writeFile(filepath.Join(dir, "p.go"), body); err != nil {
		t.Fatal(err)
	}
	if err := writeFile(filepath.Join(dir, "p_test.go"), "package p\n\nfunc longTest() {\n"+strings.Repeat("\t_ = 1\n", 20)+"}\n"); err != nil {
		t.Fatal(err)
	}
	long, err := longFunctions(dir, 11)
	if err != nil {
		t.Fatal(err)
	}
	if len(long) != 1 || long["p.go: T.long"] != 12 {
		t.Errorf("long functions %v, want only p.go: T.long of 12 lines", long)
	}
}

func writeFile(path, text string) error { return os.WriteFile(path, []byte(text), 0o644) }
