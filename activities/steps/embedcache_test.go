package steps

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"ctxlab/activities/api"
	"ctxlab/store/objects"
	"ctxlab/testkit/demorun"
)

// embeddingsServer is an OpenAI-compatible /v1/embeddings endpoint whose vectors count letters; it counts the texts
// it is asked to embed.
func embeddingsServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var texts atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Input []string }
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		texts.Add(int64(len(req.Input)))
		var data []map[string]any
		tokens := 0
		for i, in := range req.Input {
			tokens += len(in)/4 + 1
			v := make([]float64, 26)
			for _, c := range in {
				if c >= 'a' && c <= 'z' {
					v[c-'a']++
				}
			}
			v[0]++ // no zero vector
			data = append(data, map[string]any{"object": "embedding", "index": i, "embedding": v})
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "model": "m",
			"usage": map[string]int{"prompt_tokens": tokens, "total_tokens": tokens}})
	}))
	t.Cleanup(srv.Close)
	return srv, &texts
}

// TestEmbeddingsSharedAcrossRuns: with a shared cache (starter run --cache), a second run folder's dense retrieval
// over the same texts asks the endpoint for nothing, as its chat answers are served from the cache; another
// endpoint's vectors are not another's (the key names the endpoint), so a second endpoint is asked.
func TestEmbeddingsSharedAcrossRuns(t *testing.T) {
	shared := objects.Dir{Root: t.TempDir()}
	withCache := func(e *Env) { e.Models.Cache = shared }
	first, asked := embeddingsServer(t)
	t.Setenv("OPENAI_BASE_URL", first.URL+"/v1")
	t.Setenv("OPENAI_API_KEY", "k")
	retrieve := func() map[string]any {
		f := newFixture(t, withCache)
		co := f.Must(f.Node("checkout", demorun.Instance, nil, nil))
		oracle := f.Must(f.Node("oracle_files", demorun.Instance, tok, map[string]api.NodeOutput{"checkout": co}))
		return f.Must(f.Node("retrieve", demorun.Instance, params("unit", "file", "scorer", "dense",
			"embedding_model", "m"), map[string]api.NodeOutput{"checkout": co, "budget": oracle})).Row
	}
	row := retrieve()
	paid := asked.Load()
	if paid < 3 || row["embedding_tokens"].(float64) < 30 {
		t.Fatalf("the first run embedded %d texts: %v", paid, row)
	}
	row = retrieve()
	if asked.Load() != paid || row["embedding_tokens"] != 0.0 || row["embeddings_cached"].(float64) != float64(paid) {
		t.Errorf("a second run folder sharing the cache asked for %d more texts: %v", asked.Load()-paid, row)
	}
	second, askedSecond := embeddingsServer(t)
	t.Setenv("OPENAI_BASE_URL", second.URL+"/v1")
	row = retrieve()
	if askedSecond.Load() != paid || row["embeddings_cached"] != 0.0 {
		t.Errorf("another endpoint was asked for %d texts (want %d, none from the first's vectors): %v",
			askedSecond.Load(), paid, row)
	}
}
