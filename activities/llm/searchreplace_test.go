package llm

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"ctxlab/patch/diff"
)

var srFiles = map[string]string{
	"calc/calc.go": "package calc\n\n// Add adds.\nfunc Add(a, b int) int {\n\treturn a - b\n}\n\n// Sub subtracts.\nfunc Sub(a, b int) int {\n\treturn a - b\n}\n",
	"app/main.py":  "import sys\n\n\ndef main():\n    if len(sys.argv) > 1:\n        print(sys.argv[1])\n    return 0\n",
	"notes.txt":    "no newline at end",
}

func readSR(p string) (string, bool) {
	s, ok := srFiles[p]
	return s, ok
}

// applied applies d to srFiles with patch/diff and returns the changed files' new text.
func applied(t *testing.T, d string) map[string]string {
	t.Helper()
	out, err := diff.ApplyFiles(func(p string) ([]byte, bool) {
		s, ok := srFiles[p]
		if !ok {
			return nil, false
		}
		return []byte(s), true
	}, d)
	if err != nil {
		t.Fatalf("the produced diff does not apply: %v\n%s", err, d)
	}
	res := map[string]string{}
	for p, b := range out {
		res[p] = string(b)
	}
	return res
}

func TestParseSearchReplace(t *testing.T) {
	text := "I'll fix Add.\n\ncalc/calc.go\n```go\n<<<<<<< SEARCH\n\treturn a - b\n}\n\n// Sub subtracts.\n=======\n\treturn a + b\n}\n\n// Sub subtracts.\n>>>>>>> REPLACE\n```\n\n" +
		"### File: `app/main.py`\n```python\n<<<<<<< SEARCH\n    return 0\n=======\n    return 1\n>>>>>>> REPLACE\n```\n" +
		"```python\n<<<<<<< SEARCH\nimport sys\n=======\nimport os\nimport sys\n>>>>>>> REPLACE\n```\n"
	got, err := ParseSearchReplace(text)
	if err != nil {
		t.Fatal(err)
	}
	want := []Replace{
		{Path: "calc/calc.go", Search: "\treturn a - b\n}\n\n// Sub subtracts.\n", Replace: "\treturn a + b\n}\n\n// Sub subtracts.\n"},
		{Path: "app/main.py", Search: "    return 0\n", Replace: "    return 1\n"},
		{Path: "app/main.py", Search: "import sys\n", Replace: "import os\nimport sys\n"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v\nwant %#v", got, want)
	}

	if _, err := ParseSearchReplace("Nothing to change."); !errors.Is(err, ErrNoDiff) {
		t.Errorf("no blocks: %v, want ErrNoDiff", err)
	}
	for _, bad := range []string{
		"<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n",      // no path
		"a.go\n<<<<<<< SEARCH\nx\n>>>>>>> REPLACE\n",            // no divider
		"a.go\n<<<<<<< SEARCH\nx\n=======\ny\n",                 // no end
		"a.go\n<<<<<<< SEARCH\nx\n=======\ny\n<<<<<<< SEARCH\n", // a new block before the end
	} {
		_, err := ParseSearchReplace(bad)
		if err == nil || errors.Is(err, ErrNoDiff) || !strings.Contains(err.Error(), "block 1") {
			t.Errorf("%q: error %v should name block 1", bad, err)
		}
	}
}

func TestSearchReplaceDiff(t *testing.T) {
	cases := []struct {
		name   string
		blocks []Replace
		want   map[string]string
	}{
		{"exact match", []Replace{{"calc/calc.go", "func Add(a, b int) int {\n\treturn a - b\n", "func Add(a, b int) int {\n\treturn a + b\n"}},
			map[string]string{"calc/calc.go": strings.Replace(srFiles["calc/calc.go"], "a - b", "a + b", 1)}},
		{"whitespace-tolerant, reindented", []Replace{{"app/main.py", "if len(sys.argv) > 1:\n    print(sys.argv[1])\n", "if len(sys.argv) > 2:\n    print(sys.argv[2])\n"}},
			map[string]string{"app/main.py": "import sys\n\n\ndef main():\n    if len(sys.argv) > 2:\n        print(sys.argv[2])\n    return 0\n"}},
		{"trailing spaces in the search", []Replace{{"app/main.py", "import sys   \n", "import os\n"}},
			map[string]string{"app/main.py": strings.Replace(srFiles["app/main.py"], "import sys", "import os", 1)}},
		{"two blocks on one file, then a new file", []Replace{
			{"app/main.py", "    return 0\n", "    return 1\n"},
			{"app/main.py", "import sys\n", "import os\nimport sys\n"},
			{"app/util.py", "", "def helper():\n    pass\n"}},
			map[string]string{"app/main.py": "import os\nimport sys\n\n\ndef main():\n    if len(sys.argv) > 1:\n        print(sys.argv[1])\n    return 1\n",
				"app/util.py": "def helper():\n    pass\n"}},
		{"a/ prefix resolved", []Replace{{"a/calc/calc.go", "// Sub subtracts.\n", "// Sub subtracts b from a.\n"}},
			map[string]string{"calc/calc.go": strings.Replace(srFiles["calc/calc.go"], "// Sub subtracts.", "// Sub subtracts b from a.", 1)}},
		{"file without final newline", []Replace{{"notes.txt", "no newline at end\n", "still no newline\n"}},
			map[string]string{"notes.txt": "still no newline"}},
		{"empty search appends", []Replace{{"notes.txt", "", "second line\n"}},
			map[string]string{"notes.txt": "no newline at end\nsecond line\n"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := SearchReplaceDiff(c.blocks, readSR)
			if err != nil {
				t.Fatal(err)
			}
			got := applied(t, d)
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("after applying\n%s\ngot %q\nwant %q", d, got, c.want)
			}
		})
	}
}

