// Package tokens counts tokens offline with the BPE encodings of github.com/tiktoken-go/tokenizer (whose ranks are
// compiled in, so no download ever happens), and with tokenizers that live elsewhere through a registered scheme
// (Register: "endpoint:MODEL" asks the model's server, see activities/llm). Counts are cached by (tokenizer, sha256
// of the text) so that budget fitting never tokenizes the same text twice. Everything here is safe for concurrent
// use.
package tokens

import (
	"crypto/sha256"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/tiktoken-go/tokenizer"

	"ctxlab/internal/lru"
)

// Names of the supported encodings.
const (
	O200kBase  = "o200k_base"
	Cl100kBase = "cl100k_base"
)

type codecSlot struct {
	once  sync.Once
	codec tokenizer.Codec
	err   error
}

var codecs = map[string]*codecSlot{
	O200kBase:  {},
	Cl100kBase: {},
}

// Known lists the supported encoding names, sorted.
func Known() []string {
	out := make([]string, 0, len(codecs))
	for n := range codecs {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// codec returns the codec for name, building it on first use only.
func codec(name string) (tokenizer.Codec, error) {
	slot, ok := codecs[name]
	if !ok {
		return nil, fmt.Errorf("tokens: unknown tokenizer %q (known: %s, or scheme:arg of %s)", name,
			strings.Join(Known(), ", "), strings.Join(Schemes(), ", "))
	}
	slot.once.Do(func() {
		slot.codec, slot.err = tokenizer.Get(tokenizer.Encoding(name))
		if slot.err != nil {
			slot.err = fmt.Errorf("tokens: loading %s: %w", name, slot.err)
		}
	})
	return slot.codec, slot.err
}

// DefaultCacheEntries bounds the count cache. An entry is about 100 bytes, so the default costs a few MiB at most.
const DefaultCacheEntries = 1 << 16

type cacheKey struct {
	name string
	sum  [sha256.Size]byte
}

// countCache holds counts by key, each entry of cost 1: its bound is a number of entries.
type countCache = lru.Cache[cacheKey, int]

var (
	cache          atomic.Pointer[countCache]
	hits, tokenize atomic.Uint64
)

func init() { cache.Store(lru.New[cacheKey, int](DefaultCacheEntries)) }

// SetCacheSize replaces the cache with an empty one holding at most n entries (n < 1 means 1). Meant for start-up
// configuration and tests.
func SetCacheSize(n int) {
	cache.Store(lru.New[cacheKey, int](int64(n)))
}

// Stats reports cache hits, texts actually tokenized by Count, and entries held.
type Stats struct {
	Hits, Tokenized uint64
	Entries         int
}

// CacheStats returns counters since the process started.
func CacheStats() Stats {
	return Stats{Hits: hits.Load(), Tokenized: tokenize.Load(), Entries: cache.Load().Len()}
}

// Count returns the number of tokens text has in the named tokenizer: an encoding (o200k_base or cl100k_base), or
// "scheme:arg" of a registered remote tokenizer (Register; "endpoint:MODEL" is a server's own). Special-token
// strings such as "<|endoftext|>" are counted as ordinary text, which is what a prompt containing them costs.
func Count(name, text string) (int, error) {
	if r, ok, err := remoteFor(name); ok {
		if err != nil {
			return 0, err
		}
		return r.Count(text)
	}
	c, err := codec(name)
	if err != nil {
		return 0, err
	}
	if text == "" {
		return 0, nil
	}
	// Hash the string's bytes in place: converting a large text to []byte would copy it.
	k := cacheKey{name: name, sum: sha256.Sum256(unsafe.Slice(unsafe.StringData(text), len(text)))}
	lc := cache.Load()
	if n, ok := lc.Get(k); ok {
		hits.Add(1)
		return n, nil
	}
	n, err := c.Count(text)
	if err != nil {
		return 0, fmt.Errorf("tokens: %s: %w", name, err)
	}
	tokenize.Add(1)
	lc.Add(k, n, 1)
	return n, nil
}

// Truncate returns the longest prefix of text made of whole lines (each with its "\n"; a last line without one
// counts as a line) whose token count is at most maxTokens, and that count. A text that fits is returned whole; if even
// the first line is too long the result is "" and 0.
//
// Tokenization is not additive across line boundaries, so the cut is first estimated from one encoding of the whole
// text and then checked (and moved line by line if needed) by counting the candidate prefix exactly.
func Truncate(name, text string, maxTokens int) (string, int, error) {
	if r, ok, err := remoteFor(name); ok {
		if err != nil {
			return "", 0, err
		}
		return TruncateWith(r, text, maxTokens)
	}
	c, err := codec(name)
	if err != nil {
		return "", 0, err
	}
	total, err := Count(name, text)
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
	// Estimate: number of tokens of the full encoding that end at or before each line end.
	_, toks, err := c.Encode(text)
	if err != nil {
		return "", 0, fmt.Errorf("tokens: %s: %w", name, err)
	}
	est := make([]int, len(ends))
	off, ti := 0, 0
	for li, end := range ends {
		for ti < len(toks) && off+len(toks[ti]) <= end {
			off += len(toks[ti])
			ti++
		}
		est[li] = ti
	}
	// k = number of whole lines kept; start from the estimate.
	k := sort.Search(len(ends), func(i int) bool { return est[i] > maxTokens })
	exact := func(k int) (int, error) {
		if k == 0 {
			return 0, nil
		}
		return c.Count(text[:ends[k-1]])
	}
	n, err := exact(k)
	if err != nil {
		return "", 0, fmt.Errorf("tokens: %s: %w", name, err)
	}
	movedDown := false
	for n > maxTokens && k > 0 {
		k--
		movedDown = true
		if n, err = exact(k); err != nil {
			return "", 0, fmt.Errorf("tokens: %s: %w", name, err)
		}
	}
	for !movedDown && k < len(ends) {
		next, err := exact(k + 1)
		if err != nil {
			return "", 0, fmt.Errorf("tokens: %s: %w", name, err)
		}
		if next > maxTokens {
			break
		}
		k, n = k+1, next
	}
	if k == 0 {
		return "", 0, nil
	}
	return text[:ends[k-1]], n, nil
}

// lineEnds returns the byte offset just after each line of text (the last line may lack its newline): the cut points
// a truncation keeps whole lines at.
func lineEnds(text string) []int {
	var ends []int
	for i := 0; i < len(text); {
		j := strings.IndexByte(text[i:], '\n')
		if j < 0 {
			ends = append(ends, len(text))
			break
		}
		i += j + 1
		ends = append(ends, i)
	}
	return ends
}
