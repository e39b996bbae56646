package steps

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"ctxlab/activities/inventory"
	"ctxlab/activities/llm"
	"ctxlab/activities/llm/offline"
	"ctxlab/internal/offlinetask"
	"ctxlab/jsonnet"
	"ctxlab/specs"
	"ctxlab/store/cas"
	"ctxlab/testkit/fakeopenai"
)

// This file is docs/adding-an-activity.md's worked example, performed: a rerank step that asks the model to reorder
// one localization sample. Each block is what the doc tells you to write in the file named above it; here the kind
// is declared and its step registered for one test only (TestRerankExample), under the throwaway name
// rerank_example, so the walkthrough is checked on every run without adding a kind to ctxlab. The plan's nodes run
// through Run, as package activities' adapter runs them (its TestEveryKindHasAStep checks that every registered
// step is an activity).

// --- specs/kind_rerank.go (or the file of its family): the declaration ---

// RerankParams are the rerank step's parameters; Model and Tokenizer are filled in by the plan.
type RerankParams struct {
	specs.ModelParams
	// Keep is how many paths the reranked list keeps.
	Keep int `json:"keep"`
}

// The rerank step's row fields: how many paths it kept, and whether its first path differs from the sample's.
var (
	RerankKept       = specs.IntField("rerank_kept")
	RerankTopChanged = specs.BoolField("rerank_top_changed")
)

// Rerank is the kind. In specs it is declared where it is written, `var Rerank = Declare(Kind[RerankParams]{...})`;
// here TestRerankExample declares it, for the test's time only.
var Rerank = specs.Kind[RerankParams]{Name: "rerank_example", Queue: specs.QueueLLM,
	Inputs: []string{"checkout", "sample"}, UsesModel: true, UsesTokenizer: true,
	Defaults: RerankParams{Keep: 3}, Task: "rerank_example",
	Fields:  specs.Fields(specs.UsageFields, specs.Rows(RerankKept, RerankTopChanged)),
	Summary: "the model reorders one localization sample, best first, and keeps params.keep paths"}

// --- activities/llm/offline/rerank.go: the offline answers, through the offlinetask extension point ---

// RerankInput is what the offline stand-in reads instead of the prompt.
type RerankInput struct {
	Issue string
	Paths []string
	Keep  int
}

// rerankOffline puts first the paths that share a word with the issue, keeping their order otherwise, and answers with a
// numbered list, as the prompt asks a model to.
func rerankOffline(in RerankInput) string {
	issue := inventory.Set(in.Issue)
	shares := func(p string) bool {
		for _, w := range inventory.Words(p) {
			if issue[w] {
				return true
			}
		}
		return false
	}
	ranked := slices.Clone(in.Paths)
	slices.SortStableFunc(ranked, func(a, b string) int {
		switch sa, sb := shares(a), shares(b); {
		case sa && !sb:
			return -1
		case sb && !sa:
			return 1
		}
		return 0
	})
	var b strings.Builder
	b.WriteString("Most relevant first:\n\n")
	for i, p := range ranked[:min(in.Keep, len(ranked))] {
		fmt.Fprintf(&b, "%d. `%s`\n", i+1, p)
	}
	return b.String()
}

// rerankFromPrompt is the fake endpoint's answer: it sees only the prompt, so it lists the "- path" lines the
// prompt holds, in the order given.
func rerankFromPrompt(prompt string) string {
	var b strings.Builder
	n := 0
	for _, line := range strings.Split(prompt, "\n") {
		if p, ok := strings.CutPrefix(strings.TrimSpace(line), "- "); ok {
			n++
			fmt.Fprintf(&b, "%d. `%s`\n", n, p)
		}
	}
	return b.String()
}

func registerRerankAnswers(task string) (unregister func()) { // in package offline: func init() { offlinetask.Register(specs.Rerank.Task, ...) }
	return offlinetask.Register(task, offlinetask.Answerer{
		FromInput: offline.Answer(func(in *RerankInput, _ offlinetask.Call) (string, error) {
			return rerankOffline(*in), nil
		}),
		FromPrompt: rerankFromPrompt,
	})
}

// --- activities/steps/rerank.go: the step, registered in its init: func init() { registerStep(specs.Rerank, rerankStep) } ---

// rerankStep asks the model to reorder a localization sample (input sample) and keeps the best params.keep paths
// that the repository holds. Its output is a Ranking, so trim and intersect read it as they read a localize sample.
//
// Prompt fields: .Issue, .Paths (the sample's paths), .Keep.
func rerankStep(ctx context.Context, j *job, p RerankParams) (NodeOutput, error) {
	inst, m, err := j.instanceAndSnapshot(ctx)
	if err != nil {
		return NodeOutput{}, err
	}
	var sample Ranking
	if err := j.loadJSON(ctx, "sample", &sample); err != nil {
		return NodeOutput{}, err
	}
	msgs, err := renderPrompt(p.Prompt, j.in.Step, struct {
		Issue string
		Paths []string
		Keep  int
	}{inst.ProblemStatement, sample.Paths, p.Keep})
	if err != nil {
		return NodeOutput{}, err
	}
	req := llm.Request{Task: Rerank.Task, Messages: msgs, Sample: p.Sample,
		Offline: &RerankInput{Issue: inst.ProblemStatement, Paths: sample.Paths, Keep: p.Keep}}
	resp, row, err := j.callModel(ctx, p.ModelParams, req)
	if err != nil {
		return NodeOutput{}, err
	}
	rk := Ranking{Sample: p.Sample, Answer: resp.Text}
	rk.Paths = llm.ParseRankedPaths(resp.Text, func(path string) bool { _, ok := m.Lookup(path); return ok })
	rk.Paths = rk.Paths[:min(p.Keep, len(rk.Paths))]
	ref, err := cas.PutJSON(ctx, j.store, rk)
	if err != nil {
		return NodeOutput{}, err
	}
	RerankKept.Set(row, len(rk.Paths))
	RerankTopChanged.Set(row, len(rk.Paths) > 0 && len(sample.Paths) > 0 && rk.Paths[0] != sample.Paths[0])
	return NodeOutput{Ref: ref, Row: row}, nil
}

