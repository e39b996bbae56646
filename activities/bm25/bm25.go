// Package bm25 ranks documents against a query with Okapi BM25 over a code-aware tokenizer (see Tokenize). The
// scoring follows Lucene's BM25 (as Pyserini, behind SWE-bench's retrieval baseline, uses it):
//
//	score(q, d) = sum over query terms t of  idf(t) * tf(t,d) * (k1+1) / (tf(t,d) + k1 * (1 - b + b*|d|/avgdl))
//	idf(t)      = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))
//
// with SWE-bench's defaults k1 = 0.9 and b = 0.4. A query term that occurs twice counts twice.
package bm25

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
)

// SWE-bench's BM25 parameters.
const (
	DefaultK1 = 0.9
	DefaultB  = 0.4
)

// Params are BM25's two knobs.
type Params struct {
	K1 float64 `json:"k1"`
	B  float64 `json:"b"`
}

// Defaults returns SWE-bench's parameters.
func Defaults() Params { return Params{K1: DefaultK1, B: DefaultB} }

// Check reports parameters outside BM25's range.
func (p Params) Check() error {
	if p.K1 < 0 || math.IsNaN(p.K1) {
		return fmt.Errorf("bm25: k1 = %v must be >= 0", p.K1)
	}
	if p.B < 0 || p.B > 1 || math.IsNaN(p.B) {
		return fmt.Errorf("bm25: b = %v must be in [0, 1]", p.B)
	}
	return nil
}

// Index holds tokenized documents as an inverted index. Adding a document makes one pass over its terms: each term
// is interned to a number (lowercased in a reused buffer, so a term seen before allocates nothing) and counted in a
// flat array, and the document's distinct terms are appended to one list. The first query after an Add lays that
// list out by term (postings in the order documents were added), so scoring a query touches only the postings of
// its terms. Queries may run concurrently; Add may not run beside anything else.
type Index struct {
	p Params
	// ids numbers the terms; df[id] is the number of documents holding term id.
	ids map[string]int32
	df  []int32
	// docTerms are every document's distinct terms with their frequency, documents in the order added;
	// docEnd[d] is where document d's run ends.
	docTerms []posting
	docEnd   []int32
	lens     []int
	total    int
	// counts, touched and lowered are scratch space of Add.
	counts  []int32
	touched []int32
	lowered []byte
	spans   []span

	mu sync.Mutex
	// postings[postStart[id]:postStart[id+1]] are the documents holding term id, laid out for the first builtDocs
	// documents.
	postings  []posting
	postStart []int32
	builtDocs int
}

// posting is a term's frequency in a document: doc is the document in a postings list and the term in docTerms.
type posting struct {
	doc, tf int32
}

// New returns an empty index.
func New(p Params) *Index {
	return &Index{p: p, ids: map[string]int32{}}
}

// Add tokenizes and adds a document; documents are numbered in the order added. It indexes the terms Tokenize
// returns without making their strings.
func (ix *Index) Add(text string) {
	n := 0
	for sp := range eachIdent(text, ix.spans[:0]) {
		for _, s := range sp {
			ix.count(ix.lowerID(text[s.start:s.end]))
		}
		n += len(sp)
		ix.spans = sp
	}
	ix.endDoc(n)
}

// AddTerms adds an already tokenized document.
func (ix *Index) AddTerms(terms []string) {
	for _, t := range terms {
		ix.count(ix.termID(t, true))
	}
	ix.endDoc(len(terms))
}

// termID numbers a term, giving a new term the next number (copying key when it may share a larger string).
func (ix *Index) termID(key string, clone bool) int32 {
	if id, ok := ix.ids[key]; ok {
		return id
	}
	if clone {
		key = strings.Clone(key)
	}
	id := int32(len(ix.df))
	ix.ids[key] = id
	ix.df = append(ix.df, 0)
	ix.counts = append(ix.counts, 0)
	return id
}

// lowerID numbers strings.ToLower(raw) without allocating when the term is known and ASCII.
func (ix *Index) lowerID(raw string) int32 {
	hasUpper := false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c >= 0x80 {
			return ix.termID(strings.ToLower(raw), true)
		}
		hasUpper = hasUpper || c >= 'A' && c <= 'Z'
	}
	if !hasUpper {
		return ix.termID(raw, true)
	}
	ix.lowered = ix.lowered[:0]
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		ix.lowered = append(ix.lowered, c)
	}
	if id, ok := ix.ids[string(ix.lowered)]; ok { // the conversion in a map index does not allocate
		return id
	}
	return ix.termID(string(ix.lowered), false)
}

