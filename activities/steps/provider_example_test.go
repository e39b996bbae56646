package steps

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"ctxlab/activities/api"
	"ctxlab/activities/api/errkind"
	"ctxlab/activities/limiter"
	"ctxlab/activities/llm"
	"ctxlab/internal/offlinetask"
	"ctxlab/jsonnet"
	"ctxlab/runfolder"
	"ctxlab/runlog"
	"ctxlab/specs"
	"ctxlab/store/cas"
)

// This file is docs/adding-a-provider.md's worked example, performed: a provider for Ollama's native chat API
// (POST /api/chat), which a spec names ollama_example. Each block is what the doc tells you to write in the file
// named above it (TestAddingAProviderDocShowsTheExample holds the doc to it); here the provider is declared and its
// implementation registered for one test only (TestProviderExample), so the walkthrough is checked on every run
// without adding a provider to ctxlab. The test's calls go through callModel, as every step's do: the response
// cache, the spend cap, the calls ledger and the one retry loop, none of which names a provider.

// DeclareProvider stands in for specs.DeclareProvider in this file, so that the declaration below reads as it is
// written in specs: TestProviderExample declares the provider for its time only.
func DeclareProvider(p specs.Provider) specs.Provider { return p }

// --- specs/provider_ollama.go: the declaration ---

// Ollama is Ollama's native chat API; its implementation is activities/llm/ollama.go.
var Ollama = DeclareProvider(specs.Provider{Name: "ollama_example",
	Summary: "Ollama's native chat API (`POST /api/chat`)",
	Env: specs.ProviderEnv{BaseURL: "OLLAMA_BASE_URL", DefaultBaseURL: "http://localhost:11434",
		Example: "http://localhost:11434", Key: "OLLAMA_API_KEY", KeylessLoopback: true},
	NeedsID: true, Paid: true,
	Check: "`GET /api/tags` lists the id"})

// --- activities/llm/ollama.go: the implementation ---

// ollamaImplementation is registered in the file's init: func init() { Register(specs.Ollama, ollamaImplementation) }.
var ollamaImplementation = llm.Implementation{New: newOllama, Usage: ollamaUsage,
	Errors: llm.OpenAICompatibleErrors, Check: checkOllama}

// ollamaClient calls POST /api/chat.
type ollamaClient struct {
	model specs.Model
	cfg   llm.Config
	ep    llm.Endpoint
}

func newOllama(m specs.Model, cfg llm.Config) (llm.Client, error) {
	ep, err := llm.EndpointOf(m)
	if err != nil {
		return nil, err
	}
	return ollamaClient{model: m, cfg: cfg, ep: ep}, nil
}

// Prepare builds the request body once; each attempt sends it (the retry loop decides how often).
func (c ollamaClient) Prepare(_ context.Context, req llm.Request) (llm.Attempt, *llm.Error) {
	options := map[string]any{}
	if c.model.Temperature != nil {
		options["temperature"] = *c.model.Temperature
	}
	if c.model.Seed != nil {
		options["seed"] = *c.model.Seed
	}
	if c.model.MaxTokens > 0 {
		options["num_predict"] = c.model.MaxTokens
	}
	body, err := json.Marshal(map[string]any{"model": c.model.ID, "messages": req.Messages, "stream": false,
		"options": options})
	if err != nil {
		return llm.Attempt{}, &llm.Error{Kind: errkind.BadRequest, Msg: err.Error()}
	}
	return llm.Attempt{Send: func(ctx context.Context) (llm.Response, *llm.Error, time.Duration) {
		return c.ep.Exchange(ctx, c.cfg.CallTimeout, c.model.Price, c.send(req.Task, body))
	}}, nil
}

// send is one POST /api/chat. An error status comes back with its body readable, for the error shapes to read.
func (c ollamaClient) send(task string, body []byte) func(context.Context, **http.Response) (llm.Reply, error) {
	return func(ctx context.Context, hres **http.Response) (llm.Reply, error) {
		hr, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(c.ep.Base, "/")+"/api/chat",
			bytes.NewReader(body))
		if err != nil {
			return llm.Reply{}, err
		}
		hr.Header.Set("Content-Type", "application/json")
		hr.Header.Set(offlinetask.TaskHeader, task)
		res, err := c.cfg.HTTPClient.Do(hr)
		if err != nil {
			return llm.Reply{}, err
		}
		data, err := io.ReadAll(io.LimitReader(res.Body, 16<<20))
		res.Body.Close()
		res.Body = io.NopCloser(bytes.NewReader(data))
		*hres = res
		if err != nil {
			return llm.Reply{}, err
		}
		if res.StatusCode >= 400 {
			return llm.Reply{}, fmt.Errorf("HTTP %d", res.StatusCode)
		}
		var out struct {
			Model   string `json:"model"`
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
			Done bool `json:"done"`
		}
		if err := json.Unmarshal(data, &out); err != nil {
			return llm.Reply{}, err
		}
		if !out.Done {
			return llm.Reply{Body: data, Missing: "the chat answer is not done"}, nil
		}
		return llm.Reply{Body: data, Text: out.Message.Content, Model: out.Model}, nil
	}
}

