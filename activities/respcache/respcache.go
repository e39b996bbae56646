// Package respcache remembers model answers by request, so that a re-run, a resumed sweep or a new spec that asks
// a question already asked (a new ablation sharing steps with a finished method) pays only for calls never made
// before. The key covers everything that shapes the answer: provider, model id, endpoint, sampling parameters,
// messages and sample index. Labels and prices do not: renaming a model or correcting its price does not pay
// for the same answers again.
package respcache

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"path"
	"time"

	"ctxlab/activities/llm"
	"ctxlab/specs"
	"ctxlab/store/objects"
)

// Request is what a cache key is computed from.
type Request struct {
	Provider string `json:"provider"`
	ModelID  string `json:"model_id"`
	// Endpoint is the base URL the request goes to: the same model id behind two servers is two models.
	Endpoint    string   `json:"endpoint"`
	Temperature *float64 `json:"temperature,omitempty"`
	// MaxTokens is the cap the call asks for (llm.MaxTokensCap: the spec's, or ctxlab's default where it applies),
	// and ContextWindow the model's context as the endpoint reported it: the provider lowers the cap to what the
	// context leaves beside the prompt, so the two (with the messages) decide the max_tokens sent. An answer made
	// under another cap or window is another answer. ContextWindow is omitted when unknown, so the keys of calls to
	// endpoints that report none are what they were.
	MaxTokens     int           `json:"max_tokens,omitempty"`
	ContextWindow int           `json:"context_window,omitempty"`
	Seed          *int64        `json:"seed,omitempty"`
	Task          string        `json:"task"`
	Messages      []llm.Message `json:"messages"`
	Sample        int           `json:"sample"`
	// Tools offered natively make another request than the same conversation without them (omitted when none, so
	// the keys of other requests are unchanged).
	Tools []llm.Tool `json:"tools,omitempty"`
}

// For is the cache request of one call of model m (the sampled model: its seed and temperature already set for the
// sample) against endpoint.
func For(m specs.Model, endpoint string, req llm.Request) Request {
	maxTokens := m.MaxTokens
	switch m.Provider {
	case "openai":
		maxTokens = llm.MaxTokensCap(m.MaxTokens, endpoint, req.Context)
	case "anthropic":
		maxTokens = llm.AnthropicMaxTokens(m.MaxTokens)
	}
	return Request{Provider: m.Provider, ModelID: m.ID, Endpoint: endpoint, Temperature: m.Temperature,
		MaxTokens: maxTokens, ContextWindow: req.Context, Seed: m.Seed, Task: req.Task, Messages: req.Messages,
		Sample: req.Sample, Tools: req.Tools}
}

// Key is the request's hex digest.
func (r Request) Key() string {
	b, err := json.Marshal(r) // fields in declaration order: a stable encoding
	if err != nil {
		panic("respcache: " + err.Error()) // plain strings and numbers always marshal
	}
	sum := sha256.Sum256(append([]byte("ctxlab-response-v1\x00"), b...))
	return hex.EncodeToString(sum[:])
}

// Entry is one cached answer.
type Entry struct {
	Response llm.Response `json:"response"`
	Provider string       `json:"provider"`
	ModelID  string       `json:"model_id"`
	Created  time.Time    `json:"created"`
}

// Cache is a folder of answers in a store of keyed objects: the run's own (its content store folder, in the run
// folder or the shared store) or one shared by several experiments.
type Cache struct {
	answers objects.Keyed
	windows objects.Keyed
}

// Open returns the cache kept in the folder base of s: base/responses, base/windows and their locks in base/locks.
func Open(s objects.Store, base string) Cache {
	return Cache{answers: objects.Keyed{S: s, Prefix: path.Join(base, "responses"), Locks: path.Join(base, "locks"),
		Durable: true}, windows: objects.Keyed{S: s, Prefix: path.Join(base, "windows")}}
}

// Lock makes the caller the only one asking the request key until unlock: two nodes of different methods can ask
// the same question at the same moment (after a restart, say), and the second must wait for the first's answer in
// the cache rather than pay for it again. It holds across processes sharing the store (objects.Store.Lock).
func (c Cache) Lock(ctx context.Context, key string) (unlock func(), err error) {
	return c.answers.Lock(ctx, key)
}

// Get returns the answer stored for key.
func (c Cache) Get(ctx context.Context, key string) (Entry, bool) {
	var e Entry
	if !c.answers.Get(ctx, key, &e) || e.Created.IsZero() {
		return Entry{}, false
	}
	return e, true
}

// Put stores an answer. It is written before the caller returns the answer, so a process killed right after the
// call does not pay for it again. The first answer stored for a key stays, unless replace (a run that does not read
// the cache asked again on purpose, and its answer is the one to keep).
func (c Cache) Put(ctx context.Context, key string, r Request, resp llm.Response, replace bool) error {
	e := Entry{Response: resp, Provider: r.Provider, ModelID: r.ModelID, Created: time.Now().UTC()}
	if replace {
		return c.answers.Put(ctx, key, e)
	}
	_, err := c.answers.Create(ctx, key, &e, func(stored any) bool { return !stored.(*Entry).Created.IsZero() })
	return err
}

// windowKey names the record of a model's context window at an endpoint.
func windowKey(endpoint, modelID string) string {
	sum := sha256.Sum256([]byte("ctxlab-window-v1\x00" + endpoint + "\x00" + modelID))
	return hex.EncodeToString(sum[:])
}

// Window returns the context window last recorded for a model at an endpoint.
func (c Cache) Window(ctx context.Context, endpoint, modelID string) (llm.Window, bool) {
	var w llm.Window
	ok := c.windows.Get(ctx, windowKey(endpoint, modelID), &w) && w.Tokens > 0
	return w, ok
}

// PutWindow records the context window an endpoint reported for a model: the cache keys of its calls depend on it,
// and a re-run with the server down must find the same keys.
func (c Cache) PutWindow(ctx context.Context, endpoint, modelID string, w llm.Window) error {
	return c.windows.Put(ctx, windowKey(endpoint, modelID), w)
}
