package offline

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"regexp"
	"sort"
	"strings"

	"ctxlab/activities/inventory"
)

// LocalizeInput is what the lexical localizer reads: the issue, the inventory's paths, and the repository's files.
type LocalizeInput struct {
	Issue string
	Paths []string
	// Read returns a file's text at base_commit.
	Read func(path string) (string, bool)
	// TopK is how many paths an answer lists (5 when 0).
	TopK int
}

// Localize is the lexical localizer: it scores every inventory path by BM25 of the issue's words over the file's
// words, plus the issue words the path shares, plus identifiers the issue names that the file declares, and lists the
// best TopK as a numbered or bulleted list with prose around it, as a model would. Each sample keeps a random four
// fifths of the issue's words and perturbs scores slightly, seeded by the issue and the sample number, so that
// samples can disagree while a run stays reproducible.
func Localize(in LocalizeInput, sample int) string {
	k := in.TopK
	if k <= 0 {
		k = 5
	}
	rng := rand.New(rand.NewPCG(seed(in.Issue), uint64(sample)+1))
	query := map[string]float64{}
	for _, w := range inventory.Words(in.Issue) {
		query[w]++
	}
	terms := make([]string, 0, len(query))
	for w := range query {
		terms = append(terms, w)
	}
	sort.Strings(terms)
	for _, w := range terms {
		if rng.Float64() < 0.2 {
			delete(query, w)
		}
	}
	idents := Identifiers(in.Issue)

	type doc struct {
		path   string
		tf     map[string]int
		length int
		text   string
	}
	docs := make([]doc, 0, len(in.Paths))
	df := map[string]int{}
	total := 0
	for _, p := range in.Paths {
		text, _ := in.Read(p)
		d := doc{path: p, tf: map[string]int{}, text: text}
		for _, w := range inventory.Words(text) {
			d.tf[w]++
			d.length++
		}
		for w := range d.tf {
			df[w]++
		}
		total += d.length
		docs = append(docs, d)
	}
	if len(docs) == 0 {
		return "I could not find any file to change: the repository listing was empty.\n"
	}
	avg := math.Max(1, float64(total)/float64(len(docs)))
	n := float64(len(docs))
	type scored struct {
		path  string
		score float64
	}
	out := make([]scored, 0, len(docs))
	for _, d := range docs {
		s := 0.0
		for w, qf := range query {
			tf := float64(d.tf[w])
			if tf == 0 {
				continue
			}
			idf := math.Log(1 + (n-float64(df[w])+0.5)/(float64(df[w])+0.5))
			s += math.Min(qf, 3) * idf * tf * 2.2 / (tf + 1.2*(0.25+0.75*float64(d.length)/avg))
		}
		// A file named after a word the issue keeps using is a strong lexical hint.
		for w := range inventory.Set(d.path) {
			s += 2 * math.Min(query[w], 3)
		}
		for _, id := range idents {
			if declares(d.text, id) {
				s += 3
			}
		}
		// Asked which files must be edited, the stand-in prefers code: documentation and configuration count half,
		// tests seven tenths (they still come up, as they do with models, and the intersection drops them).
		switch {
		case inventory.IsTest(d.path):
			s *= 0.7
		case inventory.IsDoc(d.path) || !inventory.IsCode(d.path):
			s *= 0.5
		}
		s *= 0.85 + 0.3*rng.Float64()
		out = append(out, scored{d.path, s})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].score != out[j].score {
			return out[i].score > out[j].score
		}
		return out[i].path < out[j].path
	})
	var b strings.Builder
	b.WriteString("These are the files most likely to need changes, most likely first:\n\n")
	for i := 0; i < k && i < len(out); i++ {
		// Like a model, list only the files that look about as likely as the best one.
		if out[i].score <= 0 || out[i].score < 0.5*out[0].score {
			break
		}
		switch sample % 3 {
		case 0:
			fmt.Fprintf(&b, "%d. %s\n", i+1, out[i].path)
		case 1:
			fmt.Fprintf(&b, "- `%s`\n", out[i].path)
		default:
			fmt.Fprintf(&b, "%d) %s\n", i+1, out[i].path)
		}
	}
	b.WriteString("\nThe first one is where I would start.\n")
	return b.String()
}

