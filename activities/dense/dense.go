// Package dense ranks texts by embedding similarity through any OpenAI-compatible /v1/embeddings endpoint, with
// the official openai-go client. The endpoint and key come only from the environment (OPENAI_BASE_URL,
// OPENAI_API_KEY, read as the model providers read them); failures are *llm.Error; embeddings are cached by (model, sha256 of the text), so a re-run or a second method over the
// same chunks pays for nothing twice.
package dense

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"net/http"
	"sort"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"ctxlab/activities/api/errkind"
	"ctxlab/activities/llm"
	"ctxlab/activities/tokens"
)

// MaxInputTokens is where inputs are cut (whole lines, cl100k_base): OpenAI's embedding models take at most 8192.
const MaxInputTokens = 8000

// DefaultBatch is how many texts go in one request.
const DefaultBatch = 64

// Cache stores vectors by key.
type Cache interface {
	Get(key string) ([]float32, bool)
	Put(key string, v []float32) error
}

// Key is the cache key of a text under a model.
func Key(model, text string) string {
	h := sha256.New()
	h.Write([]byte(model))
	h.Write([]byte{0})
	h.Write([]byte(text))
	return hex.EncodeToString(h.Sum(nil))
}

// Client embeds texts.
type Client struct {
	oa    openai.Client
	ep    llm.Endpoint
	Model string
	Cache Cache
	Batch int
	// MaxInput cuts each text at this many tokens; 0 is MaxInputTokens.
	MaxInput int
	// Shared says the cache is shared by runs that may name other endpoints (starter run --cache): its keys name
	// the endpoint too, as the response cache's do.
	Shared bool
}

// key is a text's cache key: under another cut than MaxInputTokens the vector is another's, so the cut is in the key
// (and the keys of the default cut are as they always were), and so is the endpoint in a shared cache.
func (c *Client) key(text string) string {
	model := c.Model
	if c.MaxInput != 0 && c.MaxInput != MaxInputTokens {
		model = fmt.Sprintf("%s\x00cut at %d tokens", model, c.MaxInput)
	}
	if c.Shared {
		model = fmt.Sprintf("%s\x00endpoint %s", model, c.ep.Base)
	}
	return Key(model, text)
}

// NewFromEnv returns a client for the endpoint the environment names (llm.EndpointFromEnv: OPENAI_BASE_URL, default
// OpenAI's, and OPENAI_API_KEY). The key is never logged or returned in errors.
func NewFromEnv(model string, cache Cache) (*Client, error) {
	ep, err := llm.EndpointFromEnv()
	if err != nil {
		return nil, err
	}
	opts := append(ep.Options(nil), option.WithMaxRetries(2))
	return &Client{oa: openai.NewClient(opts...), ep: ep, Model: model, Cache: cache, Batch: DefaultBatch}, nil
}

// Stats count what a call did.
type Stats struct {
	Cached, Embedded, PromptTokens int
}

// Embed returns one vector per text, from the cache where it can.
func (c *Client) Embed(ctx context.Context, texts []string) ([][]float32, Stats, error) {
	var st Stats
	out := make([][]float32, len(texts))
	var todo []int
	dims := 0 // the model's dimension, once a vector says it
	for i, t := range texts {
		if v, ok := c.Cache.Get(c.key(t)); ok {
			if dims != 0 && len(v) != dims {
				return nil, st, fmt.Errorf("embeddings cache: vectors of %d and %d dimensions for model %s",
					dims, len(v), c.Model)
			}
			out[i], dims = v, len(v)
			st.Cached++
			continue
		}
		todo = append(todo, i)
	}
	batch := c.Batch
	if batch < 1 {
		batch = DefaultBatch
	}
	for len(todo) > 0 {
		n := min(batch, len(todo))
		part := todo[:n]
		todo = todo[n:]
		inputs := make([]string, n)
		for j, i := range part {
			in, _, err := tokens.Truncate(tokens.Cl100kBase, texts[i], cmp.Or(c.MaxInput, MaxInputTokens))
			if err != nil {
				return nil, st, err
			}
			if in == "" {
				in = " " // the endpoint refuses empty inputs
			}
			inputs[j] = in
		}
		var hres *http.Response
		resp, err := c.oa.Embeddings.New(ctx, openai.EmbeddingNewParams{
			Model: openai.EmbeddingModel(c.Model),
			Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: inputs},
		}, option.WithResponseInto(&hres))
		if err != nil {
			return nil, st, c.ep.Classify(ctx, ctx, hres, err, 0)
		}
		if len(resp.Data) != n {
			return nil, st, &llm.Error{Kind: errkind.BadResponse,
				Msg: fmt.Sprintf("asked for %d embeddings, got %d", n, len(resp.Data))}
		}
		size := 0
		for _, in := range inputs {
			size += len(in)
		}
		if err := llm.CheckEmbeddingTokens(resp.Usage.PromptTokens, size, n); err != nil {
			return nil, st, err
		}
		vecs, err := batchVectors(resp.Data, dims)
		if err != nil {
			return nil, st, err
		}
		dims = len(vecs[0])
		// The batch is stored only when all of it is sound: a broken answer leaves nothing in the cache.
		for j, v := range vecs {
			i := part[j]
			out[i] = v
			st.Embedded++
			if err := c.Cache.Put(c.key(texts[i]), v); err != nil {
				return nil, st, fmt.Errorf("embeddings cache: %w", err)
			}
		}
		st.PromptTokens += int(resp.Usage.PromptTokens)
	}
	return out, st, nil
}

// batchVectors places a batch's embeddings by index, each input's exactly once, every one of dims dimensions (the
// model's, from the vectors seen before; 0: the batch's first sets it), checked as llm.EmbeddingOf checks them.
func batchVectors(data []openai.Embedding, dims int) ([][]float32, error) {
	vecs := make([][]float32, len(data))
	for _, d := range data {
		if d.Index < 0 || int(d.Index) >= len(data) || vecs[d.Index] != nil {
			return nil, &llm.Error{Kind: errkind.BadResponse,
				Msg: fmt.Sprintf("an embedding of index %d, for %d inputs (or an input's second)", d.Index, len(data))}
		}
		v, err := llm.EmbeddingOf(d.Embedding, dims)
		if err != nil {
			return nil, err
		}
		vecs[d.Index], dims = v, len(v)
	}
	return vecs, nil
}

// Cosine is the cosine similarity of two vectors (0 when either is zero or their lengths differ).
func Cosine(a, b []float32) float64 {
	if len(a) != len(b) {
		return 0
	}
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}

// Rank orders docs by descending similarity to query; ties keep document order.
func Rank(query []float32, docs [][]float32) []int {
	s := make([]float64, len(docs))
	order := make([]int, len(docs))
	for i, d := range docs {
		s[i], order[i] = Cosine(query, d), i
	}
	sort.SliceStable(order, func(i, j int) bool { return s[order[i]] > s[order[j]] })
	return order
}
