package steps

import (
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"ctxlab/activities/api"
	"ctxlab/activities/contexts"
	"ctxlab/activities/listwise"
	"ctxlab/jsonnet"
	"ctxlab/specs"
	"ctxlab/testkit/demorun"
	"ctxlab/testkit/fakeopenai"
	"ctxlab/testkit/llamaserver"
)

// listwiseSpec holds SweRank's reranker over BM25 (ctxlab.methods.swerank_bm25) with PARAMS merged into its step,
// and bm25_function, the same retrieval without the reranker, under MODEL, each at its own fixed budget.
const listwiseSpec = `local ctxlab = import 'ctxlab.libsonnet';
local m = ctxlab.methods;
ctxlab.experiment({
  name: 'listwise',
  dataset: ctxlab.datasets.demo,
  models: [MODEL],
  methods: [
    ctxlab.baselines.swerank('swerank_bm25', 'bm25',
                             PARAMS),
    m.bm25_function,
  ],
})
`

// listwiseContexts compiles listwiseSpec and runs, on the demo instance demorun.Instance, every node up to the two
// methods' contexts, returning the listwise_rerank and retrieve nodes' outputs.
func listwiseContexts(t *testing.T, f *demorun.Fixture, model, params string) (rerank, retrieve api.NodeOutput) {
	t.Helper()
	e, err := compileListwise(t, model, params)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := specs.BuildPlan(e)
	if err != nil {
		t.Fatal(err)
	}
	outs := map[string]api.NodeOutput{}
	for _, n := range plan.Nodes {
		if n.Activity != specs.Checkout.Name && n.Activity != specs.ListwiseRerank.Name &&
			n.Activity != specs.Retrieve.Name {
			continue // the shared tail
		}
		inputs := map[string]api.NodeOutput{}
		for name, k := range n.Inputs {
			inputs[name] = outs[k]
		}
		in := api.NodeInput{Run: demorun.Run, Instance: f.Refs[demorun.Instance], Node: n.Key, Step: n.Steps[0],
			Params: n.Params, Inputs: inputs, Dataset: f.Dataset}
		out := f.Must(f.Exec(n.Activity, in))
		outs[n.Key] = out
		switch n.Activity {
		case specs.ListwiseRerank.Name:
			rerank = out
		case specs.Retrieve.Name:
			retrieve = out
		}
	}
	if rerank.Ref == "" || retrieve.Ref == "" {
		t.Fatalf("the plan ran no listwise_rerank or no retrieve node: %+v", plan.Nodes)
	}
	return rerank, retrieve
}

func compileListwise(t *testing.T, model, params string) (*specs.Experiment, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "listwise.jsonnet")
	src := strings.Replace(strings.Replace(listwiseSpec, "MODEL", model, 1), "PARAMS", params, 1)
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return jsonnet.Compile(path, jsonnet.Options{})
}

// TestListwiseRerankParams: the reranker's knobs are checked by the compiler against their declarations, at the
// spec's line.
func TestListwiseRerankParams(t *testing.T) {
	for params, want := range map[string]string{
		"{ window: 1 }":      `param "window": 1 is out of range [2, ∞)`,
		"{ top_k: 0 }":       `param "top_k": 0 is out of range [1, ∞)`,
		"{ step: 'five' }":   "expected an integer",
		"{ max_lines: -1 }":  `param "max_lines": -1 is out of range [0, ∞)`,
		"{ scorer: 'bm52' }": `did you mean "bm25"`,
	} {
		_, err := compileListwise(t, "ctxlab.models.offline", params)
		if err == nil || !strings.Contains(err.Error(), "listwise.jsonnet:") || !strings.Contains(err.Error(), want) {
			t.Errorf("params %s: %v, want a spec error at listwise.jsonnet saying %s", params, err, want)
		}
	}
	if _, err := compileListwise(t, "ctxlab.models.offline", "{ window: 4, step: 5 }"); err == nil ||
		!strings.Contains(err.Error(), "step 5 is larger than window 4") {
		t.Errorf("a step larger than the window: %v", err)
	}
}

// TestListwiseRerankOtherModel: a reranker named in the method reranks under every model of the experiment, while
// the rest of the method runs under the model under test.
func TestListwiseRerankOtherModel(t *testing.T) {
	e, err := compileListwise(t, "ctxlab.models.openai('m')", "{}, model=ctxlab.models.offline")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := specs.BuildPlan(e)
	if err != nil {
		t.Fatal(err)
	}
	var reranker, patcher []string
	for _, n := range plan.Nodes {
		m, _ := n.Params["model"].(map[string]any)
		switch n.Activity {
		case specs.ListwiseRerank.Name:
			reranker = append(reranker, fmt.Sprint(m["name"]))
		case specs.Patch.Name:
			patcher = append(patcher, fmt.Sprint(m["name"]))
		}
	}
	if !slices.Equal(reranker, []string{"offline"}) || !slices.Contains(patcher, "m") {
		t.Errorf("reranked by %v, patched by %v: want the offline reranker once and the model under test's patches",
			reranker, patcher)
	}
}

