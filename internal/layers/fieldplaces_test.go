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
	"slices"
	"strconv"
	"strings"
	"testing"

	"ctxlab/specs"
)

// maxFieldReaders is how many files may read a row field by its handle besides its declaration (package specs)
// and the step that sets it (the packages that call its Set or SetPtr): a field is named in at most 4 places
// (declaration, step, two readers). Readers that present fields (summaries, reports, the grade command's row)
// iterate over the declarations instead.
const maxFieldReaders = 2

// fieldReadersAllowed are the fields more readers need by handle, with why. Keep it short: a field here is one
// whose meaning a reader cannot get from a declaration's attributes.
var fieldReadersAllowed = map[string]string{
	"grade_status": "the grade's verdict in words: report.html's grade column, the audit export's note of why no " +
		"test ran, and starter grade's log and validation lines each print it",
	"patch_ref": "the reference to the patch a row graded: the predictions export, report.html and starter's " +
		"row objects (the report's drill-down and the audit export) each open the patch by it",
}

// TestRowFieldPlaces fails for a declared row field (specs.Catalog) named, by its handle or its name, in more than
// maxFieldReaders non-test files besides its declaration and the steps that set it (the packages with a file that
// calls its Set or SetPtr: a step's helpers in its package are the step), unless fieldReadersAllowed says why. It logs every field's places (go test -v -run TestRowFieldPlaces
// ./internal/layers prints the table docs/development.md quotes).
func TestRowFieldPlaces(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	root := strings.TrimSpace(string(out))
	places, err := rowFieldPlaces(root)
	if err != nil {
		t.Fatal(err)
	}
	declared := map[string]bool{}
	for _, info := range specs.Catalog {
		for _, f := range info.Fields {
			declared[f.Name] = true
		}
	}
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range declared {
			if !yield(n) {
				return
			}
		}
	}) {
		p, ok := places[name]
		if !ok {
			t.Errorf("row field %q: no handle found in package specs (declare it as IntField(%q), ...)", name, name)
			continue
		}
		t.Logf("%-26s %d places: specs, steps %v, readers %v", name, p.count(), p.steps, p.readers)
		if why, ok := fieldReadersAllowed[name]; len(p.readers) > maxFieldReaders && !ok {
			t.Errorf("row field %q is read by handle in %d files %v, at most %d may: derive the reader from the "+
				"field's declaration (specs.RowField's attributes) or say in fieldReadersAllowed why it needs it",
				name, len(p.readers), p.readers, maxFieldReaders)
		} else if ok && len(p.readers) <= maxFieldReaders {
			t.Errorf("fieldReadersAllowed: %q (%s) has %d readers, within the limit: take it off", name, why,
				len(p.readers))
		}
	}
	for name := range fieldReadersAllowed {
		if !declared[name] {
			t.Errorf("fieldReadersAllowed: %q is no declared row field", name)
		}
	}
}

// fieldPlace are the non-test files naming one row field outside package specs: the steps that set it by its
// handle (package folders), and every file of another package naming its handle or its name (in a literal that
// fieldLiteralsAllowed does not excuse).
type fieldPlace struct{ steps, readers []string }

// count is the field's places: its declaration, its steps and its readers.
func (p fieldPlace) count() int { return 1 + len(p.steps) + len(p.readers) }

// rowFieldPlaces finds, under root, each row field handle package specs declares (Rho = FloatField("rho")...) and
// the non-test files outside specs that name it, by field name.
func rowFieldPlaces(root string) (map[string]fieldPlace, error) {
	handles, err := fieldHandles(filepath.Join(root, "specs"))
	if err != nil {
		return nil, err
	}
	byName := map[string]bool{}
	for _, name := range handles {
		byName[name] = true
	}
	type fileUses struct {
		path, dir  string
		sets, name map[string]bool
	}
	var files []fileUses
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || rel == "specs") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		sets, named := handleUses(f, handles)
		for _, lit := range stringLiterals(f) {
			if s, err := strconv.Unquote(lit.Value); err == nil && byName[s] {
				if _, ok := fieldLiteralsAllowed[rel+": "+s]; !ok {
					named[s] = true
				}
			}
		}
		files = append(files, fileUses{rel, filepath.ToSlash(filepath.Dir(rel)), sets, named})
		return nil
	})
	if err != nil {
		return nil, err
	}
	places := map[string]fieldPlace{}
	for _, name := range handles {
		p := fieldPlace{}
		for _, f := range files {
			if f.sets[name] && !slices.Contains(p.steps, f.dir) {
				p.steps = append(p.steps, f.dir)
			}
		}
		for _, f := range files {
			if f.name[name] && !slices.Contains(p.steps, f.dir) {
				p.readers = append(p.readers, f.path)
			}
		}
		places[name] = p
	}
	return places, nil
}

