package steps

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"

	"ctxlab/activities/tokens"
	"ctxlab/specs"
	"ctxlab/testkit/fakeopenai"
)

// TestListwiseRerankEmbeddingCut: SweRank's dense retrieval cuts every embedded text at embedding_max_tokens, as a
// retrieve step does, so that its pipeline runs against an embeddings server of short inputs (llama-server refuses
// an input over its physical batch). Before, the kind took no such param and its retrieval sent whole functions.
func TestListwiseRerankEmbeddingCut(t *testing.T) {
	fake := httptest.NewServer(fakeopenai.New())
	defer fake.Close()
	upstream, err := url.Parse(fake.URL)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	longest, inputs := 0, 0
	measure := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct{ Input []string }
		if json.Unmarshal(body, &req) == nil {
			mu.Lock()
			for _, in := range req.Input {
				n, _ := tokens.Count(tokens.Cl100kBase, in)
				longest = max(longest, n)
				inputs++
			}
			mu.Unlock()
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		httputil.NewSingleHostReverseProxy(upstream).ServeHTTP(w, r)
	}))
	defer measure.Close()
	t.Setenv(specs.OpenAI.Env.BaseURL, measure.URL+"/v1")
	t.Setenv(specs.OpenAI.Env.Key, "")
	f := newFixture(t)
	rerank, _ := listwiseContexts(t, f, "ctxlab.models.offline",
		"{ scorer: 'dense', embedding_model: 'embed-small', embedding_max_tokens: 20, top_k: 4, window: 2, step: 1 }")
	tok, _ := specs.EmbeddingTokens.Get(rerank.Row)
	if inputs == 0 || tok < 1 {
		t.Fatalf("row %v after %d inputs embedded: the reranker's retrieval was not dense", rerank.Row, inputs)
	}
	if longest > 20 {
		t.Errorf("an embedded text of %d cl100k_base tokens, over embedding_max_tokens 20", longest)
	}
}