func seed(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

var (
	codeSpan = regexp.MustCompile("`([^`\n]+)`")
	fence    = regexp.MustCompile("(?s)```[a-z]*\n(.*?)```")
	identRe  = regexp.MustCompile(`\b([A-Za-z_][A-Za-z0-9_]*)(?:\.([A-Za-z_][A-Za-z0-9_]*))?\b`)
	quotedRe = regexp.MustCompile(`"([^"\n]{6,120})"`)
	flagRe   = regexp.MustCompile(`(?:^|[\s'"(])--([a-z][a-z0-9-]{1,40})\b`)
	callRe   = regexp.MustCompile(`\b([A-Za-z_][A-Za-z0-9_]*)\(`)
	// bareCallRe is a call not preceded by a dot or by "func " (a declaration).
	bareCallRe = regexp.MustCompile(`(?:^|[^.\w])([A-Za-z_][A-Za-z0-9_]*)\(`)
	keywordGo  = map[string]bool{"package": true, "import": true, "func": true, "main": true, "return": true,
		"for": true, "if": true, "else": true, "var": true, "const": true, "type": true, "range": true, "nil": true,
		"true": true, "false": true, "string": true, "int": true, "err": true, "fmt": true, "Println": true,
		"Printf": true, "Sprintf": true, "Sprint": true, "time": true, "def": true, "class": true, "self": true,
		"None": true, "True": true, "False": true, "print": true, "len": true, "make": true, "append": true,
		"Sleep": true, "Date": true, "UTC": true, "Millisecond": true, "Second": true, "Minute": true, "Format": true}
)

// Identifiers returns the code identifiers the issue names, in order of first mention: names in `code spans` and
// fenced code that are qualified (pkg.Name gives Name), camelCase, or called (name(...)).
func Identifiers(issue string) []string {
	seen := map[string]bool{}
	var out []string
	add := func(id string) {
		if len(id) < 3 || keywordGo[id] || seen[id] {
			return
		}
		seen[id] = true
		out = append(out, id)
	}
	var code []string
	for _, m := range codeSpan.FindAllStringSubmatch(issue, -1) {
		code = append(code, m[1])
	}
	for _, m := range fence.FindAllStringSubmatch(issue, -1) {
		code = append(code, m[1])
	}
	for _, c := range code {
		for _, m := range identRe.FindAllStringSubmatch(c, -1) {
			switch {
			case m[2] != "" && isLowerIdent(m[1]) && isUpper(m[2][0]):
				add(m[2]) // pkg.Name
			case m[2] == "" && camel(m[1]):
				add(m[1]) // KeyedMiddleware, parseConfig
			}
		}
		for _, m := range callRe.FindAllStringSubmatch(c, -1) {
			add(m[1])
		}
	}
	return out
}

// declares reports whether a file's text declares name as a function, method, type or class.
func declares(text, name string) bool {
	for _, pre := range []string{"func " + name + "(", ") " + name + "(", "type " + name + " ", "def " + name + "(",
		"class " + name + "(", "class " + name + ":"} {
		if strings.Contains(text, pre) {
			return true
		}
	}
	return false
}

func isUpper(c byte) bool { return c >= 'A' && c <= 'Z' }

func isLowerIdent(s string) bool { return s != "" && s[0] >= 'a' && s[0] <= 'z' }

// camel reports whether s mixes cases inside the word (an identifier, not a capitalized English word).
func camel(s string) bool {
	for i := 1; i < len(s); i++ {
		if isUpper(s[i]) && s[i-1] >= 'a' && s[i-1] <= 'z' {
			return true
		}
	}
	return false
}
