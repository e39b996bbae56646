package dense

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"ctxlab/activities/api/errkind"
	"ctxlab/activities/llm"
)

// embedServer answers /v1/embeddings with a bag-of-letters vector per input, and counts inputs and keys seen.
func embedServer(t *testing.T, inputs *atomic.Int32, status int) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path != "/v1/embeddings" || r.Header.Get("Authorization") != "Bearer test-key" {
			w.WriteHeader(401)
			w.Write([]byte(`{"error":{"message":"bad path or key"}}`))
			return
		}
		if status != 0 {
			w.WriteHeader(status)
			w.Write([]byte(`{"error":{"message":"overloaded","type":"server_error"}}`))
			return
		}
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model != "embed-small" {
			w.WriteHeader(400)
			w.Write([]byte(`{"error":{"message":"bad request"}}`))
			return
		}
		type item struct {
			Object    string    `json:"object"`
			Index     int       `json:"index"`
			Embedding []float64 `json:"embedding"`
		}
		var data []item
		for i, in := range req.Input {
			inputs.Add(1)
			v := make([]float64, 26)
			for _, c := range strings.ToLower(in) {
				if c >= 'a' && c <= 'z' {
					v[c-'a']++
				}
			}
			data = append(data, item{"embedding", i, v})
		}
		// Answer out of order: the client must place vectors by index.
		for i, j := 0, len(data)-1; i < j; i, j = i+1, j-1 {
			data[i], data[j] = data[j], data[i]
		}
		json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "model": req.Model,
			"usage": map[string]int{"prompt_tokens": 7, "total_tokens": 7}})
	}))
}

func TestEmbedRankAndCache(t *testing.T) {
	var inputs atomic.Int32
	srv := embedServer(t, &inputs, 0)
	defer srv.Close()
	t.Setenv("OPENAI_BASE_URL", srv.URL+"/v1")
	t.Setenv("OPENAI_API_KEY", "test-key")
	cache := memCache{}
	c, err := NewFromEnv("embed-small", cache)
	if err != nil {
		t.Fatal(err)
	}
	c.Batch = 2
	docs := []string{"zzz yyy", "aaa bbb", "aab"}
	vecs, st, err := c.Embed(context.Background(), docs)
	if err != nil {
		t.Fatal(err)
	}
	if st.Embedded != 3 || st.Cached != 0 || inputs.Load() != 3 || st.PromptTokens != 14 {
		t.Errorf("first call: %+v, %d inputs sent", st, inputs.Load())
	}
	q, _, err := c.Embed(context.Background(), []string{"aab aab"})
	if err != nil {
		t.Fatal(err)
	}
	if r := Rank(q[0], vecs); r[0] != 2 || r[1] != 1 || r[2] != 0 {
		t.Errorf("rank %v", r)
	}
	// Same texts again: all from the cache, nothing sent.
	_, st, err = c.Embed(context.Background(), docs)
	if err != nil || st.Cached != 3 || st.Embedded != 0 || inputs.Load() != 4 {
		t.Errorf("second call: %+v %v, %d inputs sent", st, err, inputs.Load())
	}
}

func TestErrorsNeverCarryTheKey(t *testing.T) {
	var inputs atomic.Int32
	srv := embedServer(t, &inputs, 503)
	defer srv.Close()
	t.Setenv("OPENAI_BASE_URL", srv.URL+"/v1")
	t.Setenv("OPENAI_API_KEY", "test-key")
	c, _ := NewFromEnv("embed-small", memCache{})
	_, _, err := c.Embed(context.Background(), []string{"x"})
	var e *llm.Error
	if !errors.As(err, &e) || e.Status != 503 || !e.Kind.Retryable() || strings.Contains(err.Error(), "test-key") {
		t.Errorf("503: %v", err)
	}
	t.Setenv("OPENAI_API_KEY", "wrong")
	c, _ = NewFromEnv("embed-small", memCache{})
	_, _, err = c.Embed(context.Background(), []string{"x"})
	if !errors.As(err, &e) || e.Status != 401 || e.Kind.Retryable() || strings.Contains(err.Error(), "wrong") {
		t.Errorf("401: %v", err)
	}
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	// No key for OpenAI's own endpoint: an authentication error naming the variable, before any call.
	if _, err := NewFromEnv("m", memCache{}); llm.KindOf(err) != errkind.Auth || !strings.Contains(err.Error(), "OPENAI_API_KEY") {
		t.Errorf("no endpoint: %v", err)
	}
}

