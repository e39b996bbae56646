package llm

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

var repoPaths = map[string]bool{
	"pkg/parse/parser.go": true, "pkg/parse/parser_test.go": true, "cmd/tool/main.go": true, "README.md": true,
	"a/b.go": true, "src/app/views.py": true, "src/app/models.py": true, "Makefile": true, "docs/guide.md": true,
	"internal/x_y/z.go": true,
}

func known(p string) bool { return repoPaths[p] }

func TestParseRankedPaths(t *testing.T) {
	cases := []struct {
		name string
		text string
		want []string
	}{
		{"numbered with dots", "1. pkg/parse/parser.go\n2. cmd/tool/main.go\n3. README.md",
			[]string{"pkg/parse/parser.go", "cmd/tool/main.go", "README.md"}},
		{"numbered with parens and reasons", "1) cmd/tool/main.go (entry point, calls pkg/parse/parser.go)\n2) pkg/parse/parser.go - the parser",
			[]string{"cmd/tool/main.go", "pkg/parse/parser.go"}},
		{"bullets of every kind", "- src/app/views.py\n* src/app/models.py\n• Makefile\n+ docs/guide.md",
			[]string{"src/app/views.py", "src/app/models.py", "Makefile", "docs/guide.md"}},
		{"fenced block with prose around", "Sure! Here are the files, most relevant first:\n\n```\nsrc/app/models.py\nsrc/app/views.py\n```\n\nThe views file also mentions README.md but needs no change.",
			[]string{"src/app/models.py", "src/app/views.py"}},
		{"backticks and bold", "1. **`pkg/parse/parser.go`**: where quotes are dropped\n2. `cmd/tool/main.go`",
			[]string{"pkg/parse/parser.go", "cmd/tool/main.go"}},
		{"quotes and a JSON array", `["src/app/views.py", "src/app/models.py", 'README.md']`,
			[]string{"src/app/views.py", "src/app/models.py", "README.md"}},
		{"diff prefixes", "- a/pkg/parse/parser.go\n- b/cmd/tool/main.go\n--- a/README.md\n+++ b/README.md",
			[]string{"pkg/parse/parser.go", "cmd/tool/main.go", "README.md"}},
		{"a real directory named a", "1. a/b.go\n2. a/README.md", []string{"a/b.go", "README.md"}},
		{"dot-slash and line suffixes", "1. ./pkg/parse/parser.go:123\n2. ./cmd/tool/main.go:10:5\n3. src/app/views.py#L40-L52\n4. README.md:",
			[]string{"pkg/parse/parser.go", "cmd/tool/main.go", "src/app/views.py", "README.md"}},
		{"several paths on one line in order", "Edit `cmd/tool/main.go`, `pkg/parse/parser.go` and docs/guide.md.",
			[]string{"cmd/tool/main.go", "pkg/parse/parser.go", "docs/guide.md"}},
		{"unknown paths dropped, duplicates kept once", "1. pkg/parse/lexer.go\n2. pkg/parse/parser.go\n3. pkg/parse/parser.go\n4. vendor/x.go\n5. cmd/tool/main.go",
			[]string{"pkg/parse/parser.go", "cmd/tool/main.go"}},
		{"absolute checkout paths", "1. /testbed/src/app/views.py\n2. /repo/pkg/parse/parser.go",
			[]string{"src/app/views.py", "pkg/parse/parser.go"}},
		{"prose only", "I believe the bug is in pkg/parse/parser.go; the test pkg/parse/parser_test.go should cover it.",
			[]string{"pkg/parse/parser.go", "pkg/parse/parser_test.go"}},
		{"prose ignored once a list exists", "The issue mentions README.md, but the real files are:\n1. src/app/models.py\n2. src/app/views.py",
			[]string{"src/app/models.py", "src/app/views.py"}},
		{"markdown heading and table", "## Files\n| rank | file |\n|---|---|\n| 1 | src/app/views.py |\n| 2 | Makefile |",
			[]string{"src/app/views.py", "Makefile"}},
		{"crlf, blockquote and windows separators", "> 1. pkg\\parse\\parser.go\r\n> 2. cmd/tool/main.go\r\n",
			[]string{"pkg/parse/parser.go", "cmd/tool/main.go"}},
		{"underscore in directory, trailing period", "The fix goes in internal/x_y/z.go.", []string{"internal/x_y/z.go"}},
		{"nothing usable", "I am not sure which files are involved.", []string{}},
		{"empty", "", []string{}},
		{"urls are not paths", "See https://example.com/src/app/views.py\n", []string{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := ParseRankedPaths(c.text, known)
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestParseRankedPathsWithoutKnown(t *testing.T) {
	got := ParseRankedPaths("Files:\n1. lib/a.py (core)\n2. `b/c.rs`\n3. the end\n4. v1.2\n5. Makefile", nil)
	want := []string{"lib/a.py", "b/c.rs"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestParseSearchPlan(t *testing.T) {
	cases := []struct {
		name     string
		text     string
		max, per int
		want     []Search
	}{
		{"plain object", `{"searches": [{"kind": "definition", "strings": ["ParseArgs", "Config"]}, {"kind": "callers", "strings": ["ParseArgs"]}]}`, 4, 8,
			[]Search{{"definition", []string{"ParseArgs", "Config"}}, {"callers", []string{"ParseArgs"}}}},
		{"fenced with prose", "I will look for these.\n```json\n{\"searches\": [{\"kind\": \"string\", \"strings\": [\"invalid header\"]}]}\n```\nThen decide.", 4, 8,
			[]Search{{"string", []string{"invalid header"}}}},
		{"bare array, aliases and unknown kinds", `[{"type": "usages", "queries": ["open_file"]}, {"kind": "semantic", "strings": ["x y"]}, {"kind": "Test", "strings": "test_open"}]`, 4, 8,
			[]Search{{"callers", []string{"open_file"}}, {"string", []string{"x y"}}, {"test", []string{"test_open"}}}},
		{"limits, empties, duplicates", `{"searches": [{"kind": "definition", "strings": ["", "A", "A", " B ", "C"]}, {"kind": "import", "strings": []}, {"kind": "grep", "strings": ["x"]}, {"kind": "def", "strings": ["y"]}]}`, 2, 2,
			[]Search{{"definition", []string{"A", "B"}}, {"string", []string{"x"}}}},
		{"trailing commas and prose with braces", "Plan (see {notes}):\n{\"searches\": [{\"kind\": \"import\", \"strings\": [\"requests\",],},]}", 4, 8,
			[]Search{{"import", []string{"requests"}}}},
		{"single search object", `{"kind": "definition", "strings": ["Widget"]}`, 4, 8,
			[]Search{{"definition", []string{"Widget"}}}},
		{"no limits", `{"searches": [{"kind": "string", "strings": ["a","b","c"]}]}`, 0, 0,
			[]Search{{"string", []string{"a", "b", "c"}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			plan, err := ParseSearchPlan(c.text, c.max, c.per)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(plan.Searches, c.want) {
				t.Errorf("got %+v, want %+v", plan.Searches, c.want)
			}
		})
	}
	for _, bad := range []string{"", "no json here", `{"searches": []}`, `{"searches": [{"kind": "definition", "strings": ["", "  "]}]}`, "```json\n{broken\n```"} {
		if plan, err := ParseSearchPlan(bad, 4, 8); err == nil {
			t.Errorf("%q: no error, plan %+v", bad, plan)
		}
	}
}

const sampleDiff = `diff --git a/pkg/parse/parser.go b/pkg/parse/parser.go
--- a/pkg/parse/parser.go
+++ b/pkg/parse/parser.go
@@ -1,3 +1,3 @@
 package parse

-var x = 1
+var x = 2
`

func TestExtractDiff(t *testing.T) {
	cases := []struct {
		name, text, want string
	}{
		{"fenced diff", "Here is the fix:\n\n```diff\n" + sampleDiff + "```\n\nThis sets x to 2.", sampleDiff},
		{"fenced patch without final newline", "```patch\n" + strings.TrimSuffix(sampleDiff, "\n") + "\n```", sampleDiff},
		{"bare with prose after", "The change:\n" + sampleDiff + "\nThat is all.\n", sampleDiff},
		{"bare starting at ---", "Fix:\n" + strings.SplitN(sampleDiff, "\n", 2)[1], strings.SplitN(sampleDiff, "\n", 2)[1]},
		{"crlf", strings.ReplaceAll("```diff\n"+sampleDiff+"```\n", "\n", "\r\n"), sampleDiff},
		{"two fences, one per file", "```diff\n" + sampleDiff + "```\nand\n```diff\n" + strings.ReplaceAll(sampleDiff, "parser.go", "lexer.go") + "```",
			sampleDiff + strings.ReplaceAll(sampleDiff, "parser.go", "lexer.go")},
		{"unclosed fence", "```diff\n" + sampleDiff, sampleDiff},
		{"fence with other code first", "```go\nfunc main() {}\n```\n```diff\n" + sampleDiff + "```", sampleDiff},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ExtractDiff(c.text)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("got\n%s\nwant\n%s", got, c.want)
			}
		})
	}
	for _, none := range []string{"", "I cannot fix this.", "```diff\n```", "```go\nx := 1\n```", "--- not a header\njust text"} {
		if d, err := ExtractDiff(none); !errors.Is(err, ErrNoDiff) {
			t.Errorf("%q: got %q, %v; want ErrNoDiff", none, d, err)
		}
	}
}
