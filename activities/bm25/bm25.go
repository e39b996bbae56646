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

// Index holds tokenized documents for BM25. Adding a document makes one pass over its identifiers and counts each
// distinct one: an identifier is looked up by its bytes in a table that numbers it and knows how many terms it
// makes (it is tokenized once, when first seen), and the document's distinct identifiers with their counts are
// appended to blocks that never move. Terms are resolved only for a query: the index tokenizes each distinct
// identifier once to find those holding the query's terms, then gathers the postings of those terms alone in one
// scan of the blocks. Term and document frequencies are exact sums of counts, so scores equal those of an index of
// every term. Queries may run concurrently; Add may not run beside anything else.
type Index struct {
	p Params
	// words numbers each identifier seen (its bytes as in the text): its numbers are the identifier's number and
	// how many terms it makes. given numbers the terms AddTerms was given, one term each. Identifiers and given
	// terms share one numbering, of nWords.
	words, given table
	nWords       int32
	// docWords are every document's distinct identifiers (posting.doc holds the identifier) with their count,
	// documents in the order added; docEnd[d] is where document d's run ends; lens[d] is its number of terms.
	docWords postingBlocks
	docEnd   []int
	lens     []int
	total    int
	// counts, touched and spans are scratch space of Add: the counts of the identifiers of the document being
	// added, the identifiers counted, and the terms of a new identifier. A query borrows counts (under mu) to mark
	// the identifiers holding its terms.
	counts  []int32
	touched []int32
	spans   []span
	// at and hashes are the identifiers of the document being added and their hashes; warmed keeps what
	// words.warm read, so that the reads are not left out.
	at     []span
	hashes []uint64
	warmed uint64
	mu     sync.Mutex
}

// posting is a term's frequency in a document: doc is the document in a postings list and the identifier in
// docWords.
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
	return &Index{p: p, words: newTable(), given: newTable()}
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
		nums, ok := ix.words.find(text[s.start:s.end], ix.hashes[k])
		if !ok {
			ix.spans = identSpans(ix.spans[:0], text[s.start:s.end])
			nums = ix.words.add(text[s.start:s.end], ix.hashes[k], ix.newWord(), int32(len(ix.spans)))
		}
		ix.count(number(nums, 0))
		n += int(number(nums, 1))
	}
	ix.endDoc(n)
}

// AddTerms adds an already tokenized document.
func (ix *Index) AddTerms(terms []string) {
	for _, t := range terms {
		h := ix.given.hashOf(t)
		nums, ok := ix.given.find(t, h)
		if !ok {
			nums = ix.given.add(t, h, ix.newWord())
		}
		ix.count(number(nums, 0))
	}
	ix.endDoc(len(terms))
}

// newWord numbers a new identifier or given term.
func (ix *Index) newWord() int32 {
	ix.counts = append(ix.counts, 0)
	ix.nWords++
	return ix.nWords - 1
}

func (ix *Index) count(id int32) {
	if ix.counts[id] == 0 {
		ix.touched = append(ix.touched, id)
	}
	ix.counts[id]++
}

// endDoc closes the document whose identifiers were counted; it has that many terms.
func (ix *Index) endDoc(terms int) {
	for _, id := range ix.touched {
		ix.docWords.add(posting{id, ix.counts[id]})
		ix.counts[id] = 0
	}
	ix.touched = ix.touched[:0]
	ix.docEnd = append(ix.docEnd, ix.docWords.n)
	ix.lens = append(ix.lens, terms)
	ix.total += terms
}

// wordHit says that an identifier makes term k of a query mult times.
type wordHit struct{ k, mult int32 }

// postingsOf returns the postings of the terms (distinct), documents in the order added: post[k] are terms[k]'s,
// and len(post[k]) is its document frequency.
func (ix *Index) postingsOf(terms []string) [][]posting {
	post := make([][]posting, len(terms))
	if len(terms) == 0 || len(ix.lens) == 0 {
		return post
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	mark := ix.counts // zero outside Add; mark[id] = r+1 while this query scans: identifier id makes hits[r]
	hits, marked := ix.hitsOf(terms, mark)
	tf := make([]int32, len(terms))
	var open []int32 // the terms of the current document
	flush := func(doc int) {
		for _, k := range open {
			post[k] = append(post[k], posting{int32(doc), tf[k]})
			tf[k] = 0
		}
		open = open[:0]
	}
	doc, i := 0, 0
	for _, block := range ix.docWords.blocks {
		for _, p := range block {
			for i == ix.docEnd[doc] {
				flush(doc)
				doc++
			}
			i++
			if r := mark[p.doc]; r != 0 {
				for _, h := range hits[r-1] {
					if tf[h.k] == 0 {
						open = append(open, h.k)
					}
					tf[h.k] += p.tf * h.mult
				}
			}
		}
	}
	flush(doc)
	for _, id := range marked {
		mark[id] = 0
	}
	return post
}

// hitsOf tokenizes every identifier and given term of the index and marks (in mark) those that make any of the
// terms, with the terms they make; it returns the hits of each mark and the identifiers marked.
func (ix *Index) hitsOf(terms []string, mark []int32) (hits [][]wordHit, marked []int32) {
	want := make(map[string]int32, len(terms))
	for k, t := range terms {
		want[t] = int32(k)
	}
	var strs []string
	var spans []span
	var lowered []byte
	note := func(id int32, k int32) {
		if mark[id] == 0 {
			hits = append(hits, nil)
			marked = append(marked, id)
			mark[id] = int32(len(hits))
		}
		r := mark[id] - 1
		for j, h := range hits[r] {
			if h.k == k {
				hits[r][j].mult++
				return
			}
		}
		hits[r] = append(hits[r], wordHit{k, 1})
	}
	ix.words.each(func(key, nums []byte) {
		id := number(nums, 0)
		spans = identSpans(spans[:0], key)
		var ascii bool
		if lowered, ascii = lowerASCII(lowered[:0], key); !ascii {
			for _, t := range appendTerms(strs[:0], string(key), spans) {
				if k, ok := want[t]; ok {
					note(id, k)
				}
			}
			return
		}
		for _, s := range spans { // an ASCII term is its bytes of the lowercased identifier
			if k, ok := want[string(lowered[s.start:s.end])]; ok {
				note(id, k)
			}
		}
	})
	ix.given.each(func(key, nums []byte) {
		if k, ok := want[string(key)]; ok {
			note(number(nums, 0), k)
		}
	})
	return hits, marked
}

// Len is the number of documents.
func (ix *Index) Len() int { return len(ix.lens) }

// IDF is the inverse document frequency of a term.
func (ix *Index) IDF(term string) float64 {
	return ix.idf(len(ix.postingsOf([]string{term})[0]))
}

func (ix *Index) idf(df int) float64 {
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
	post := ix.postingsOf(order)
	k1, b := ix.p.K1, ix.p.B
	for k, t := range order {
		if len(post[k]) == 0 {
			continue
		}
		w := ix.idf(len(post[k])) * float64(qtf[t])
		for _, p := range post[k] {
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
