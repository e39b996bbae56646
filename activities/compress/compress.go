// Package compress talks to token compressors (LLMLingua-2, LongLLMLingua, LongCodeZip, SWE-Pruner) through one
// small HTTP JSON protocol, and holds an in-process stand-in that honours the rate, for tests and the offline demo.
//
// The protocol (scripts/compress_server.py is a reference server wrapping the public Python packages):
//
//	POST {endpoint}/compress
//	{"compressor": "llmlingua2", "text": "...", "rate": 0.4, "query": "the issue text"}
//
//	200 {"text": "compressed text", "original_tokens": 1234, "compressed_tokens": 498}
//	4xx/5xx {"error": "why"}
//
// rate is the share of the text's tokens to keep, in (0, 1]; query is what question-aware compressors rank against
// (the issue); token counts are in the compressor's own tokenizer. 429 and 5xx answers are worth retrying; other 4xx
// answers are not.
package compress

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Request is one compression. Compressor is one of specs.Compressor's values (the reference server serves all but
// the stand-in, which FakeCompress is).
type Request struct {
	Compressor string  `json:"compressor"`
	Text       string  `json:"text"`
	Rate       float64 `json:"rate"`
	Query      string  `json:"query,omitempty"`
}

// Response is a compressed text.
type Response struct {
	Text             string `json:"text"`
	OriginalTokens   int    `json:"original_tokens"`
	CompressedTokens int    `json:"compressed_tokens"`
}

// Check reports a request no compressor can serve.
func (r Request) Check() error {
	if r.Compressor == "" {
		return errors.New("compress: no compressor named")
	}
	if !(r.Rate > 0 && r.Rate <= 1) {
		return fmt.Errorf("compress: rate %v must be in (0, 1]", r.Rate)
	}
	return nil
}

// Error is a failed call; Retryable says whether another attempt may succeed.
type Error struct {
	Status    int
	Msg       string
	Retryable bool
}

func (e *Error) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("compressor answered HTTP %d: %s", e.Status, e.Msg)
	}
	return "compressor: " + e.Msg
}

// Client calls a compression server.
type Client struct {
	Endpoint string
	HTTP     *http.Client
}

// NewClient returns a client for the server at endpoint (e.g. http://gpu-box:8100).
func NewClient(endpoint string) *Client {
	return &Client{Endpoint: strings.TrimSuffix(endpoint, "/"), HTTP: &http.Client{Timeout: 10 * time.Minute}}
}

// Compress sends one request.
func (c *Client) Compress(ctx context.Context, req Request) (Response, error) {
	var out Response
	if err := req.Check(); err != nil {
		return out, err
	}
	body, err := json.Marshal(req)
	if err != nil {
		return out, err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, c.Endpoint+"/compress", bytes.NewReader(body))
	if err != nil {
		return out, &Error{Msg: err.Error()}
	}
	hr.Header.Set("Content-Type", "application/json")
	resp, err := c.HTTP.Do(hr)
	if err != nil {
		return out, &Error{Msg: err.Error(), Retryable: true}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return out, &Error{Msg: "reading answer: " + err.Error(), Retryable: true}
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		msg := strings.TrimSpace(string(b))
		if json.Unmarshal(b, &e) == nil && e.Error != "" {
			msg = e.Error
		}
		if len(msg) > 500 {
			msg = msg[:500] + "..."
		}
		return out, &Error{Status: resp.StatusCode, Msg: msg,
			Retryable: resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500}
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return out, &Error{Status: resp.StatusCode, Msg: "answer is not a compression: " + err.Error(), Retryable: true}
	}
	return out, nil
}
