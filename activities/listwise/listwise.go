// Package listwise is listwise reranking as SweRank does it (after RankGPT): a model is shown a window of
// candidates numbered [1]..[n] and answers with their order ("[3] > [1] > [2]"); the window slides from the bottom
// of the candidate list to its top with overlap, so a candidate the model prefers can rise through every window
// above it. The package is the pure part: the windows, the answer's parser and the slide; the model call is the
// caller's (activities/steps' listwise_rerank step, through the project's llm layer).
package listwise

import (
	"context"
	"slices"
)

// Window is the candidates at positions [Start, End) of the current order.
type Window struct{ Start, End int }

// Windows are the windows of size over n candidates, moved up by step: the first ends at n, each next one starts
// step above the last, and the last starts at 0. n below 2 needs no window. size must be at least 2 and step at
// least 1 (the kind's declaration holds them there); a step larger than size leaves candidates between windows
// that no window shows.
func Windows(n, size, step int) []Window {
	if n < 2 || size < 2 || step < 1 {
		return nil
	}
	var out []Window
	for end := n; end > 0; end -= step {
		start := max(0, end-size)
		out = append(out, Window{start, end})
		if start == 0 {
			break
		}
	}
	return out
}

// ParsePermutation reads a model's ranking of a window of n candidates, numbered from 1, into a permutation of
// 0..n-1: the ids the answer names as [N] (spaces inside the brackets allowed), in its order, each once (its first
// place counts), then the ids it left out, in their retrieval order. Anything else is ignored: prose, bare numbers,
// ids out of range (0, above n, negative, too long to be a number). ok is false when the answer names no id in range;
// the permutation is then the retrieval order.
func ParsePermutation(answer string, n int) (perm []int, ok bool) {
	perm, named := parse(answer, n)
	return perm, named > 0
}

// parse is ParsePermutation, with how many distinct ids in range the answer named.
func parse(answer string, n int) (perm []int, named int) {
	perm = make([]int, 0, n)
	seen := make([]bool, n)
	for i := 0; i < len(answer) && len(perm) < n; i++ {
		if answer[i] != '[' {
			continue
		}
		id, end, found := bracketedID(answer, i+1, n)
		if !found {
			continue
		}
		i = end
		if id >= 1 && id <= n && !seen[id-1] {
			seen[id-1] = true
			perm = append(perm, id-1)
		}
	}
	named = len(perm)
	for i := range n {
		if !seen[i] {
			perm = append(perm, i)
		}
	}
	return perm, named
}

// bracketedID reads "  DIGITS  ]" from s[i:]: the number (0 when larger than n, so out of range), the index of the
// closing bracket, and whether the text had that shape.
func bracketedID(s string, i, n int) (id, end int, ok bool) {
	for i < len(s) && s[i] == ' ' {
		i++
	}
	digits := 0
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		digits++
		if id <= n { // past n it is out of range whatever follows; stop growing it before it can overflow
			id = id*10 + int(s[i]-'0')
		}
	}
	for i < len(s) && s[i] == ' ' {
		i++
	}
	if digits == 0 || i >= len(s) || s[i] != ']' {
		return 0, i - 1, false
	}
	if id > n {
		id = 0
	}
	return id, i, true
}

// Stats count a rerank's model calls.
type Stats struct {
	// Windows is the calls made, one per window.
	Windows int
	// Unparsed is the answers that named no candidate of their window: the window kept its order.
	Unparsed int
	// Incomplete is the parsed answers that left some of their window's candidates out (appended in order).
	Incomplete int
}

// Ask asks the model to rank one window, given the candidates it holds in their current order, and returns the
// answer's text.
type Ask func(ctx context.Context, window []int) (string, error)

// Rerank reorders candidates (any ids, in retrieval order) window by window, from the bottom up (Windows), asking
// ask for each. An answer that does not parse keeps its window's order and is counted; an error of ask ends the
// rerank with it. candidates is left as it was.
func Rerank(ctx context.Context, candidates []int, size, step int, ask Ask) ([]int, Stats, error) {
	order := slices.Clone(candidates)
	var st Stats
	for _, w := range Windows(len(order), size, step) {
		window := slices.Clone(order[w.Start:w.End])
		answer, err := ask(ctx, window)
		if err != nil {
			return nil, st, err
		}
		st.Windows++
		perm, named := parse(answer, len(window))
		if named == 0 {
			st.Unparsed++
			continue
		}
		if named < len(window) {
			st.Incomplete++
		}
		for i, p := range perm {
			order[w.Start+i] = window[p]
		}
	}
	return order, st, nil
}
