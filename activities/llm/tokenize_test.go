package llm

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"ctxlab/activities/api/errkind"
	"ctxlab/activities/tokens"
	"ctxlab/specs"
)

// TestEndpointTokenizer holds the endpoint tokenizer to both servers' /tokenize shapes: llama.cpp's (content in,
// tokens out) and vLLM's (model and prompt in, count out), at the server's root beside /v1, never counting special
// tokens, each text asked once; a server without /tokenize is the spec's error, a 5xx one to retry.
func TestEndpointTokenizer(t *testing.T) {
	var asked atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		if body["add_special"] != false || body["add_special_tokens"] != false {
			t.Errorf("special tokens not turned off: %v", body)
		}
		switch r.URL.Path {
		case "/llama/tokenize":
			asked.Add(1)
			toks := make([]int, len(strings.Fields(body["content"].(string))))
			_ = json.NewEncoder(w).Encode(map[string]any{"tokens": toks})
		case "/vllm/tokenize":
			if body["model"] != "m1" {
				t.Errorf("vLLM asked for model %v", body["model"])
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"count": 2 * len(strings.Fields(body["prompt"].(string))),
				"max_model_len": 4096, "tokens": []int{1}})
		case "/down/tokenize":
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()

	for _, c := range []struct {
		base, model string
		want        int
	}{
		{srv.URL + "/llama/v1", "m1", 3},
		{srv.URL + "/vllm/v1/", "m1", 6},
	} {
		t.Setenv(specs.OpenAI.Env.BaseURL, c.base)
		t.Setenv(specs.OpenAI.Env.Key, "")
		for range 2 {
			n, err := tokens.Count("endpoint:"+c.model, "one two three")
			if err != nil || n != c.want {
				t.Errorf("%s: %d, %v; want %d", c.base, n, err, c.want)
			}
		}
	}
	if asked.Load() != 1 {
		t.Errorf("llama.cpp's /tokenize asked %d times for one text, want once (cached)", asked.Load())
	}

	t.Setenv(specs.OpenAI.Env.BaseURL, srv.URL+"/none/v1")
	_, err := tokens.Count("endpoint:m1", "x y")
	if KindOf(err) != errkind.BadRequest || !strings.Contains(err.Error(), "does not tokenize for model m1") {
		t.Errorf("a server without /tokenize: %v (kind %s)", err, KindOf(err))
	}
	t.Setenv(specs.OpenAI.Env.BaseURL, srv.URL+"/down/v1")
	_, err = tokens.Count("endpoint:m1", "x y")
	if !KindOf(err).Retryable() {
		t.Errorf("a 503 from /tokenize: %v (kind %s), want a kind to retry", err, KindOf(err))
	}
}
