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

// Index holds tokenized documents for BM25. Adding a document makes one pass over its identifiers: each distinct
// identifier is tokenized once, when first seen, into the numbers of its terms, and every later occurrence looks
// that list up by the identifier's bytes and counts its terms in a flat array; the document's distinct terms and
// their frequencies are appended to blocks that never move. A query gathers, in one scan of those blocks, only the
// postings of its own terms, so no inverted index of the whole vocabulary is built. Queries may run concurrently;
// Add may not run beside anything else.
type Index struct {
	p Params
	// terms numbers the terms; df[id] is the number of documents holding term id.
	terms table
	df    []int32
	// words holds each identifier seen with its terms' numbers.
	words table
	// docTerms are every document's distinct terms (posting.doc holds the term) with their frequency, documents
	// in the order added; docEnd[d] is where document d's run ends.
	docTerms postingBlocks
	docEnd   []int
	lens     []int
	total    int
	// counts and touched are scratch space of Add: the frequencies of the document being added, and its terms
	// (strs, termIDs and spans: of a new identifier). A query borrows counts (under mu) to mark its terms.
	counts  []int32
	touched []int32
	strs    []string
	termIDs []int32
	spans   []span
	// at and hashes are the identifiers of the document being added and their hashes; warmed keeps what
	// words.warm read, so that the reads are not left out.
	at     []span
	hashes []uint64
	warmed uint64
	mu     sync.Mutex
}

// posting is a term's frequency in a document: doc is the document in a postings list and the term in docTerms.
type posting struct {
	doc, tf int32
}

// postingBlocks is an append-only list of postings in blocks of a fixed size, so growing it never copies.
type postingBlocks struct {
	blocks [][]posting
	n      int
}

const postingBlockLen = 1 << 14

func (l *postingBlocks) add(p posting) {
	if k := len(l.blocks); k == 0 || len(l.blocks[k-1]) == postingBlockLen {
		l.blocks = append(l.blocks, make([]posting, 0, postingBlockLen))
	}
	last := &l.blocks[len(l.blocks)-1]
	*last = append(*last, p)
	l.n++
}

// New returns an empty index.
func New(p Params) *Index {
	return &Index{p: p, terms: newTable(), words: newTable()}
}

// Add tokenizes and adds a document; documents are numbered in the order added. Its terms are those Tokenize
// returns, counted without making their strings.
func (ix *Index) Add(text string) {
	ix.at, ix.hashes = ix.at[:0], ix.hashes[:0]
	for start, end, _ := nextWord(text, 0); start < end; start, end, _ = nextWord(text, end) {
		ix.at = append(ix.at, span{start, end})
		ix.hashes = append(ix.hashes, ix.words.hashOf(text[start:end]))
	}
	ix.warmed += ix.words.warm(ix.hashes)
	n := 0
	for k, s := range ix.at {
		ids, ok := ix.words.find(text[s.start:s.end], ix.hashes[k])
		if !ok {
			ids = ix.learnWord(text[s.start:s.end], ix.hashes[k])
		}
		for k := range len(ids) / 4 {
			ix.count(number(ids, k))
		}
		n += len(ids) / 4
	}
	ix.endDoc(n)
}

// learnWord tokenizes an identifier seen for the first time and records its terms' numbers.
func (ix *Index) learnWord(word string, h uint64) []byte {
	ix.spans = identSpans(ix.spans[:0], word)
	ix.strs = appendTerms(ix.strs[:0], word, ix.spans)
	ix.termIDs = ix.termIDs[:0]
	for _, t := range ix.strs {
		ix.termIDs = append(ix.termIDs, ix.termID(t))
	}
	return ix.words.add(word, h, ix.termIDs...)
}

// AddTerms adds an already tokenized document.
func (ix *Index) AddTerms(terms []string) {
	for _, t := range terms {
		ix.count(ix.termID(t))
	}
	ix.endDoc(len(terms))
}

// termID numbers a term, giving a new term the next number.
func (ix *Index) termID(term string) int32 {
	h := ix.terms.hashOf(term)
	if nums, ok := ix.terms.find(term, h); ok {
		return number(nums, 0)
	}
	id := int32(len(ix.df))
	ix.terms.add(term, h, id)
	ix.df = append(ix.df, 0)
	ix.counts = append(ix.counts, 0)
	return id
}

// termNumber is the number of a term the index holds.
func (ix *Index) termNumber(term string) (int32, bool) {
	nums, ok := ix.terms.find(term, ix.terms.hashOf(term))
	if !ok {
		return 0, false
	}
	return number(nums, 0), true
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
		ix.docTerms.add(posting{id, ix.counts[id]})
		ix.df[id]++
		ix.counts[id] = 0
	}
	ix.touched = ix.touched[:0]
	ix.docEnd = append(ix.docEnd, ix.docTerms.n)
	ix.lens = append(ix.lens, terms)
	ix.total += terms
}

// postingsOf returns the postings of the terms ids (distinct), documents in the order added:
// post[start[k]:start[k+1]] are term ids[k]'s. It scans every document's terms once.
func (ix *Index) postingsOf(ids []int32) (post []posting, start []int) {
	start = make([]int, len(ids)+1)
	for k, id := range ids {
		start[k+1] = start[k] + int(ix.df[id])
	}
	post = make([]posting, start[len(ids)])
	if len(ids) == 0 {
		return post, start
	}
	next := slices.Clone(start[:len(ids)])
	want := make([]uint64, (len(ix.df)+63)/64)
	ix.mu.Lock()
	defer ix.mu.Unlock()
	slot := ix.counts // zero outside Add; slot[id] = k+1 names term ids[k] while this query scans
	for k, id := range ids {
		want[id/64] |= 1 << (id % 64)
		slot[id] = int32(k + 1)
	}
	doc, i := 0, 0
	for _, block := range ix.docTerms.blocks {
		for _, p := range block {
			for i == ix.docEnd[doc] {
				doc++
			}
			i++
			if want[p.doc/64]&(1<<(p.doc%64)) != 0 {
				k := slot[p.doc] - 1
				post[next[k]] = posting{int32(doc), p.tf}
				next[k]++
			}
		}
	}
	for _, id := range ids {
		slot[id] = 0
	}
	return post, start
}

// Len is the number of documents.
func (ix *Index) Len() int { return len(ix.lens) }

// IDF is the inverse document frequency of a term.
func (ix *Index) IDF(term string) float64 {
	df := 0
	if id, ok := ix.termNumber(term); ok {
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
	var known []string
	var ids []int32
	for _, t := range order {
		if id, ok := ix.termNumber(t); ok {
			known = append(known, t)
			ids = append(ids, id)
		}
	}
	post, start := ix.postingsOf(ids)
	k1, b := ix.p.K1, ix.p.B
	for k, t := range known {
		w := ix.IDF(t) * float64(qtf[t])
		for _, p := range post[start[k]:start[k+1]] {
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
