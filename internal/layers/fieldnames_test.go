package layers

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"ctxlab/specs"
)

// fieldLiteralsAllowed are the string literals, as "path: literal", that spell a declared row field's name but
// mean something else, with why.
var fieldLiteralsAllowed = map[string]string{
	"grading/decide.go: resolved":                     "a grade_status value (StatusResolved)",
	"grading/decide.go: tests_missing":                "a grade_status value (StatusTestsMissing)",
	"testkit/fakeopenai/server.go: prompt_tokens":     "the OpenAI wire format the fake serves",
	"testkit/fakeopenai/server.go: completion_tokens": "the OpenAI wire format the fake serves",
	"testkit/fakeopenai/server.go: cached_tokens":     "the OpenAI wire format the fake serves",
	"testkit/fakeopenai/embeddings.go: prompt_tokens": "the OpenAI wire format the fake serves",
	"results/report/tables.go: resolved":              "a table's column heading",
	"results/report/tables.go: tokenizer":             "a table's column heading",
	"results/report/budgettruth.go: tokenizer":        "a table's column heading",
	"specs/plan.go: tokenizer":                        "the parameter UsesTokenizer kinds get",
	"specs/validate.go: tokenizer":                    "the experiment's tokenizer setting, named in its error",
}

// fieldLiteralsSkipped are files and folders (ending in "/") not inspected yet, with why.
var fieldLiteralsSkipped = map[string]string{}

// fieldDeclarers are the specs functions that declare a row field: their literal argument is the declaration.
var fieldDeclarers = []string{"IntField", "FloatField", "StringField", "BoolField", "ListField"}

// TestRowFieldNamesAreSpelledOnce fails for every string literal in a non-test file of the module that spells a row
// field a kind declares (specs.Catalog), other than its declaration (specs' IntField("rho"), ...), struct tags
// aside: readers and steps name a field by its handle (specs.Rho.Name, specs.Rho.Get(row)). It fails too for a
// declared field without exactly one declaration, and for an allowance that matches nothing any more.
func TestRowFieldNamesAreSpelledOnce(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	root := strings.TrimSpace(string(out))
	declared := map[string]bool{}
	for _, info := range specs.Catalog {
		for _, f := range info.Fields {
			declared[f.Name] = true
		}
	}
	if len(declared) < 50 {
		t.Fatalf("only %d row fields declared in specs.Catalog: the catalog has lost track of them", len(declared))
	}
	found, err := fieldLiterals(root, declared)
	if err != nil {
		t.Fatal(err)
	}
	for name := range declared {
		if n := len(found.declarations[name]); n != 1 {
			t.Errorf("row field %q has %d declarations (%s), want one: a specs handle such as "+
				"FloatField(%q)", name, n, strings.Join(found.declarations[name], ", "), name)
		}
	}
	for key, places := range found.literals {
		if _, ok := fieldLiteralsAllowed[key]; !ok {
			path, name, _ := strings.Cut(key, ": ")
			t.Errorf("%s spells row field %q as a literal (%s): use its specs handle's Name", path, name,
				strings.Join(places, ", "))
		}
	}
	for key := range fieldLiteralsAllowed {
		if _, ok := found.literals[key]; !ok {
			t.Errorf("fieldLiteralsAllowed: %s matches no literal any more: take it off", key)
		}
	}
}

// fieldUses are the declared fields' names found in source: declarations by name, and other literals by
// "path: name", each with its positions.
type fieldUses struct {
	declarations map[string][]string
	literals     map[string][]string
}

// fieldLiterals inspects the non-test Go files under root, but those fieldLiteralsSkipped names, for string
// literals (struct tags aside) that equal a name in declared.
func fieldLiterals(root string, declared map[string]bool) (fieldUses, error) {
	uses := fieldUses{declarations: map[string][]string{}, literals: map[string][]string{}}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || skipped(rel) {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		decls := declarations(f)
		for _, lit := range stringLiterals(f) {
			s, err := strconv.Unquote(lit.Value)
			if err != nil || !declared[s] {
				continue
			}
			pos := fset.Position(lit.Pos())
			at := fmt.Sprintf("%s:%d", rel, pos.Line)
			if decls[lit] {
				uses.declarations[s] = append(uses.declarations[s], at)
			} else {
				key := rel + ": " + s
				uses.literals[key] = append(uses.literals[key], at)
			}
		}
		return nil
	})
	return uses, err
}

// skipped reports whether fieldLiteralsSkipped names the file or a folder holding it (directly).
func skipped(rel string) bool {
	if _, ok := fieldLiteralsSkipped[rel]; ok {
		return true
	}
	dir := filepath.ToSlash(filepath.Dir(rel)) + "/"
	_, ok := fieldLiteralsSkipped[dir]
	return ok
}

// stringLiterals returns a file's string literals, struct tags left out.
func stringLiterals(f *ast.File) []*ast.BasicLit {
	tags := map[*ast.BasicLit]bool{}
	var lits []*ast.BasicLit
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Field:
			if n.Tag != nil {
				tags[n.Tag] = true
			}
		case *ast.BasicLit:
			if n.Kind == token.STRING && !tags[n] {
				lits = append(lits, n)
			}
		}
		return true
	})
	return lits
}

// declarations returns the literals that are the argument of a field declarer's call (IntField("rho")).
func declarations(f *ast.File) map[*ast.BasicLit]bool {
	out := map[*ast.BasicLit]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || len(call.Args) != 1 {
			return true
		}
		if id, ok := call.Fun.(*ast.Ident); ok && slices.Contains(fieldDeclarers, id.Name) {
			if lit, ok := call.Args[0].(*ast.BasicLit); ok {
				out[lit] = true
			}
		}
		return true
	})
	return out
}

func TestFieldLiteralsFindsLiteralsButTagsAndDeclarations(t *testing.T) {
	dir := t.TempDir()
	src := "package p\n\ntype T struct {\n\tRho float64 `json:\"rho\"`\n}\n\nvar Rho = FloatField(\"rho\")\n\n" +
		"func read(row map[string]any) any { return row[\"rho\"] }\n"
	if err := writeFile(filepath.Join(dir, "p.go"), src); err != nil {
		t.Fatal(err)
	}
	if err := writeFile(filepath.Join(dir, "p_test.go"), "package p\n\nvar x = \"rho\"\n"); err != nil {
		t.Fatal(err)
	}
	uses, err := fieldLiterals(dir, map[string]bool{"rho": true})
	if err != nil {
		t.Fatal(err)
	}
	if got := uses.declarations["rho"]; !slices.Equal(got, []string{"p.go:7"}) {
		t.Errorf("declarations of rho %v, want [p.go:7]", got)
	}
	if got := uses.literals["p.go: rho"]; len(uses.literals) != 1 || !slices.Equal(got, []string{"p.go:9"}) {
		t.Errorf("literals %v, want only p.go: rho at p.go:9", uses.literals)
	}
}
