package agent

import (
	"errors"
	"strings"
	"testing"

	"ctxlab/activities/contexts"
	"ctxlab/internal/offlinetask"
)

const goFile = `package calc

// Add adds.
func Add(a, b int) int {
	return a + b
}

func Sub(a, b int) int { return a - b }
`

const pyFile = `import os


def parse_row(line):
    parts = line.split(",")
    return parts


class Table:
    pass
`

// testSnapshot is a small tree with links inside and out of it.
func testSnapshot() Snapshot {
	files := map[string]string{
		"calc/calc.go":      goFile,
		"tabular/rows.py":   pyFile,
		"README.md":         "calc and tabular\n",
		"docs/guide.md":     "see Add\n",
		"calc/calc_test.go": "package calc\n\nfunc TestAdd() { Add(1, 2) }\n",
		"logo.png":          "\x89PNG\x00Add(",
	}
	links := map[string]string{
		"escape":         "../../etc/passwd",
		"abs":            "/etc/passwd",
		"docs/up":        "../..",
		"alias.go":       "calc/calc.go",
		"pkg":            "calc",
		"loop1":          "loop2",
		"loop2":          "loop1",
		"docs/readme.md": "../README.md",
	}
	s := Snapshot{Links: links, Read: func(p string) (string, bool) { t, ok := files[p]; return t, ok }}
	for p := range files {
		s.Paths = append(s.Paths, p)
	}
	for p := range links {
		s.Paths = append(s.Paths, p)
	}
	sortStrings(s.Paths)
	return s
}

func sortStrings(s []string) {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
}

func call(tool string, args map[string]any) offlinetask.AgentCall {
	return offlinetask.AgentCall{Tool: tool, Args: args}
}

func render(r Result) string {
	var b strings.Builder
	for _, l := range r.Lines {
		b.WriteString(l.Text + "\n")
	}
	return b.String()
}

// TestPathsStayInsideTheSnapshot: "..", absolute paths and symlinks that leave the tree are refused by every tool
// that takes a path; links inside the tree are followed.
func TestPathsStayInsideTheSnapshot(t *testing.T) {
	s := testSnapshot()
	attacks := []offlinetask.AgentCall{
		call("open", map[string]any{"path": "../../etc/passwd"}),
		call("open", map[string]any{"path": "calc/../../etc/passwd"}),
		call("open", map[string]any{"path": "calc/../calc/calc.go"}),
		call("open", map[string]any{"path": "/etc/passwd"}),
		call("open", map[string]any{"path": "C:\\Windows\\win.ini"}),
		call("open", map[string]any{"path": "escape"}),
		call("open", map[string]any{"path": "abs"}),
		call("open", map[string]any{"path": "docs/up/etc/passwd"}),
		call("list", map[string]any{"path": "docs/up"}),
		call("list", map[string]any{"path": ".."}),
		call("search", map[string]any{"pattern": "root", "path": "docs/up"}),
	}
	for _, c := range attacks {
		res, err := s.Run(c, Limits{})
		if !errors.Is(err, ErrOutside) {
			t.Errorf("%v: err %v, result %q; want ErrOutside", c.Args, err, render(res))
		}
	}
	if _, err := s.Run(call("open", map[string]any{"path": "loop1"}), Limits{}); err == nil {
		t.Error("a symlink cycle was opened")
	}
	for _, p := range []string{"alias.go", "pkg/calc.go", "./calc/calc.go"} {
		res, err := s.Run(call("open", map[string]any{"path": p}), Limits{})
		if err != nil || !strings.Contains(render(res), "func Add(a, b int) int {") || res.Lines[1].Path != "calc/calc.go" {
			t.Errorf("open %s: %v\n%s", p, err, render(res))
		}
	}
	res, err := s.Run(call("open", map[string]any{"path": "docs/readme.md"}), Limits{})
	if err != nil || !strings.Contains(render(res), "calc and tabular") {
		t.Errorf("a link to a file one folder up, still inside: %v %q", err, render(res))
	}
}

