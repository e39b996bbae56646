package bm25

// The implementation before the interned, flat index (issue 31), kept only as the reference that
// TestMatchesReference compares the index and tokenizer against bit for bit.

import (
	"math"
	"sort"
	"strings"
)

type refIndex struct {
	p       Params
	post    map[string][]refPosting
	lens    []int
	total   int
	scratch map[string]int32
}

type refPosting struct {
	doc, tf int32
}

func newRef(p Params) *refIndex {
	return &refIndex{p: p, post: map[string][]refPosting{}, scratch: map[string]int32{}}
}

func (ix *refIndex) Add(text string) { ix.AddTerms(refTokenize(text)) }

func (ix *refIndex) AddTerms(terms []string) {
	clear(ix.scratch)
	for _, t := range terms {
		ix.scratch[t]++
	}
	doc := int32(len(ix.lens))
	for t, n := range ix.scratch {
		ix.post[t] = append(ix.post[t], refPosting{doc, n})
	}
	ix.lens = append(ix.lens, len(terms))
	ix.total += len(terms)
}

func (ix *refIndex) IDF(term string) float64 {
	n, df := float64(len(ix.lens)), float64(len(ix.post[term]))
	return math.Log(1 + (n-df+0.5)/(df+0.5))
}

func (ix *refIndex) Scores(query string) []float64 {
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
	for _, t := range refTokenize(query) {
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
func (ix *refIndex) Rank(query string) []int {
	s := ix.Scores(query)
	order := make([]int, len(s))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return s[order[i]] > s[order[j]] })
	return order
}

func refTokenize(text string) []string {
	var out []string
	return refAppendTokens(out, text)
}

func refAppendTokens(dst []string, text string) []string {
	i := 0
	for i < len(text) {
		if !refIsWord(text[i]) {
			i++
			continue
		}
		j := i
		for j < len(text) && refIsWord(text[j]) {
			j++
		}
		dst = refAppendIdent(dst, text[i:j])
		i = j
	}
	return dst
}

func refIsWord(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

func refAppendIdent(dst []string, id string) []string {
	whole := strings.ToLower(strings.Trim(id, "_"))
	if whole == "" {
		return dst
	}
	dst = append(dst, whole)
	n := len(dst)
	for _, p := range strings.Split(id, "_") {
		dst = refAppendCamel(dst, p)
	}
	if len(dst) == n+1 && dst[n] == whole { // a single part equal to the whole: no split
		dst = dst[:n]
	}
	return dst
}

// refAppendCamel splits one underscore-free word at case and letter-digit boundaries.
func refAppendCamel(dst []string, w string) []string {
	start := 0
	emit := func(end int) {
		if end-start > 1 {
			dst = append(dst, strings.ToLower(w[start:end]))
		}
		start = end
	}
	for i := 1; i < len(w); i++ {
		prev, cur := refClass(w[i-1]), refClass(w[i])
		switch {
		case prev == refLower && cur == refUpper, // parseHTTP: e|H
			prev == refDigit && cur != refDigit, prev != refDigit && cur == refDigit: // utf8Decode, v2
			emit(i)
		case prev == refUpper && cur == refUpper && i+1 < len(w) && refClass(w[i+1]) == refLower: // HTTPServer: P|Se
			emit(i)
		}
	}
	emit(len(w))
	return dst
}

const (
	refLower = iota
	refUpper
	refDigit
	refOther
)

func refClass(c byte) int {
	switch {
	case c >= 'a' && c <= 'z':
		return refLower
	case c >= 'A' && c <= 'Z':
		return refUpper
	case c >= '0' && c <= '9':
		return refDigit
	}
	return refOther
}