// TestEmbeddingNumbersAreChecked: an endpoint's embeddings are checked before they rank anything: vectors of one
// model share one dimension (across a call's batches and its cached vectors), every input gets exactly one vector,
// every value is a finite float32, and the usage is a count consistent with the inputs' length. Each broken answer
// is the endpoint's (bad_response), and nothing of it is cached.
func TestEmbeddingNumbersAreChecked(t *testing.T) {
	for name, answer := range map[string]string{
		"dimensions differ":    `{"data":[{"index":0,"embedding":[1,0,0]},{"index":1,"embedding":[1,0]}],"usage":{"prompt_tokens":4}}`,
		"one input twice":      `{"data":[{"index":0,"embedding":[1,0]},{"index":0,"embedding":[0,1]}],"usage":{"prompt_tokens":4}}`,
		"past float32":         `{"data":[{"index":0,"embedding":[1e300,0]},{"index":1,"embedding":[0,1]}],"usage":{"prompt_tokens":4}}`,
		"negative usage":       `{"data":[{"index":0,"embedding":[1,0]},{"index":1,"embedding":[0,1]}],"usage":{"prompt_tokens":-1000000}}`,
		"usage past the input": `{"data":[{"index":0,"embedding":[1,0]},{"index":1,"embedding":[0,1]}],"usage":{"prompt_tokens":9000000}}`,
		"other than cached":    `{"data":[{"index":0,"embedding":[1,0,0,0]},{"index":1,"embedding":[0,1,0,0]}],"usage":{"prompt_tokens":4}}`,
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Write([]byte(answer))
			}))
			defer srv.Close()
			t.Setenv("OPENAI_BASE_URL", srv.URL+"/v1")
			t.Setenv("OPENAI_API_KEY", "test-key")
			cache := memCache{}
			// A vector of two dimensions from before: the model's dimension.
			if err := cache.Put(Key("embed-small", "cached"), []float32{1, 1}); err != nil {
				t.Fatal(err)
			}
			c, _ := NewFromEnv("embed-small", cache)
			texts := []string{"cached", "ab", "cd"}
			vecs, st, err := c.Embed(context.Background(), texts)
			var e *llm.Error
			if !errors.As(err, &e) || e.Kind != errkind.BadResponse {
				t.Fatalf("answer %s: vectors %v, %+v, error %v; want the endpoint's bad_response", answer, vecs, st, err)
			}
			for _, text := range texts[1:] {
				if _, ok := cache.Get(Key("embed-small", text)); ok {
					t.Errorf("%q cached from a broken answer", text)
				}
			}
		})
	}
}

// memCache is a Cache in memory.
type memCache map[string][]float32

func (c memCache) Get(key string) ([]float32, bool) { v, ok := c[key]; return v, ok }

func (c memCache) Put(key string, v []float32) error { c[key] = v; return nil }

// A cut shorter than MaxInputTokens sends shorter inputs, and its vectors are cached apart from the default cut's:
// the same text under another cut is embedded again, not read from the other's vector.
func TestMaxInputCutsAndKeysApart(t *testing.T) {
	var inputs atomic.Int32
	var longest atomic.Int32
	srv := embedServer(t, &inputs, 0)
	defer srv.Close()
	measure := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct{ Input []string }
		_ = json.Unmarshal(body, &req)
		for _, in := range req.Input {
			if n := int32(len(strings.Split(in, "\n"))); n > longest.Load() {
				longest.Store(n)
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		httputil.NewSingleHostReverseProxy(mustURL(t, srv.URL)).ServeHTTP(w, r)
	}))
	defer measure.Close()
	t.Setenv("OPENAI_BASE_URL", measure.URL+"/v1")
	t.Setenv("OPENAI_API_KEY", "test-key")
	cache := memCache{}
	long := strings.Repeat("alpha beta gamma delta\n", 60) // about 300 tokens, 60 lines
	cut, err := NewFromEnv("embed-small", cache)
	if err != nil {
		t.Fatal(err)
	}
	cut.MaxInput = 20
	if _, _, err := cut.Embed(context.Background(), []string{long}); err != nil {
		t.Fatal(err)
	}
	if n := longest.Load(); n < 2 || n > 8 {
		t.Errorf("cut at 20 tokens: the longest input sent has %d lines, want about 4", n)
	}
	full, _ := NewFromEnv("embed-small", cache)
	_, st, err := full.Embed(context.Background(), []string{long})
	if err != nil || st.Cached != 0 || st.Embedded != 1 {
		t.Errorf("the default cut read the 20-token cut's vector: %+v %v", st, err)
	}
	if n := longest.Load(); n < 60 {
		t.Errorf("the default cut sent %d lines of 60", n)
	}
	if _, st, _ := cut.Embed(context.Background(), []string{long}); st.Cached != 1 {
		t.Errorf("the 20-token cut again: %+v, want its own vector from the cache", st)
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