func TestTools(t *testing.T) {
	s := testSnapshot()
	res, err := s.Run(call("search", map[string]any{"pattern": "Add("}), Limits{})
	out := render(res)
	if err != nil || !strings.Contains(out, "calc/calc.go:4: func Add(a, b int) int {") ||
		!strings.Contains(out, "calc/calc_test.go:3:") || strings.Contains(out, "docs/guide.md") {
		t.Errorf("fixed search: %v\n%s", err, out)
	}
	res, err = s.Run(call("search", map[string]any{"pattern": `^func \w+\(a`, "regex": true, "path": "calc"}), Limits{})
	out = render(res)
	if err != nil || !strings.HasPrefix(out, "2 matches") || !strings.Contains(out, "calc/calc.go:8:") {
		t.Errorf("regex search: %v\n%s", err, out)
	}
	if _, err := s.Run(call("search", map[string]any{"pattern": "(", "regex": true}), Limits{}); err == nil {
		t.Error("a bad regex was accepted")
	}
	res, _ = s.Run(call("search", map[string]any{"pattern": "a"}), Limits{MaxHits: 2})
	if got := len(repoLines(res.Lines)); got != 2 || !strings.Contains(render(res), "more matches not shown") {
		t.Errorf("max hits 2: %d hits shown\n%s", got, render(res))
	}

	res, err = s.Run(call("open", map[string]any{"path": "tabular/rows.py", "start": 4, "end": 6}), Limits{})
	lines := repoLines(res.Lines)
	if err != nil || len(lines) != 3 || lines[0].No != 4 || !strings.Contains(lines[0].Text, "def parse_row(line):") {
		t.Errorf("open range: %v\n%s", err, render(res))
	}
	res, _ = s.Run(call("open", map[string]any{"path": "calc/calc.go"}), Limits{MaxLines: 3})
	if len(repoLines(res.Lines)) != 3 || !strings.Contains(render(res), "start=4") {
		t.Errorf("open past max lines:\n%s", render(res))
	}

	res, err = s.Run(call("list", map[string]any{"path": "."}), Limits{})
	out = render(res)
	if err != nil || !strings.Contains(out, "calc/\n") || !strings.Contains(out, "README.md\n") || strings.Contains(out, "calc.go") {
		t.Errorf("list root: %v\n%s", err, out)
	}

	res, err = s.Run(call("definition", map[string]any{"name": "parse_row"}), Limits{})
	lines = repoLines(res.Lines)
	if err != nil || len(lines) != 3 || lines[0].Path != "tabular/rows.py" || lines[0].No != 4 {
		t.Errorf("python definition: %v\n%s", err, render(res))
	}
	res, err = s.Run(call("definition", map[string]any{"name": "calc.Add"}), Limits{})
	if out := render(res); err != nil || !strings.Contains(out, "// Add adds.") || !strings.Contains(out, "return a + b") ||
		strings.Contains(out, "Sub") {
		t.Errorf("go definition: %v\n%s", err, out)
	}
	if _, err := s.Run(call("definition", map[string]any{"name": "Nowhere"}), Limits{}); err == nil {
		t.Error("a missing definition gave no error")
	}
	if _, err := s.Run(call("open", map[string]any{"path": "logo.png"}), Limits{}); err == nil {
		t.Error("a binary file was opened")
	}
	res, _ = s.Run(call("search", map[string]any{"pattern": "Add\\(", "regex": true}), Limits{})
	if out := render(res); strings.Contains(out, "logo.png") || !strings.Contains(out, "calc/calc.go:4:") {
		t.Errorf("regex search over a binary file:\n%s", out)
	}
	if _, err := s.Run(call("rm", nil), Limits{}); err == nil || !strings.Contains(err.Error(), "unknown tool") {
		t.Errorf("unknown tool: %v", err)
	}
}

// TestBudgetCutsAndSeenIsTheContext: output past the budget is cut to whole lines; only the lines kept count as
// seen, and the seen lines become the context with the file's real text.
func TestBudgetCutsAndSeenIsTheContext(t *testing.T) {
	s := testSnapshot()
	res, _ := s.Run(call("open", map[string]any{"path": "calc/calc.go"}), Limits{})
	b := Budget{Tokenizer: "o200k_base"}
	whole, err := b.Show(res)
	if err != nil || whole.Cut || len(whole.Lines) != 8 {
		t.Fatalf("unlimited: %+v %v", whole, err)
	}
	b = Budget{Tokenizer: "o200k_base", Limit: whole.Tokens / 2}
	half, err := b.Show(res)
	if err != nil || !half.Cut || len(half.Lines) == 0 || len(half.Lines) >= 8 || half.Tokens > b.Limit ||
		!strings.Contains(half.Text, "budget spent") {
		t.Fatalf("half budget %d: %+v %v", b.Limit, half, err)
	}
	if !b.Spent() {
		next, _ := b.Show(res)
		if len(next.Lines) != 0 {
			t.Errorf("after the budget, %d lines shown", len(next.Lines))
		}
	}
	seen := Seen{}
	seen.Add(half.Lines)
	def, _ := s.Run(call("definition", map[string]any{"name": "parse_row"}), Limits{})
	seen.Add(def.Lines)
	c := seen.Context("issue", s.Read)
	if len(c.Blocks) != 2 || c.Blocks[0].Path != "calc/calc.go" || c.Blocks[0].Kind != contexts.KindSnippet ||
		c.Blocks[1].Text != "def parse_row(line):\n    parts = line.split(\",\")\n    return parts\n" {
		t.Errorf("context: %+v", c.Blocks)
	}
	if got := SeenFromRanges(seen.Ranges()).Ranges(); len(got["calc/calc.go"]) != 1 || got["calc/calc.go"][0][0] != 1 {
		t.Errorf("ranges round trip: %v", got)
	}
	seen.Add(whole.Lines)
	if c := seen.Context("issue", s.Read); c.Blocks[0].Kind != contexts.KindFile || c.Blocks[0].Text != goFile {
		t.Errorf("a file seen whole: %+v", c.Blocks[0])
	}
}