// TestListwiseRerankOffline runs SweRank's reranker with the offline stand-in: one call per window over the top 100
// BM25 functions (or all the repository has), every answer parsed, the context fitted to the same budget as BM25's.
func TestListwiseRerankOffline(t *testing.T) {
	f := newFixture(t)
	rerank, retrieve := listwiseContexts(t, f, "ctxlab.models.offline", "{}")
	cands, _ := specs.ListwiseCandidates.Get(rerank.Row)
	windows, _ := specs.ListwiseWindows.Get(rerank.Row)
	calls, _ := specs.ModelCalls.Get(rerank.Row)
	unparsed, ok := specs.ListwiseUnparsed.Get(rerank.Row)
	if cands < 2 || windows != len(listwise.Windows(cands, 10, 5)) || calls != windows || !ok || unparsed != 0 {
		t.Errorf("row %v: want one parsed call per window of 10, moved up by 5, over the candidates", rerank.Row)
	}
	shown, _ := specs.ChunksShown.Get(rerank.Row)
	if shown < 1 {
		t.Errorf("row %v: no chunk shown", rerank.Row)
	}
	var a, b contexts.Context
	f.Load(rerank.Ref, &a)
	f.Load(retrieve.Ref, &b)
	if len(a.Blocks) == 0 || reflect.DeepEqual(a, b) {
		t.Errorf("the reranked context is empty or BM25's own (%d blocks): the stand-in moved nothing", len(a.Blocks))
	}
}

// TestListwiseRerankEndpoint runs the reranker against the fake OpenAI endpoint through the openai provider: the
// fake answers every window in the order its prompt numbers the candidates (the task's prompt answer), so the
// reranked context is the retrieval's own; every window is a paid call, and running the step again pays none.
func TestListwiseRerankEndpoint(t *testing.T) {
	srv := fakeopenai.New()
	hs := httptest.NewServer(srv)
	defer hs.Close()
	t.Setenv(specs.OpenAI.Env.BaseURL, hs.URL+"/v1")
	t.Setenv(specs.OpenAI.Env.Key, "")
	f := newFixture(t)
	model := "ctxlab.models.openai('m', price={ input: 1, output: 2 })"
	rerank, retrieve := listwiseContexts(t, f, model, "{ top_k: 12, window: 5, step: 3 }")
	windows, _ := specs.ListwiseWindows.Get(rerank.Row)
	unparsed, _ := specs.ListwiseUnparsed.Get(rerank.Row)
	calls, _ := specs.ModelCalls.Get(rerank.Row)
	cost, _ := specs.CostUSD.Get(rerank.Row)
	if windows != 4 || unparsed != 0 || calls != 4 || srv.CallsFor(specs.ListwiseRerank.Task) != 4 || cost <= 0 {
		t.Errorf("row %v after %d calls to the endpoint: want 4 windows (12 candidates, 5 a window, 3 up), paid",
			rerank.Row, srv.CallsFor(specs.ListwiseRerank.Task))
	}
	var a, b contexts.Context
	f.Load(rerank.Ref, &a)
	f.Load(retrieve.Ref, &b)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("answers in the prompt's order changed the retrieval's context")
	}
	for _, r := range srv.Requests() {
		if last := r.Messages[len(r.Messages)-1].Content; !strings.Contains(last, "[1] ") ||
			!strings.Contains(last, "in the form [2] > [1] > [3]") {
			t.Errorf("a window's prompt without numbered candidates or SweRank's answer format:\n%s", last)
			break
		}
	}
	again, _ := listwiseContexts(t, f, model, "{ top_k: 12, window: 5, step: 3 }")
	if srv.CallsFor(specs.ListwiseRerank.Task) != 4 || again.Ref != rerank.Ref {
		t.Errorf("running the step again made %d calls in all (want the 4 cached) or another context",
			srv.CallsFor(specs.ListwiseRerank.Task))
	}
}

// TestLlamaListwiseRerank runs the reranker against Debian's llama-server serving the real stories260K model,
// through its chat endpoint: the model writes children's stories, so no answer names a candidate, each window keeps
// the retrieval's order and is counted as unparsed, and the rows carry the server's usage. Four candidates of three
// lines, two a window, so that each prompt fits the server's 2048-token slots.
func TestLlamaListwiseRerank(t *testing.T) {
	srv := llamaserver.Start(t, llamaserver.Options{})
	t.Setenv(specs.OpenAI.Env.BaseURL, srv.URL+"/v1")
	t.Setenv(specs.OpenAI.Env.Key, "")
	f := newFixture(t)
	model := "ctxlab.models.openai('" + llamaserver.ModelID + "', temperature=0, seed=0, max_tokens=48)"
	rerank, retrieve := listwiseContexts(t, f, model, "{ top_k: 4, window: 2, step: 1, max_lines: 3 }")
	windows, _ := specs.ListwiseWindows.Get(rerank.Row)
	unparsed, _ := specs.ListwiseUnparsed.Get(rerank.Row)
	calls, _ := specs.ModelCalls.Get(rerank.Row)
	prompt, _ := specs.PromptTokens.Get(rerank.Row)
	completion, _ := specs.CompletionTokens.Get(rerank.Row)
	if windows != 3 || calls != 3 || unparsed != 3 || prompt < 3*50 || completion < 3 {
		t.Errorf("row %v: want 3 windows, each a call the server answered with a story (unparsed)", rerank.Row)
	}
	var a, b contexts.Context
	f.Load(rerank.Ref, &a)
	f.Load(retrieve.Ref, &b)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("unparsed answers changed the retrieval's context")
	}
	t.Logf("%d windows, %d unparsed, %d prompt and %d completion tokens of the server", windows, unparsed, prompt,
		completion)
}
