package tokens

import (
	"crypto/sha256"
	"fmt"
	"sort"
	"strings"
	"sync"
	"unsafe"
)

// Counter counts the tokens of a text in one tokenizer: a tiktoken encoding compiled in (Encoding), or a model
// server's own tokenizer reached over HTTP (Remote). Name says which, as rows record it.
type Counter interface {
	Name() string
	Count(text string) (int, error)
}

// Encoding returns the counter of a compiled-in encoding (o200k_base, cl100k_base).
func Encoding(name string) (Counter, error) {
	if _, err := codec(name); err != nil {
		return nil, err
	}
	return encodingCounter(name), nil
}

type encodingCounter string

func (e encodingCounter) Name() string                   { return string(e) }
func (e encodingCounter) Count(text string) (int, error) { return Count(string(e), text) }

// RemoteFunc counts a text's tokens by asking a tokenizer that lives elsewhere (a server's /tokenize, a provider's
// count_tokens endpoint). It is called only on a cache miss.
type RemoteFunc func(text string) (int, error)

// Remote returns a counter named name that asks count, caching its answers in the same cache as the encodings' by
// (cacheID, sha256 of the text): cacheID must tell apart every tokenizer that may count differently (a server's URL
// and model), while name is what rows record.
func Remote(name, cacheID string, count RemoteFunc) Counter {
	return remoteCounter{name: name, id: "remote:" + cacheID, count: count}
}

type remoteCounter struct {
	name, id string
	count    RemoteFunc
}

func (r remoteCounter) Name() string { return r.name }

func (r remoteCounter) Count(text string) (int, error) {
	if text == "" {
		return 0, nil
	}
	k := cacheKey{name: r.id, sum: sha256.Sum256(unsafe.Slice(unsafe.StringData(text), len(text)))}
	lc := cache.Load()
	if n, ok := lc.Get(k); ok {
		hits.Add(1)
		return n, nil
	}
	n, err := r.count(text)
	if err != nil {
		return 0, fmt.Errorf("tokens: %s: %w", r.name, err)
	}
	tokenize.Add(1)
	lc.Add(k, n, 1)
	return n, nil
}

// TruncateWith is Truncate for any counter: the longest prefix of text made of whole lines whose count is at most
// maxTokens, and that count. An encoding's counter takes Truncate's path (one encoding estimates the cut); any other
// searches the number of lines by bisection, counting O(log lines) prefixes, on the assumption that a longer
// prefix never has fewer tokens (true of the BPE and SentencePiece tokenizers servers use, up to merges at the cut,
// which the final check absorbs).
func TruncateWith(c Counter, text string, maxTokens int) (string, int, error) {
	if e, ok := c.(encodingCounter); ok {
		return Truncate(string(e), text, maxTokens)
	}
	total, err := c.Count(text)
	if err != nil {
		return "", 0, err
	}
	if total <= maxTokens {
		return text, total, nil
	}
	if maxTokens <= 0 {
		return "", 0, nil
	}
	ends := lineEnds(text)
	var searchErr error
	counts := map[int]int{}
	count := func(k int) int {
		if k == 0 {
			return 0
		}
		if n, ok := counts[k]; ok {
			return n
		}
		n, err := c.Count(text[:ends[k-1]])
		if err != nil && searchErr == nil {
			searchErr = err
		}
		counts[k] = n
		return n
	}
	// The first k whose prefix is over the budget; k-1 lines are kept.
	k := sort.Search(len(ends)+1, func(k int) bool { return count(k) > maxTokens }) - 1
	if searchErr != nil {
		return "", 0, searchErr
	}
	for k > 0 && count(k) > maxTokens {
		k--
	}
	if searchErr != nil {
		return "", 0, searchErr
	}
	if k <= 0 {
		return "", 0, nil
	}
	return text[:ends[k-1]], count(k), nil
}

// Resolver makes the counter of a remote tokenizer from the argument of its name ("MODEL" of "endpoint:MODEL").
type Resolver func(arg string) (Counter, error)

var (
	resolversMu sync.RWMutex
	resolvers   = map[string]Resolver{}
)

// Register makes tokenizer names "scheme:arg" count with the counter r returns. A package that reaches a tokenizer
// over the network registers its scheme in init (activities/llm: "endpoint"); a provider's own counting endpoint
// (Anthropic's count_tokens) plugs in the same way. Registering a scheme again replaces it.
func Register(scheme string, r Resolver) {
	resolversMu.Lock()
	defer resolversMu.Unlock()
	resolvers[scheme] = r
}

// Schemes lists the registered schemes, sorted.
func Schemes() []string {
	resolversMu.RLock()
	defer resolversMu.RUnlock()
	out := make([]string, 0, len(resolvers))
	for s := range resolvers {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// For returns the counter of a tokenizer name: an encoding, or "scheme:arg" of a registered scheme.
func For(name string) (Counter, error) {
	if r, ok, err := remoteFor(name); ok {
		return r, err
	}
	return Encoding(name)
}

// remoteFor resolves "scheme:arg"; ok is false for a name without a registered scheme.
func remoteFor(name string) (Counter, bool, error) {
	scheme, arg, found := strings.Cut(name, ":")
	if !found {
		return nil, false, nil
	}
	resolversMu.RLock()
	r, ok := resolvers[scheme]
	resolversMu.RUnlock()
	if !ok {
		return nil, false, nil
	}
	if arg == "" {
		return nil, true, fmt.Errorf("tokens: tokenizer %q names no model after %q", name, scheme+":")
	}
	c, err := r(arg)
	if err != nil {
		return nil, true, fmt.Errorf("tokens: %s: %w", name, err)
	}
	return c, true, nil
}