// fieldHandles maps each package-level variable of the non-test files in dir that a field declarer's call makes
// (also through methods chained on it: FloatField("rho").Required()) to its field's name.
func fieldHandles(dir string) (map[string]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	fset := token.NewFileSet()
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, decl := range f.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != token.VAR {
				continue
			}
			for _, spec := range gen.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, id := range vs.Names {
					if i < len(vs.Values) {
						if name, ok := declaredName(vs.Values[i]); ok {
							out[id.Name] = name
						}
					}
				}
			}
		}
	}
	if len(out) < 50 {
		return nil, fmt.Errorf("only %d row field handles found in %s", len(out), dir)
	}
	return out, nil
}

// declaredName is the literal a field declarer's call at the root of a method chain names.
func declaredName(e ast.Expr) (string, bool) {
	for {
		call, ok := e.(*ast.CallExpr)
		if !ok {
			return "", false
		}
		switch fn := call.Fun.(type) {
		case *ast.Ident:
			if !slices.Contains(fieldDeclarers, fn.Name) || len(call.Args) != 1 {
				return "", false
			}
			lit, ok := call.Args[0].(*ast.BasicLit)
			if !ok {
				return "", false
			}
			s, err := strconv.Unquote(lit.Value)
			return s, err == nil
		case *ast.SelectorExpr:
			e = fn.X
		default:
			return "", false
		}
	}
}

// handleUses returns the fields whose handles a file names (specs.Rho), and those it sets (specs.Rho.Set(...),
// specs.Rho.SetPtr(...)), by field name.
func handleUses(f *ast.File, handles map[string]string) (sets, named map[string]bool) {
	sets, named = map[string]bool{}, map[string]bool{}
	pkg := ""
	for _, imp := range f.Imports {
		if imp.Path.Value == `"ctxlab/specs"` {
			pkg = "specs"
			if imp.Name != nil {
				pkg = imp.Name.Name
			}
		}
	}
	if pkg == "" {
		return sets, named
	}
	handle := func(e ast.Expr) (string, bool) {
		sel, ok := e.(*ast.SelectorExpr)
		if !ok {
			return "", false
		}
		if x, ok := sel.X.(*ast.Ident); !ok || x.Name != pkg {
			return "", false
		}
		name, ok := handles[sel.Sel.Name]
		return name, ok
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if name, ok := handle(n); ok {
				named[name] = true
			}
		case *ast.CallExpr:
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok && (sel.Sel.Name == "Set" || sel.Sel.Name == "SetPtr") {
				if name, ok := handle(sel.X); ok {
					sets[name] = true
				}
			}
		}
		return true
	})
	return sets, named
}

func TestRowFieldPlacesTellsStepsFromReaders(t *testing.T) {
	dir := t.TempDir()
	specsSrc := "package specs\n\nvar (\n\tRho = FloatField(\"rho\").Required()\n\tEps = FloatField(\"epsilon\")\n)\n"
	for i := range 50 { // fieldHandles refuses a folder with fewer than 50 handles: the scan lost them
		specsSrc += fmt.Sprintf("var F%d = IntField(\"f%d\")\n", i, i)
	}
	files := map[string]string{
		"specs/fields.go": specsSrc,
		"step/step.go": "package step\n\nimport \"ctxlab/specs\"\n\nfunc set(row map[string]any) {\n" +
			"\tspecs.Rho.Set(row, 1)\n\t_ = specs.Eps.Name\n}\n",
		"step/helper.go":    "package step\n\nimport \"ctxlab/specs\"\n\nvar h = specs.Rho.Name\n",
		"read/read.go":      "package read\n\nimport s \"ctxlab/specs\"\n\nvar x = s.Rho.Name\n",
		"read/literal.go":   "package read\n\nvar y = \"epsilon\"\n",
		"read/read_test.go": "package read\n\nimport \"ctxlab/specs\"\n\nvar z = specs.Rho.Name\n",
	}
	for path, src := range files {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(path)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := writeFile(filepath.Join(dir, path), src); err != nil {
			t.Fatal(err)
		}
	}
	places, err := rowFieldPlaces(dir)
	if err != nil {
		t.Fatal(err)
	}
	if p := places["rho"]; !slices.Equal(p.steps, []string{"step"}) ||
		!slices.Equal(p.readers, []string{"read/read.go"}) || p.count() != 3 {
		t.Errorf("rho: steps %v readers %v, want step and read/read.go (3 places)", p.steps, p.readers)
	}
	if p := places["epsilon"]; len(p.steps) != 0 || !slices.Equal(p.readers, []string{"read/literal.go", "step/step.go"}) {
		t.Errorf("epsilon: steps %v readers %v, want readers read/literal.go and step/step.go", p.steps, p.readers)
	}
}