// --- optionally, a helper in jsonnet/lib/cq2care.libsonnet (here a local of the test's spec) ---

const rerankSpec = `local ctxlab = import 'ctxlab.libsonnet';
local c = ctxlab.cq2care;

// rerank(id, sample, keep) reorders the localization sample in step sample; keep defaults to the catalog's.
local rerank(id, sample, keep=null) =
  ctxlab.step(id,
              'rerank_example',
              ctxlab.param_defaults('rerank_example', ['keep'])
              + (if keep == null then {} else { keep: keep })
              + { prompt: { user: 'Issue:\n{{.Issue}}\n\nRerank these paths, best first; keep {{.Keep}}:\n{{range .Paths}}- {{.}}\n{{end}}' } },
              { checkout: 'checkout', sample: sample });

ctxlab.experiment({
  name: 'rerank_example',
  dataset: ctxlab.datasets.demo,
  models: [ctxlab.models.offline],
  methods: [
    ctxlab.method('cq2care_reranked',
                  c.context(evidence=false),
                  c.steps(evidence=false)[:2]  // inventory, localize0
                  + [rerank('reranked', 'localize0', keep=KEEP),
                     ctxlab.step('files', 'trim', { count: 2 }, { sample: 'reranked' })]),
  ],
})
`

// TestRerankExample performs the doc's steps on a throwaway kind: the spec using the helper compiles (and a mistyped
// param of the new step is a spec error), the plan runs the new node on a demo instance with the offline model,
// whose answer comes through the registered input answer, and the fake endpoint answers the same task through the
// registered prompt answer.
func TestRerankExample(t *testing.T) {
	rerank := specs.Declare(Rerank)
	registerStep(rerank, rerankStep)
	t.Cleanup(registerRerankAnswers(rerank.Task))
	t.Cleanup(func() {
		delete(specs.Catalog, rerank.Name)
		delete(stepsByKind, rerank.Name)
	})

	dir := t.TempDir()
	compile := func(keep string) (*specs.Experiment, error) {
		path := filepath.Join(dir, "rerank.jsonnet")
		if err := os.WriteFile(path, []byte(strings.Replace(rerankSpec, "KEEP", keep, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		return jsonnet.Compile(path, jsonnet.Options{})
	}
	if _, err := compile("'three'"); err == nil || !strings.Contains(err.Error(), "rerank.jsonnet:21:") ||
		!strings.Contains(err.Error(), "params.keep") {
		t.Errorf("a string keep compiled (err %v), want a spec error naming rerank.jsonnet:21 and params.keep", err)
	}
	e, err := compile("4")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := specs.BuildPlan(e)
	if err != nil {
		t.Fatal(err)
	}

	f := newFixture(t)
	outs := map[string]NodeOutput{}
	var reranked, sample *NodeOutput
	for _, n := range plan.Nodes {
		inputs := map[string]NodeOutput{}
		for name, k := range n.Inputs {
			inputs[name] = outs[k]
		}
		in := NodeInput{Run: "t", Instance: f.refs[inst], Node: n.Key, Step: n.Steps[0], Params: n.Params,
			Inputs: inputs, Dataset: f.dataset}
		out := f.must(f.run(n.Activity, in))
		outs[n.Key] = out
		switch n.Activity {
		case "localize":
			sample = &out
		case rerank.Name:
			reranked = &out
		}
		if n.Activity == "trim" { // the rest is the shared tail (patch, measure, grade)
			break
		}
	}
	if reranked == nil || sample == nil {
		t.Fatalf("the plan ran no rerank_example or no localize node: %+v", plan.Nodes)
	}
	var before, after Ranking
	f.load(sample.Ref, &before)
	f.load(reranked.Ref, &after)
	want := rerankOffline(RerankInput{Issue: f.rows[inst].ProblemStatement, Paths: before.Paths, Keep: 4})
	if after.Answer != want {
		t.Errorf("rerank answer %q, want the registered offline answer %q", after.Answer, want)
	}
	if kept, _ := RerankKept.Get(reranked.Row); len(after.Paths) != min(4, len(before.Paths)) || kept != len(after.Paths) {
		t.Errorf("kept %v (row %v) of %v", after.Paths, reranked.Row, before.Paths)
	}
	if calls, _ := specs.ModelCalls.Get(reranked.Row); calls != 1 {
		t.Errorf("row %v: want the model call's usage fields", reranked.Row)
	}

	// The fake endpoint answers the task, sent by name as the openai provider sends it, with the prompt answer.
	srv := httptest.NewServer(fakeopenai.New())
	defer srv.Close()
	body := `{"model":"m","messages":[{"role":"user","content":"Rerank these paths:\n- b/z.go\n- a/y.go\n"}]}`
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set(fakeopenai.TaskHeader, rerank.Task)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var completion struct {
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(raw, &completion); err != nil || len(completion.Choices) != 1 {
		t.Fatalf("fake endpoint answered %s (%v)", raw, err)
	}
	if got := completion.Choices[0].Message.Content; got != "1. `b/z.go`\n2. `a/y.go`\n" {
		t.Errorf("fake endpoint's rerank answer %q, want the registered prompt answer", got)
	}
}
