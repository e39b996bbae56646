package search

import (
	"strings"
	"testing"
)

const goFile = `package calc

import "fmt"

// Add adds two numbers.
// It is documented on two lines.
func Add(a, b int) int {
	return a + b
}

type Acc struct{ n int }

// Push adds to the accumulator.
func (a *Acc) Push(x int) {
	a.n = Add(a.n, x)
	fmt.Println(a.n)
}

var limit = 10
`

func TestGoSnippetIsEnclosingDeclarationWithDoc(t *testing.T) {
	hits := Grep([]File{{Path: "calc.go", Text: goFile}}, []string{"Add("})
	if len(hits) != 2 || hits[0].Line != 7 || hits[1].Line != 15 {
		t.Fatalf("hits %+v", hits)
	}
	s := Around("calc.go", goFile, 15, 3)
	if s.Kind != "definition" || s.Name != "Acc.Push" || s.Start != 13 || s.End != 17 {
		t.Errorf("snippet %+v", s)
	}
	if !strings.HasPrefix(s.Text, "// Push adds") || !strings.HasSuffix(s.Text, "}\n") {
		t.Errorf("snippet text %q", s.Text)
	}
	s = Around("calc.go", goFile, 8, 3)
	if s.Name != "Add" || s.Start != 5 || s.End != 9 {
		t.Errorf("Add snippet %+v", s)
	}
	// Outside any declaration (the import line is a GenDecl; a blank line between declarations is not).
	s = Around("calc.go", goFile, 10, 2)
	if s.Kind != "window" || s.Start != 8 || s.End != 12 {
		t.Errorf("window %+v", s)
	}
	// A file that does not parse falls back to a window.
	s = Around("bad.go", "package x\nfunc {{{\n", 2, 5)
	if s.Kind != "window" {
		t.Errorf("unparseable file: %+v", s)
	}
}

const pyFile = `import os


@cached
def load(path,
         mode="r"):
    """Load a file."""
    with open(path, mode) as f:

        return f.read()


class Store:
    root = "/tmp"

    def get(self, key):
        p = os.path.join(self.root, key)
        return load(p)

    def put(self, key, value):
        pass


MAX = 3
`

func TestPythonSnippetIsEnclosingDefinition(t *testing.T) {
	lines := strings.Split(pyFile, "\n")
	find := func(s string) int {
		for i, l := range lines {
			if strings.Contains(l, s) {
				return i + 1
			}
		}
		t.Fatalf("%q not in file", s)
		return 0
	}
	// A hit in a function body (after a blank line inside it) gives the function with its decorator.
	s := Around("m.py", pyFile, find("return f.read()"), 2)
	if s.Kind != "definition" || s.Name != "load" || s.Start != find("@cached") || s.End != find("return f.read()") {
		t.Errorf("load snippet %+v", s)
	}
	// A hit in a method gives the method, not the whole class.
	s = Around("m.py", pyFile, find("return load(p)"), 2)
	if s.Name != "get" || s.Start != find("def get") || s.End != find("return load(p)") {
		t.Errorf("method snippet %+v", s)
	}
	// A hit in a class body outside methods gives the class.
	s = Around("m.py", pyFile, find(`root = "/tmp"`), 2)
	if s.Name != "Store" || s.Start != find("class Store") || s.End != find("pass") {
		t.Errorf("class snippet %+v", s)
	}
	// Module-level code gives a window.
	s = Around("m.py", pyFile, find("MAX = 3"), 2)
	if s.Kind != "window" {
		t.Errorf("module-level snippet %+v", s)
	}
}

func TestGrepSkipsBinaryAndEmptyPatterns(t *testing.T) {
	files := []File{{Path: "a.bin", Text: "needle\x00"}, {Path: "b.txt", Text: "x\nneedle here\n"}}
	hits := Grep(files, []string{"", "needle"})
	if len(hits) != 1 || hits[0].Path != "b.txt" || hits[0].Line != 2 {
		t.Errorf("hits %+v", hits)
	}
	if Grep(files, []string{""}) != nil {
		t.Error("an empty pattern matched")
	}
}

func TestDefinesName(t *testing.T) {
	for line, want := range map[string]bool{
		"func Parse(s string) error {": true, "func (p *Parser) Parse(s string) {": true, "type Parse struct{}": true,
		"def Parse(self):": true, "class Parse:": true, "x := Parse(s)": false, "// Parse parses": false,
	} {
		if got := DefinesName(line, "Parse"); got != want {
			t.Errorf("DefinesName(%q) = %v", line, got)
		}
	}
}
