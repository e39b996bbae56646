package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"time"

	"ctxlab/activities/api/errkind"
	"ctxlab/activities/tokens"
	"ctxlab/specs"
)

// Root is the server's root URL for an OpenAI-compatible base URL: the base without its "/v1", with a final "/".
func Root(base string) string {
	return strings.TrimSuffix(strings.TrimSuffix(base, "/"), "/v1") + "/"
}

// tokenizeTimeout bounds one /tokenize request.
const tokenizeTimeout = 2 * time.Minute

// EndpointCounter is the openai provider's counter (its scheme: tokenizer "endpoint:MODEL"): it asks the endpoint
// OPENAI_BASE_URL names to tokenize (POST {root}/tokenize) for model id; answers are cached by (server, model, text
// digest). The body carries both servers' fields:
// llama.cpp reads content and answers {"tokens": [...]}, vLLM reads model and prompt and answers {"count": n, ...}.
// Special tokens (a BOS a server would add) are not counted: a budget counts the text.
func EndpointCounter(ctx context.Context, id string) (tokens.Counter, error) {
	ep, err := EndpointFromEnv()
	if err != nil {
		return nil, err
	}
	root := Root(ep.Base)
	client := &http.Client{Timeout: tokenizeTimeout}
	count := func(text string) (int, error) {
		body, err := json.Marshal(map[string]any{"content": text, "prompt": text, "model": id,
			"add_special": false, "add_special_tokens": false})
		if err != nil {
			return 0, err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, root+"tokenize", bytes.NewReader(body))
		if err != nil {
			return 0, err
		}
		req.Header.Set("Content-Type", "application/json")
		if ep.key != "" {
			req.Header.Set("Authorization", "Bearer "+ep.key)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, &Error{Kind: errkind.Server, Msg: ScrubSecrets("POST /tokenize: " + err.Error())}
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
		if err != nil {
			return 0, &Error{Kind: errkind.Server, Msg: "POST /tokenize: reading the answer: " + err.Error()}
		}
		if resp.StatusCode != http.StatusOK {
			kind := errkind.BadRequest
			if resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests {
				kind = errkind.Server
			}
			return 0, &Error{Kind: kind, Status: resp.StatusCode, Msg: ScrubSecrets(fmt.Sprintf(
				"POST /tokenize: the server does not tokenize for model %s (its own tokenizer is asked for by "+
					"tokenizer 'endpoint'; llama.cpp and vLLM serve it): %s", id, snippet(b)))}
		}
		return tokenizeAnswer(b, len(text))
	}
	name := specs.OpenAI.Counting.Scheme + ":" + id
	return tokens.Remote(name, root+"\x00"+id, count), nil
}

// tokenizeAnswer is the count a /tokenize answer gives for a text of size bytes: llama.cpp's list of tokens, or
// vLLM's count, checked as every count an endpoint gives (textTokens).
func tokenizeAnswer(b []byte, size int) (int, error) {
	var out struct {
		Tokens []json.RawMessage `json:"tokens"`
		Count  json.RawMessage   `json:"count"`
	}
	err := json.Unmarshal(b, &out)
	counted := out.Count != nil && string(out.Count) != "null"
	if err != nil || (out.Tokens == nil && !counted) {
		return 0, &Error{Kind: errkind.BadResponse, Msg: "POST /tokenize: an answer with neither tokens nor count: " +
			ScrubSecrets(snippet(b))}
	}
	n := len(out.Tokens)
	if counted { // any whole number here: textTokens holds it to the text's bounds
		if n, err = tokenCount("count", out.Count, math.MaxInt); err != nil {
			return 0, &Error{Kind: errkind.BadResponse, Msg: "POST /tokenize: " + err.Error()}
		}
	}
	if e := textTokens("POST /tokenize", n, size); e != nil {
		return 0, e
	}
	return n, nil
}

func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}
