package llm

import (
	"ctxlab/activities/api/errkind"
	"encoding/json"
	"fmt"
	"math"
)

// An endpoint's numbers are untrusted: a token count becomes a budget and a spend reservation, a usage becomes
// money, a context window decides what is sent, an embedding ranks files. Every number an endpoint reports is read
// through this file, which refuses what no real server sends: a value of the wrong type, out of range, or
// inconsistent with the length of the text it counts. A refused number is the endpoint's broken answer
// (errkind.BadResponse: retried, then failed as the endpoint's), never a count.

// maxUsageTokens bounds the token counts a call may report: no model reads or writes ten million tokens in one
// call, so a count above it is a broken answer, never money.
const maxUsageTokens = 10_000_000

// maxTokenBytes bounds the bytes of one token: the longest token of o200k_base and cl100k_base is 128 bytes (a run
// of spaces); twice that leaves room for other vocabularies. A text of n bytes is at least n/maxTokenBytes tokens.
const maxTokenBytes = 256

// countSlack is what a count may add to a text's bytes (at most a token a byte, as byte-level BPE and SentencePiece
// with byte fallback have): a begin-of-text token, SentencePiece's leading space.
const countSlack = 16

// maxFramingTokens bounds what Anthropic's count_tokens adds for the one user message a text is sent in (a few
// tokens in practice).
const maxFramingTokens = 64

// maxWindowTokens bounds a context window: no model reads a hundred million tokens. maxSlots bounds how many
// requests a server says it serves at once.
const (
	maxWindowTokens = 100_000_000
	maxSlots        = 4096
)

// maxEmbeddingDims bounds an embedding's dimension (the largest models' are a few thousand).
const maxEmbeddingDims = 1 << 16

// tokenCount reads one token count an endpoint sent as JSON: absent or null is 0; anything but a whole number from 0
// to most is refused.
func tokenCount(name string, raw json.RawMessage, most int) (int, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, nil
	}
	var f float64
	if err := json.Unmarshal(raw, &f); err != nil {
		return 0, fmt.Errorf("%s is %s, not a number", name, clip(string(raw), 40))
	}
	if math.IsNaN(f) || f < 0 || f != math.Trunc(f) || f > float64(most) {
		return 0, fmt.Errorf("%s is %s: a token count is a whole number from 0 to %d", name,
			clip(string(raw), 40), most)
	}
	return int(f), nil
}

// UsageCount reads one token count of a call's usage as an endpoint sent it (name says where): absent or null is 0;
// anything but a whole number from 0 to maxUsageTokens is refused. A provider's usage reader reads its counts with it.
func UsageCount(name string, raw json.RawMessage) (int, error) {
	return tokenCount(name, raw, maxUsageTokens)
}