// ollamaUsage reads an answer's usage: prompt_eval_count and eval_count, checked as every count is.
func ollamaUsage(body []byte) (llm.Usage, error) {
	var out struct {
		Prompt json.RawMessage `json:"prompt_eval_count"`
		Eval   json.RawMessage `json:"eval_count"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return llm.Usage{}, fmt.Errorf("the usage does not parse: %v", err)
	}
	p, err := llm.UsageCount("prompt_eval_count", out.Prompt)
	if err != nil {
		return llm.Usage{}, err
	}
	e, err := llm.UsageCount("eval_count", out.Eval)
	return llm.Usage{PromptTokens: p, CompletionTokens: e}, err
}

// checkOllama asks GET /api/tags whether the server has the model.
func checkOllama(ctx context.Context, m specs.Model, timeout time.Duration) llm.ModelCheck {
	ep, err := llm.EndpointOf(m)
	if err != nil {
		return llm.ModelCheck{Problem: err.Error()}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	hr, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(ep.Base, "/")+"/api/tags", nil)
	if err != nil {
		return llm.ModelCheck{Problem: err.Error()}
	}
	var tags struct {
		Models []struct {
			Name string `json:"name"`
		} `json:"models"`
	}
	res, err := http.DefaultClient.Do(hr)
	if err == nil {
		defer res.Body.Close()
		err = json.NewDecoder(io.LimitReader(res.Body, 1<<20)).Decode(&tags)
	}
	if err != nil {
		return llm.ModelCheck{Host: ep.Host, Problem: fmt.Sprintf("the server at %s does not answer GET /api/tags: %v",
			ep.Host, err), Fix: "start ollama serve"}
	}
	for _, t := range tags.Models {
		if t.Name == m.ID {
			return llm.ModelCheck{Served: true, Host: ep.Host}
		}
	}
	return llm.ModelCheck{Host: ep.Host, Problem: fmt.Sprintf("the server at %s has no model %q", ep.Host, m.ID),
		Fix: "ollama pull " + m.ID}
}

// --- testkit/fakeollama: its fake (here a handler) ---

// fakeOllama answers POST /api/chat as Ollama does for the model it has, echoing the last message, after failing
// the first request with a 503; an unknown model is Ollama's 404. GET /api/tags lists the model.
func fakeOllama(model string, calls *atomic.Int32) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/tags" {
			fmt.Fprintf(w, `{"models": [{"name": %q}]}`, model)
			return
		}
		var req struct {
			Model    string        `json:"model"`
			Messages []llm.Message `json:"messages"`
		}
		if r.URL.Path != "/api/chat" || json.NewDecoder(r.Body).Decode(&req) != nil {
			http.Error(w, `{"error": "bad request"}`, http.StatusBadRequest)
			return
		}
		if calls.Add(1) == 1 {
			http.Error(w, `{"error": "server busy, please try again"}`, http.StatusServiceUnavailable)
			return
		}
		if req.Model != model {
			http.Error(w, fmt.Sprintf(`{"error": "model \"%s\" not found, try pulling it first"}`, req.Model),
				http.StatusNotFound)
			return
		}
		last := req.Messages[len(req.Messages)-1].Content
		json.NewEncoder(w).Encode(map[string]any{"model": model, "done": true, "done_reason": "stop",
			"message":           map[string]string{"role": "assistant", "content": "echo: " + last},
			"prompt_eval_count": len(last), "eval_count": 2 + len(last)})
	})
}

// TestProviderExample: declared and registered, and nothing else written, the provider is a spec's model (its id
// checked), a row of docs/models.md's table, a step's model through callModel (retried by the one loop, cached,
// ledgered, priced), whose failures are filed by its error shapes, and a model starter check asks about.
func TestProviderExample(t *testing.T) {
	specs.DeclareProvider(Ollama)
	t.Cleanup(func() { delete(specs.Providers, Ollama.Name) })
	t.Cleanup(llm.Register(Ollama, ollamaImplementation))
	var calls atomic.Int32
	hs := httptest.NewServer(fakeOllama("llama3:8b", &calls))
	t.Cleanup(hs.Close)
	t.Setenv(Ollama.Env.BaseURL, hs.URL)
	t.Setenv(Ollama.Env.Key, "")

	spec := func(model string) error {
		path := filepath.Join(t.TempDir(), "spec.jsonnet")
		src := "local ctxlab = import 'ctxlab.libsonnet';\nctxlab.experiment({ name: 'ollama', dataset: " +
			"ctxlab.datasets.demo, methods: [ctxlab.methods.no_source], models: [" + model + "] })\n"
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := jsonnet.Compile(path, jsonnet.Options{})
		return err
	}
	if err := spec(`{ name: 'llama3', provider: 'ollama_example', id: 'llama3:8b', max_tokens: 256 }`); err != nil {
		t.Fatalf("a spec of the provider: %v", err)
	}
	if err := spec(`{ name: 'llama3', provider: 'ollama_example' }`); err == nil ||
		!strings.Contains(err.Error(), `ollama_example model "llama3" needs an id`) {
		t.Fatalf("a model without an id: %v", err)
	}
	if !strings.Contains(specs.ProviderTable(), "| `ollama_example` | Ollama's native chat API") {
		t.Fatalf("docs/models.md's table has no row of the provider:\n%s", specs.ProviderTable())
	}

	runDir := t.TempDir()
	store, err := cas.NewDir(runfolder.CAS(runDir))
	if err != nil {
		t.Fatal(err)
	}
	j := &job{env: Env{RunDir: runDir, Log: zerolog.Nop(), Models: Models{Budget: localBudget(limiter.Limits{})}}, store: store, usage: &runlog.Usage{},
		in: api.NodeInput{Run: "t", Node: "patch", Step: "m.patch"}}
	mp := specs.ModelParams{Model: specs.Model{Name: "llama3", Provider: Ollama.Name, ID: "llama3:8b", MaxTokens: 256,
		Price: specs.Price{Input: 1, Output: 2}}}
	req := llm.Request{Task: specs.Patch.Task, Messages: []llm.Message{{Role: "user", Content: "fix the parser"}}}
	resp, row, err := j.callModel(context.Background(), mp, req)
	if err != nil {
		t.Fatal(err)
	}
	prompt, _ := specs.PromptTokens.Get(row)
	completion, _ := specs.CompletionTokens.Get(row)
	cost, _ := specs.CostUSD.Get(row)
	if resp.Text != "echo: fix the parser" || calls.Load() != 2 || prompt != 14 || completion != 16 ||
		cost != (14*1+16*2)/1e6 {
		t.Fatalf("answer %q after %d calls (want 2: a 503, retried), row %v", resp.Text, calls.Load(), row)
	}
	if again, _, err := j.callModel(context.Background(), mp, req); err != nil || again.Text != resp.Text ||
		calls.Load() != 2 {
		t.Fatalf("asked again: %v, %d calls (want the cached answer)", err, calls.Load())
	}
	ledger, _, err := runlog.Read[runlog.Call](runfolder.Calls(runDir))
	if err != nil || len(ledger) != 2 || !ledger[0].Paid() || ledger[1].Paid() || ledger[0].Provider != Ollama.Name {
		t.Fatalf("calls.jsonl: %v %+v", err, ledger)
	}

	mp.Model.ID = "mistral"
	_, _, err = j.callModel(context.Background(), mp, req)
	var se *Error
	if !errors.As(err, &se) || se.Type != string(errkind.ModelNotFound) || se.Retryable {
		t.Fatalf("a model the server lacks: %v", err)
	}
	impl, _ := llm.Implemented(Ollama.Name)
	if c := impl.Check(context.Background(), mp.Model, time.Second); c.Served || !strings.Contains(c.Problem, `no model "mistral"`) {
		t.Fatalf("check of a model the server lacks: %+v", c)
	}
	mp.Model.ID = "llama3:8b"
	if c := impl.Check(context.Background(), mp.Model, time.Second); !c.Served {
		t.Fatalf("check of the model: %+v", c)
	}
}

// TestAddingAProviderDocShowsTheExample: every Go block of docs/adding-a-provider.md is this file's code of the file
// the page names above it, as written there: the declaration without its specs. qualifiers (it is in package specs),
// the implementation without its llm. ones (package llm).
func TestAddingAProviderDocShowsTheExample(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "adding-a-provider.md"))
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.ReadFile("provider_example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	section := func(name, qualifier string) string {
		start := strings.Index(string(self), "// --- "+name)
		end := strings.Index(string(self)[start+1:], "// --- ")
		return strings.ReplaceAll(string(self)[start:start+1+end], qualifier, "")
	}
	sections := map[string]string{"specs/provider_ollama.go": section("specs/provider_ollama.go", "specs."),
		"activities/llm/ollama.go": section("activities/llm/ollama.go", "llm.")}
	heading := regexp.MustCompile("(?s)## [^\n]*?([a-z_/]+\\.go)[^\n]*\n.*?```go\n(.*?)```")
	blocks := heading.FindAllStringSubmatch(string(doc), -1)
	if len(blocks) < 2 {
		t.Fatalf("docs/adding-a-provider.md shows %d Go blocks under a file's heading, want the declaration and the "+
			"implementation", len(blocks))
	}
	for _, b := range blocks {
		file, code := b[1], b[2]
		if !strings.Contains(sections[file], code) {
			t.Errorf("docs/adding-a-provider.md's block for %s is not provider_example_test.go's code of that file:\n%s",
				file, code)
		}
	}
}