func (ix *Index) count(id int32) {
	if ix.counts[id] == 0 {
		ix.touched = append(ix.touched, id)
	}
	ix.counts[id]++
}

// endDoc closes the document whose terms were counted.
func (ix *Index) endDoc(terms int) {
	for _, id := range ix.touched {
		ix.docTerms = append(ix.docTerms, posting{id, ix.counts[id]})
		ix.df[id]++
		ix.counts[id] = 0
	}
	ix.touched = ix.touched[:0]
	ix.docEnd = append(ix.docEnd, int32(len(ix.docTerms)))
	ix.lens = append(ix.lens, terms)
	ix.total += terms
}

// build lays the postings out by term if documents were added since the last time.
func (ix *Index) build() {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.builtDocs == len(ix.lens) {
		return
	}
	ix.postStart = slices.Grow(ix.postStart[:0], len(ix.df)+1)[:len(ix.df)+1]
	ix.postStart[0] = 0
	for id, n := range ix.df {
		ix.postStart[id+1] = ix.postStart[id] + n
	}
	next := slices.Clone(ix.postStart[:len(ix.df)])
	ix.postings = slices.Grow(ix.postings[:0], len(ix.docTerms))[:len(ix.docTerms)]
	from := int32(0)
	for doc, end := range ix.docEnd {
		for _, dt := range ix.docTerms[from:end] {
			ix.postings[next[dt.doc]] = posting{int32(doc), dt.tf}
			next[dt.doc]++
		}
		from = end
	}
	ix.builtDocs = len(ix.lens)
}

// Len is the number of documents.
func (ix *Index) Len() int { return len(ix.lens) }

// IDF is the inverse document frequency of a term.
func (ix *Index) IDF(term string) float64 {
	df := 0
	if id, ok := ix.ids[term]; ok {
		df = int(ix.df[id])
	}
	n := float64(len(ix.lens))
	return math.Log(1 + (n-float64(df)+0.5)/(float64(df)+0.5))
}

// Scores returns every document's score for the query.
func (ix *Index) Scores(query string) []float64 {
	scores := make([]float64, len(ix.lens))
	if len(ix.lens) == 0 {
		return scores
	}
	ix.build()
	avg := float64(ix.total) / float64(len(ix.lens))
	if avg == 0 {
		avg = 1
	}
	qtf := map[string]int{}
	var order []string
	for _, t := range Tokenize(query) {
		if qtf[t] == 0 {
			order = append(order, t)
		}
		qtf[t]++
	}
	k1, b := ix.p.K1, ix.p.B
	for _, t := range order {
		id, ok := ix.ids[t]
		if !ok {
			continue
		}
		w := ix.IDF(t) * float64(qtf[t])
		for _, p := range ix.postings[ix.postStart[id]:ix.postStart[id+1]] {
			f := float64(p.tf)
			scores[p.doc] += w * f * (k1 + 1) / (f + k1*(1-b+b*float64(ix.lens[p.doc])/avg))
		}
	}
	return scores
}

// Rank returns document numbers by descending score; equal scores keep the order documents were added in. Only the
// documents that hold a query term are sorted: with k1 >= 0 every other document scores exactly 0 and every
// matching one more, so they follow in the order added.
func (ix *Index) Rank(query string) []int {
	s := ix.Scores(query)
	order := make([]int, 0, len(s))
	var rest []int
	for i, v := range s {
		switch {
		case v > 0:
			order = append(order, i)
		case v == 0:
			rest = append(rest, i)
		default: // a negative k1 or a NaN: sort everything, as before
			return rankAll(s)
		}
	}
	slices.SortStableFunc(order, func(i, j int) int {
		switch {
		case s[i] > s[j]:
			return -1
		case s[i] < s[j]:
			return 1
		}
		return 0
	})
	return append(order, rest...)
}

func rankAll(s []float64) []int {
	order := make([]int, len(s))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return s[order[i]] > s[order[j]] })
	return order
}