// usageOf reads a completion's usage from its body, refusing counts that cannot be real: negative, not a whole
// number, not a number at all, or above maxUsageTokens. A body without usage reports none (0, 0).
func usageOf(body []byte) (Usage, error) {
	var top struct {
		Usage *struct {
			Prompt     json.RawMessage `json:"prompt_tokens"`
			Completion json.RawMessage `json:"completion_tokens"`
			Details    *struct {
				Cached json.RawMessage `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(body, &top); err != nil {
		return Usage{}, fmt.Errorf("the usage does not parse: %v", err)
	}
	if top.Usage == nil {
		return Usage{}, nil
	}
	p, err := tokenCount("usage.prompt_tokens", top.Usage.Prompt, maxUsageTokens)
	if err != nil {
		return Usage{}, err
	}
	c, err := tokenCount("usage.completion_tokens", top.Usage.Completion, maxUsageTokens)
	if err != nil {
		return Usage{}, err
	}
	u := Usage{PromptTokens: p, CompletionTokens: c}
	if d := top.Usage.Details; d != nil {
		u.CachedTokens, err = tokenCount("usage.prompt_tokens_details.cached_tokens", d.Cached, maxUsageTokens)
		if err != nil {
			return Usage{}, err
		}
		if u.CachedTokens > p {
			return Usage{}, fmt.Errorf("usage.prompt_tokens_details.cached_tokens is %d, more than the %d prompt "+
				"tokens it is part of", u.CachedTokens, p)
		}
	}
	return u, nil
}

// anthropicUsage reads a message's usage, refusing counts that cannot be real (as usageOf does). The prompt's
// tokens are input_tokens (those after the last cache breakpoint) plus the cache's reads and writes.
func anthropicUsage(body []byte) (Usage, error) {
	var top struct {
		Usage *struct {
			Input      json.RawMessage `json:"input_tokens"`
			Output     json.RawMessage `json:"output_tokens"`
			CacheRead  json.RawMessage `json:"cache_read_input_tokens"`
			CacheWrite json.RawMessage `json:"cache_creation_input_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(body, &top); err != nil {
		return Usage{}, fmt.Errorf("the usage does not parse: %v", err)
	}
	if top.Usage == nil {
		return Usage{}, nil
	}
	var n [4]int
	for i, f := range []struct {
		name string
		raw  json.RawMessage
	}{{"input_tokens", top.Usage.Input}, {"output_tokens", top.Usage.Output},
		{"cache_read_input_tokens", top.Usage.CacheRead}, {"cache_creation_input_tokens", top.Usage.CacheWrite}} {
		var err error
		if n[i], err = tokenCount("usage."+f.name, f.raw, maxUsageTokens); err != nil {
			return Usage{}, err
		}
	}
	if n[0]+n[2]+n[3] > maxUsageTokens {
		return Usage{}, fmt.Errorf("usage reports %d input tokens in all, more than %d", n[0]+n[2]+n[3], maxUsageTokens)
	}
	return Usage{PromptTokens: n[0] + n[2] + n[3], CompletionTokens: n[1], CachedTokens: n[2], CacheWriteTokens: n[3]}, nil
}

// tokenBounds is the least and the most tokens a text of size bytes may count in any real tokenizer.
func tokenBounds(size int) (lo, hi int) {
	return size / maxTokenBytes, size + countSlack
}

// textTokens checks n, an endpoint's count of the tokens of a text of size bytes: what names the count in the
// error (the endpoint's route).
func textTokens(what string, n, size int) *Error {
	lo, hi := tokenBounds(size)
	if n < lo || n > hi {
		return &Error{Kind: errkind.BadResponse, Msg: fmt.Sprintf("%s: %d tokens in a text of %d bytes; a real tokenizer "+
			"counts from %d to %d", what, n, size, lo, hi)}
	}
	return nil
}

// CheckTextTokens is textTokens for a count read outside this package (starter check's /tokenize of an issue).
func CheckTextTokens(what string, n int, text string) error {
	if e := textTokens(what, n, len(text)); e != nil {
		return e
	}
	return nil
}

// templateTokens bounds what a chat template adds to a message (its role markers; a default system prompt).
const templateTokens = 256

// renderedTokens reports whether n can be a server's count of msgs rendered by its chat template.
func renderedTokens(n int, msgs []Message) bool {
	size := 0
	for _, m := range msgs {
		size += len(m.Content)
	}
	lo, hi := tokenBounds(size)
	return n > 0 && n >= lo && n <= hi+templateTokens*len(msgs)
}

// framingTokens checks count_tokens' count of a one-character message: its framing and the character.
func framingTokens(n int) *Error {
	if n < 1 || n > maxFramingTokens+1 {
		return &Error{Kind: errkind.BadResponse, Msg: fmt.Sprintf("count_tokens: %d tokens for a one-character message; "+
			"a message's framing is at most %d", n, maxFramingTokens)}
	}
	return nil
}

// CheckUsage holds every count of a usage, whoever read it (a provider's reader, a recorded answer), to what a
// call can report: 0 to maxUsageTokens each, the prompt's cache reads and writes part of the prompt.
func CheckUsage(u Usage) error {
	for _, c := range []struct {
		name string
		n    int
	}{{"prompt", u.PromptTokens}, {"answer", u.CompletionTokens}, {"cache reads", u.CachedTokens},
		{"cache writes", u.CacheWriteTokens}} {
		if c.n < 0 || c.n > maxUsageTokens {
			return fmt.Errorf("%d tokens of %s: a token count is a whole number from 0 to %d", c.n, c.name,
				maxUsageTokens)
		}
	}
	if u.CachedTokens+u.CacheWriteTokens > u.PromptTokens {
		return fmt.Errorf("%d cached and %d cache-write tokens, more than the %d prompt tokens they are part of",
			u.CachedTokens, u.CacheWriteTokens, u.PromptTokens)
	}
	return nil
}

// checkUsage holds a call's usage against what was sent and what came back: the prompt's tokens against the
// request's text (its messages and tools), the answer's against the answer. Only a floor is held for the answer:
// reasoning tokens count beside it, unseen. An answer that fails is no money (usage that cannot be real).
func checkUsage(u Usage, req Request, answer string) *Error {
	if err := CheckUsage(u); err != nil {
		return &Error{Kind: errkind.BadResponse, Msg: "the endpoint reported impossible usage: " + err.Error()}
	}
	sent := 0
	for _, m := range req.Messages {
		sent += len(m.Content)
	}
	lo, _ := tokenBounds(sent)
	if u.PromptTokens < lo {
		return &Error{Kind: errkind.BadResponse, Msg: fmt.Sprintf("the endpoint reported impossible usage: %d prompt "+
			"tokens for %d bytes of messages (at least %d)", u.PromptTokens, sent, lo)}
	}
	if lo, _ := tokenBounds(len(answer)); u.CompletionTokens < lo {
		return &Error{Kind: errkind.BadResponse, Msg: fmt.Sprintf("the endpoint reported impossible usage: %d "+
			"completion tokens for an answer of %d bytes (at least %d)", u.CompletionTokens, len(answer), lo)}
	}
	return nil
}

// windowOf is the window an endpoint reported, or none (Window{}) when its numbers are not a real server's: a
// context of 1 to maxWindowTokens tokens, 0 to maxSlots slots.
func windowOf(tokens, slots int, source string) Window {
	if tokens <= 0 || tokens > maxWindowTokens || slots < 0 || slots > maxSlots {
		return Window{}
	}
	return Window{Tokens: tokens, Source: source, Slots: slots}
}

// EmbeddingOf converts an endpoint's embedding to float32, refusing one whose dimension is out of range or other
// than dims (when dims > 0: the dimension of the model's vectors seen before), or whose values are not finite
// float32 numbers.
func EmbeddingOf(values []float64, dims int) ([]float32, error) {
	if len(values) == 0 || len(values) > maxEmbeddingDims || (dims > 0 && len(values) != dims) {
		return nil, &Error{Kind: errkind.BadResponse, Msg: fmt.Sprintf("an embedding of %d dimensions (the model's "+
			"other vectors: %d; at most %d)", len(values), dims, maxEmbeddingDims)}
	}
	v := make([]float32, len(values))
	for k, x := range values {
		v[k] = float32(x)
		if math.IsNaN(float64(v[k])) || math.IsInf(float64(v[k]), 0) {
			return nil, &Error{Kind: errkind.BadResponse, Msg: fmt.Sprintf("an embedding's value %g is not a float32", x)}
		}
	}
	return v, nil
}

// CheckEmbeddingTokens checks the prompt tokens an embeddings answer reports for inputs of size bytes in all, of
// count inputs (each may gain countSlack).
func CheckEmbeddingTokens(n int64, size, count int) error {
	lo, _ := tokenBounds(size)
	hi := size + count*countSlack
	if n < int64(lo) || n > int64(hi) {
		return &Error{Kind: errkind.BadResponse, Msg: fmt.Sprintf("the embeddings' usage: %d prompt tokens for %d "+
			"inputs of %d bytes; a real tokenizer counts from %d to %d", n, count, size, lo, hi)}
	}
	return nil
}
