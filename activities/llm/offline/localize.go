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
	query := sampleQuery(in.Issue, rng)
	idents := Identifiers(in.Issue)
	c := readCorpus(in)
	if len(c.docs) == 0 {
		return "I could not find any file to change: the repository listing was empty.\n"
	}
	out := make([]scoredPath, 0, len(c.docs))
	for _, d := range c.docs {
		s := c.score(d, query, idents) * (0.85 + 0.3*rng.Float64())
		out = append(out, scoredPath{d.path, s})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].score != out[j].score {
			return out[i].score > out[j].score
		}
		return out[i].path < out[j].path
	})
	return rankingAnswer(out, k, sample)
}

// sampleQuery is the issue's words with their counts, less the random fifth this sample drops.
func sampleQuery(issue string, rng *rand.Rand) map[string]float64 {
	query := map[string]float64{}
	for _, w := range inventory.Words(issue) {
		query[w]++
	}
	terms := make([]string, 0, len(query))
	for w := range query {
		terms = append(terms, w)
	}
	sort.Strings(terms) // the draws follow the words in a fixed order, so a sample drops the same ones every run
	for _, w := range terms {
		if rng.Float64() < 0.2 {
			delete(query, w)
		}
	}
	return query
}

// lexDoc is an inventory path's file as BM25 reads it.
type lexDoc struct {
	path   string
	tf     map[string]int // each word's count in the file
	length int            // the file's words
	text   string
}

// corpus is the inventory's files with the statistics BM25 weighs words by.
type corpus struct {
	docs []lexDoc
	df   map[string]int // how many files hold each word
	avg  float64        // the files' mean length in words (at least 1)
}

func readCorpus(in LocalizeInput) corpus {
	c := corpus{docs: make([]lexDoc, 0, len(in.Paths)), df: map[string]int{}}
	total := 0
	for _, p := range in.Paths {
		text, _ := in.Read(p)
		d := lexDoc{path: p, tf: map[string]int{}, text: text}
		for _, w := range inventory.Words(text) {
			d.tf[w]++
			d.length++
		}
		for w := range d.tf {
			c.df[w]++
		}
		total += d.length
		c.docs = append(c.docs, d)
	}
	if len(c.docs) > 0 {
		c.avg = math.Max(1, float64(total)/float64(len(c.docs)))
	}
	return c
}

// score is d's lexical score for the sampled query before this sample's perturbation: BM25 of the query's words,
// the query words its path holds, the identifiers it declares, weighed down for tests, docs and configuration.
func (c corpus) score(d lexDoc, query map[string]float64, idents []string) float64 {
	n := float64(len(c.docs))
	s := 0.0
	for w, qf := range query {
		tf := float64(d.tf[w])
		if tf == 0 {
			continue
		}
		idf := math.Log(1 + (n-float64(c.df[w])+0.5)/(float64(c.df[w])+0.5))
		s += math.Min(qf, 3) * idf * tf * 2.2 / (tf + 1.2*(0.25+0.75*float64(d.length)/c.avg))
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
	return s
}

type scoredPath struct {
	path  string
	score float64
}

// rankingAnswer lists the best k of ranked (best first) as a model would, in one of three list styles by sample.
func rankingAnswer(ranked []scoredPath, k, sample int) string {
	var b strings.Builder
	b.WriteString("These are the files most likely to need changes, most likely first:\n\n")
	for i := 0; i < k && i < len(ranked); i++ {
		// Like a model, list only the files that look about as likely as the best one.
		if ranked[i].score <= 0 || ranked[i].score < 0.5*ranked[0].score {
			break
		}
		switch sample % 3 {
		case 0:
			fmt.Fprintf(&b, "%d. %s\n", i+1, ranked[i].path)
		case 1:
			fmt.Fprintf(&b, "- `%s`\n", ranked[i].path)
		default:
			fmt.Fprintf(&b, "%d) %s\n", i+1, ranked[i].path)
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
