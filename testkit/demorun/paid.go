package demorun

import (
	"net/http/httptest"
	"path/filepath"

	"ctxlab/activities/api"
	"ctxlab/runfolder"
	"ctxlab/runlog"
	"ctxlab/specs"
	"ctxlab/testkit/fakeopenai"
)

// PaidKey is the API key the fake server PayOpenAI starts accepts.
const PaidKey = "sk-cache-test-0123456789"

// PayOpenAI points the openai provider at a new fake server (testkit/fakeopenai) that counts calls, for the rest
// of the test, and checks out and inventories the demo instance (with the inventory's default tokenizer): it returns
// the server and a localize node's inputs.
func (f *Fixture) PayOpenAI() (*fakeopenai.Server, map[string]api.NodeOutput) {
	f.T.Helper()
	srv := fakeopenai.New(fakeopenai.WithKey(PaidKey))
	hs := httptest.NewServer(srv)
	f.T.Cleanup(hs.Close)
	f.T.Setenv(specs.OpenAI.Env.BaseURL, hs.URL+"/v1")
	f.T.Setenv(specs.OpenAI.Env.Key, PaidKey)
	co := f.Must(f.Node("checkout", Instance, nil, nil))
	inv := f.Must(f.Node("inventory", Instance, nil, map[string]api.NodeOutput{"checkout": co}))
	return srv, map[string]api.NodeOutput{"checkout": co, "inventory": inv}
}

// Localize runs a localize node of the openai model gpt-4o-mini, priced, on inputs PayOpenAI returned; label names
// the model, which changes only the node's key (a new spec's node, its model renamed, asking the same question: the
// response cache's key leaves labels out).
func (f *Fixture) Localize(in map[string]api.NodeOutput, sample int, label string) (api.NodeOutput, error) {
	f.T.Helper()
	model := map[string]any{"name": "gpt-" + label, "provider": specs.OpenAI.Name, "id": "gpt-4o-mini",
		"price": map[string]any{"input": 2.0, "output": 10.0}}
	prompt := map[string]any{"user": "{{.Issue}}\n{{.Inventory}}\nat most {{.MaxFiles}}"}
	return f.Node("localize", Instance, map[string]any{"model": model, "prompt": prompt, "sample": sample}, in)
}

// Calls reads the run's calls ledger (runfolder.CallsFile), failing the test on a bad line.
func (f *Fixture) Calls() []runlog.Call {
	f.T.Helper()
	calls, bad, err := runlog.Read[runlog.Call](filepath.Join(f.RunDir, runfolder.CallsFile))
	if err != nil || bad != 0 {
		f.T.Fatalf("calls.jsonl: %v (%d bad lines)", err, bad)
	}
	return calls
}
