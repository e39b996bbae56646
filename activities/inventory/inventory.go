// Package inventory is step 1 of CQ2-CARE (PAPER.md, Algorithm 1), which needs no model: rank the repository's paths
// by the words they share with the issue, keep the best within a token cap tau = ratio · min(|P| in tokens, cap),
// and list the kept paths alphabetically. It also holds the word splitting the offline stand-in shares.
package inventory

import (
	"fmt"
	"sort"
	"strings"
	"unicode"

	"ctxlab/activities/tokens"
)

// Inventory is the list of paths shown to the localizer.
type Inventory struct {
	// Paths are the kept paths, alphabetically.
	Paths []string `json:"paths"`
	// Tokens is the token count of the kept list; AllTokens that of every path; Tau the cap applied.
	Tokens    int `json:"tokens"`
	AllTokens int `json:"all_tokens"`
	Tau       int `json:"tau"`
	// Total is the number of paths in the repository.
	Total int `json:"total"`
}

// Text renders the inventory as the prompt shows it: one path per line.
func (inv Inventory) Text() string {
	if len(inv.Paths) == 0 {
		return ""
	}
	return strings.Join(inv.Paths, "\n") + "\n"
}

// Scored is a path and the number of issue words it shares.
type Scored struct {
	Path  string
	Score int
}

// Rank orders paths by the number of distinct words each shares with the issue, most first. Ties go to source code
// before tests, docs and configuration, then to shallower paths, then alphabetically, so the order is total.
func Rank(paths []string, issue string) []Scored {
	words := Set(issue)
	out := make([]Scored, len(paths))
	for i, p := range paths {
		n := 0
		for w := range Set(p) {
			if words[w] {
				n++
			}
		}
		out[i] = Scored{Path: p, Score: n}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Score != b.Score {
			return a.Score > b.Score
		}
		if ca, cb := classRank(a.Path), classRank(b.Path); ca != cb {
			return ca < cb
		}
		if da, db := strings.Count(a.Path, "/"), strings.Count(b.Path, "/"); da != db {
			return da < db
		}
		return a.Path < b.Path
	})
	return out
}

func classRank(p string) int {
	switch {
	case IsTest(p):
		return 1
	case IsDoc(p):
		return 2
	case !IsCode(p):
		return 3
	}
	return 0
}

// Select ranks paths against the issue and keeps the best within tau = ratio · min(tokens of all paths, cap), where a
// path costs the tokens of its line in the list. Counts go through package tokens, which caches them.
func Select(paths []string, issue, tokenizer string, ratio float64, cap int) (Inventory, error) {
	if ratio <= 0 || ratio > 1 {
		return Inventory{}, fmt.Errorf("inventory: ratio %v must be in (0, 1]", ratio)
	}
	if cap <= 0 {
		return Inventory{}, fmt.Errorf("inventory: cap %d must be positive", cap)
	}
	cost := make(map[string]int, len(paths))
	all := 0
	for _, p := range paths {
		n, err := tokens.Count(tokenizer, p+"\n")
		if err != nil {
			return Inventory{}, err
		}
		cost[p] = n
		all += n
	}
	tau := int(ratio * float64(min(all, cap)))
	inv := Inventory{AllTokens: all, Tau: tau, Total: len(paths)}
	for _, s := range Rank(paths, issue) {
		c := cost[s.Path]
		if inv.Tokens+c > tau {
			continue // a shorter path further down may still fit
		}
		inv.Tokens += c
		inv.Paths = append(inv.Paths, s.Path)
	}
	sort.Strings(inv.Paths)
	return inv, nil
}

// Words splits text into lower-case word stems: identifiers are split at underscores, digits and camelCase
// boundaries ("KeyedMiddleware" -> keyed, middleware), words shorter than 3 letters and common English and
// boilerplate words (including generic folder names such as internal, cmd, pkg, src, util) are dropped, and a light suffix stripping makes "parser", "parsing" and "parse" one word.
func Words(text string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			if w := stem(strings.ToLower(string(cur))); len(w) >= 3 && !stop[w] {
				out = append(out, w)
			}
			cur = cur[:0]
		}
	}
	rs := []rune(text)
	for i, r := range rs {
		if !unicode.IsLetter(r) {
			flush()
			continue
		}
		if len(cur) > 0 && unicode.IsUpper(r) {
			prev := rs[i-1]
			nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
			if unicode.IsLower(prev) || (unicode.IsUpper(prev) && nextLower) {
				flush()
			}
		}
		cur = append(cur, r)
	}
	flush()
	return out
}

// Set is Words as a set.
func Set(text string) map[string]bool {
	set := map[string]bool{}
	for _, w := range Words(text) {
		set[w] = true
	}
	return set
}

func stem(w string) string {
	for _, suf := range []string{"ings", "ing", "ers", "er", "ed", "es", "s", "e"} {
		if len(w) > len(suf)+3 && strings.HasSuffix(w, suf) {
			return w[:len(w)-len(suf)]
		}
	}
	return w
}

var stop = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`the and for with that this from are was were but not you your our can has have
		had when then than what which who will would should could into out one two all any its it's also only just
		more most some such very does did done get got use used using like same other there their they them been
		being how why where after before over under about each every because while here these those make makes made
		http https www com org github
		internal cmd pkg src lib libs util utils common main`) {
		m[stem(w)] = true
	}
	return m
}()

// IsTest reports whether a path is a test file or lives in a test folder.
func IsTest(p string) bool {
	base := p[strings.LastIndex(p, "/")+1:]
	if strings.HasSuffix(base, "_test.go") || strings.HasSuffix(base, "_test.py") ||
		(strings.HasPrefix(base, "test_") && strings.HasSuffix(base, ".py")) || base == "conftest.py" ||
		strings.HasSuffix(base, ".test.js") || strings.HasSuffix(base, ".spec.js") ||
		strings.HasSuffix(base, ".test.ts") || strings.HasSuffix(base, ".spec.ts") {
		return true
	}
	for _, dir := range strings.Split(p, "/")[:strings.Count(p, "/")] {
		switch dir {
		case "test", "tests", "testdata", "testing", "__tests__":
			return true
		}
	}
	return false
}

// IsDoc reports whether a path is documentation: docs folders, Markdown, reStructuredText, plain text, licences,
// and repository metadata under .github.
func IsDoc(p string) bool {
	lower := strings.ToLower(p)
	base := lower[strings.LastIndex(lower, "/")+1:]
	for _, ext := range []string{".md", ".rst", ".txt", ".adoc"} {
		if strings.HasSuffix(base, ext) {
			return true
		}
	}
	switch base {
	case "license", "licence", "copying", "authors", "notice", "changelog", "readme":
		return true
	}
	for _, dir := range strings.Split(lower, "/")[:strings.Count(lower, "/")] {
		switch dir {
		case "docs", "doc", ".github":
			return true
		}
	}
	return false
}

// IsCode reports whether a path is source code by its extension.
func IsCode(p string) bool {
	i := strings.LastIndex(p, ".")
	if i < 0 || strings.Contains(p[i:], "/") {
		return false
	}
	switch strings.ToLower(p[i+1:]) {
	case "go", "py", "pyi", "pyx", "js", "jsx", "ts", "tsx", "java", "kt", "scala", "c", "h", "cc", "cpp", "hpp",
		"cs", "rb", "rs", "php", "swift", "m", "mm", "sh", "lua", "pl", "r", "jl", "ex", "exs", "erl", "hs", "ml",
		"clj", "dart", "groovy", "sql", "proto":
		return true
	}
	return false
}
