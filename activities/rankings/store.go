package rankings

import (
	"context"

	"ctxlab/store/objects"
)

// memoDir keeps rankings by digest in a folder of the run's objects (objects.Keyed: each written whole, once).
type memoDir struct{ dir objects.Keyed }

// storedRanking is a ranking as stored. The order is kept short: Head is its start, and the chunks Head leaves out
// follow in snapshot order. BM25 ranks the chunks that share no term with the query last, in that order, so Head
// is about the chunks that match (put cuts the longest tail in snapshot order, whatever the ranking).
type storedRanking struct {
	Key    Key   `json:"key"`
	Chunks int   `json:"chunks"`
	Head   []int `json:"head"`
}

// put stores order under digest, once: a ranking another worker stored first stays (an equal key ranks equally).
func (d memoDir) put(ctx context.Context, digest string, key Key, order []int) error {
	cut := len(order)
	for cut > 0 && (cut == len(order) || order[cut-1] < order[cut]) {
		cut--
	}
	// order[cut:] is ascending: being the chunks order[:cut] leaves out, it is them in snapshot order.
	// A stored file that is not a ranking of this key (damaged, or hostile) is replaced.
	_, err := d.dir.Create(ctx, digest, &storedRanking{Key: key, Chunks: len(order), Head: order[:cut]},
		func(stored any) bool {
			_, ok := stored.(*storedRanking).order(key, len(order))
			return ok
		})
	return err
}

// get returns the order stored under digest when it is the ranking of key over n chunks: a file that does not
// decode, names another key or chunk count, or whose head repeats a chunk or names one out of range, is not one.
func (d memoDir) get(ctx context.Context, digest string, key Key, n int) ([]int, bool) {
	var s storedRanking
	if !d.dir.Get(ctx, digest, &s) {
		return nil, false
	}
	return s.order(key, n)
}

// order is the stored order when it is the ranking of key over n chunks.
func (s storedRanking) order(key Key, n int) ([]int, bool) {
	if s.Key != key || s.Chunks != n || len(s.Head) > n {
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
