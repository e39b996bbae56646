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
	"sort"
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

// Index holds tokenized documents as an inverted index: for each term, the documents holding it (in the order
// added) and how often. Scoring a query touches only the postings of its terms.
type Index struct {
	p       Params
	post    map[string][]posting
	lens    []int
	total   int
	scratch map[string]int32
}

type posting struct {
	doc, tf int32
}

// New returns an empty index.
func New(p Params) *Index {
	return &Index{p: p, post: map[string][]posting{}, scratch: map[string]int32{}}
}

// Add tokenizes and adds a document; documents are numbered in the order added.
func (ix *Index) Add(text string) { ix.AddTerms(Tokenize(text)) }

// AddTerms adds an already tokenized document.
func (ix *Index) AddTerms(terms []string) {
	clear(ix.scratch)
	for _, t := range terms {
		ix.scratch[t]++
	}
	doc := int32(len(ix.lens))
	for t, n := range ix.scratch {
		ix.post[t] = append(ix.post[t], posting{doc, n})
	}
	ix.lens = append(ix.lens, len(terms))
	ix.total += len(terms)
}

// Len is the number of documents.
func (ix *Index) Len() int { return len(ix.lens) }

// IDF is the inverse document frequency of a term.
func (ix *Index) IDF(term string) float64 {
	n, df := float64(len(ix.lens)), float64(len(ix.post[term]))
	return math.Log(1 + (n-df+0.5)/(df+0.5))
}

// Scores returns every document's score for the query.
func (ix *Index) Scores(query string) []float64 {
	scores := make([]float64, len(ix.lens))
	if len(ix.lens) == 0 {
		return scores
	}
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
		ps := ix.post[t]
		if len(ps) == 0 {
			continue
		}
		w := ix.IDF(t) * float64(qtf[t])
		for _, p := range ps {
			f := float64(p.tf)
			scores[p.doc] += w * f * (k1 + 1) / (f + k1*(1-b+b*float64(ix.lens[p.doc])/avg))
		}
	}
	return scores
}

// Rank returns document numbers by descending score; equal scores keep the order documents were added in.
func (ix *Index) Rank(query string) []int {
	s := ix.Scores(query)
	order := make([]int, len(s))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return s[order[i]] > s[order[j]] })
	return order
}
