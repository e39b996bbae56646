package rankings

import "ctxlab/store/cas"

// memoDir keeps rankings in a folder by digest (cas.KeyDir: atomic writes, so no reader sees half a file).
type memoDir struct{ dir cas.KeyDir }

// storedRanking is a ranking as stored. The order is kept short: Head is its start, and the chunks Head leaves out
// follow in snapshot order. BM25 ranks the chunks that share no term with the query last, in that order, so Head
// is about the chunks that match (put cuts the longest tail in snapshot order, whatever the ranking).
type storedRanking struct {
	Key    Key   `json:"key"`
	Chunks int   `json:"chunks"`
	Head   []int `json:"head"`
}

// put stores order under digest.
func (d memoDir) put(digest string, key Key, order []int) error {
	cut := len(order)
	for cut > 0 && (cut == len(order) || order[cut-1] < order[cut]) {
		cut--
	}
	// order[cut:] is ascending: being the chunks order[:cut] leaves out, it is them in snapshot order.
	return d.dir.Put(digest, storedRanking{Key: key, Chunks: len(order), Head: order[:cut]})
}

// get returns the order stored under digest when it is the ranking of key over n chunks: a file that does not
// decode, names another key or chunk count, or whose head repeats a chunk or names one out of range, is not one.
func (d memoDir) get(digest string, key Key, n int) ([]int, bool) {
	var s storedRanking
	if !d.dir.Get(digest, &s) || s.Key != key || s.Chunks != n || len(s.Head) > n {
		return nil, false
	}
	seen := make([]bool, n)
	order := make([]int, 0, n)
	for _, i := range s.Head {
		if i < 0 || i >= n || seen[i] {
			return nil, false
		}
		seen[i] = true
		order = append(order, i)
	}
	for i, in := range seen {
		if !in {
			order = append(order, i)
		}
	}
	return order, true
}