func TestSearchReplaceDiffErrors(t *testing.T) {
	cases := []struct {
		name   string
		blocks []Replace
		want   []string // substrings of the error
	}{
		{"not found", []Replace{{"calc/calc.go", "// Add adds.\n", "// Add sums.\n"}, {"calc/calc.go", "func Mul(", "func Times("}},
			[]string{"block 2", "calc/calc.go", "not in the file", "func Mul("}},
		{"ambiguous exact", []Replace{{"calc/calc.go", "\treturn a - b\n", "\treturn 0\n"}},
			[]string{"block 1", "calc/calc.go", "occurs 2 times"}},
		{"ambiguous loose", []Replace{{"calc/calc.go", "  return a - b  \n", "\treturn 0\n"}},
			[]string{"block 1", "matches 2 places"}},
		{"missing file", []Replace{{"nope/x.go", "a\n", "b\n"}},
			[]string{"block 1", "nope/x.go does not exist"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := SearchReplaceDiff(c.blocks, readSR)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
	if _, err := SearchReplaceDiff([]Replace{{"calc/calc.go", "// Add adds.\n", "// Add adds.\n"}}, readSR); !errors.Is(err, ErrNoDiff) {
		t.Errorf("a no-op block: %v, want ErrNoDiff", err)
	}
}

// TestSearchReplaceEndToEnd parses an answer and applies its diff.
func TestSearchReplaceEndToEnd(t *testing.T) {
	answer := "The subtraction in Add is wrong.\n\n```\ncalc/calc.go\n<<<<<<< SEARCH\n// Add adds.\nfunc Add(a, b int) int {\n\treturn a - b\n=======\n// Add adds.\nfunc Add(a, b int) int {\n\treturn a + b\n>>>>>>> REPLACE\n```\n"
	blocks, err := ParseSearchReplace(answer)
	if err != nil {
		t.Fatal(err)
	}
	d, err := SearchReplaceDiff(blocks, readSR)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(d, "diff --git a/calc/calc.go b/calc/calc.go\n") {
		t.Errorf("diff header: %q", d)
	}
	got := applied(t, d)["calc/calc.go"]
	want := "package calc\n\n// Add adds.\nfunc Add(a, b int) int {\n\treturn a + b\n}\n\n// Sub subtracts.\nfunc Sub(a, b int) int {\n\treturn a - b\n}\n"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestSearchReplaceDiffKeepsCRLFAndRefusesEscapes(t *testing.T) {
	files := map[string]string{"w.txt": "one\r\ntwo\r\nthree\r\n"}
	read := func(p string) (string, bool) { s, ok := files[p]; return s, ok }
	d, err := SearchReplaceDiff([]Replace{{"w.txt", "two\n", "2\nand a half\n"}}, read)
	if err != nil {
		t.Fatal(err)
	}
	out, err := diff.ApplyFiles(func(p string) ([]byte, bool) { s, ok := files[p]; return []byte(s), ok }, d)
	if err != nil {
		t.Fatalf("%v\n%s", err, d)
	}
	if got := string(out["w.txt"]); got != "one\r\n2\r\nand a half\r\nthree\r\n" {
		t.Errorf("got %q", got)
	}
	for _, p := range []string{"../etc/passwd", "/abs.go", "a/../../x", ".git/config", ""} {
		_, err := SearchReplaceDiff([]Replace{{p, "", "x\n"}}, read)
		if err == nil || !strings.Contains(err.Error(), "block 1") {
			t.Errorf("path %q: error %v", p, err)
		}
	}
}
