package checks

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ctxlab/activities/compress"
	"ctxlab/dataset/swebench"
	"ctxlab/demobench"
	"ctxlab/jsonnet"
	"ctxlab/specs"
	"ctxlab/testkit/e2e"
	"ctxlab/testkit/fakeopenai"
)

// TestReportPrint: problems of one kind, text and fix are one line naming their subjects (ten, then a count);
// notes go to out; a report without problems says ready only when asked; Print says whether there was none.
func TestReportPrint(t *testing.T) {
	r := &Report{Checked: []string{"3 instances (3 go)"}}
	r.Note("a note %d", 1)
	var out, errs bytes.Buffer
	if !r.Print(&out, &errs, "s.jsonnet", true) || errs.Len() != 0 ||
		out.String() != "starter check: note: a note 1\nstarter check: s.jsonnet: ready (3 instances (3 go))\n" {
		t.Errorf("no problem: out %q errs %q", out.String(), errs.String())
	}
	out.Reset()
	if !r.Print(&out, &errs, "s.jsonnet", false) || strings.Contains(out.String(), "ready") {
		t.Errorf("no problem, not asked for ready: %q", out.String())
	}
	for i := range 12 {
		r.Fail("instance", "i"+string(rune('a'+i)), "not gradable", "build it")
	}
	r.Fail("dataset", "", "no such file", "")
	r.Fail("model", "m1", "refuses the key", "set the key")
	out.Reset()
	if r.Print(&out, &errs, "s.jsonnet", true) {
		t.Fatal("Print reports no problem")
	}
	want := "starter check: s.jsonnet: 3 problem(s); nothing was run or paid:\n" +
		"  instances ia, ib, ic, id, ie, if, ig, ih, ii, ij (and 2 more): not gradable; fix: build it\n" +
		"  dataset: no such file\n" +
		"  model m1: refuses the key; fix: set the key\n" +
		"starter check: fix these and run again (starter run --no-check skips the checks)\n"
	if errs.String() != want || strings.Contains(out.String(), "ready") {
		t.Errorf("problems:\n got %q\nwant %q\nout %q", errs.String(), want, out.String())
	}
}

// compileDemo compiles the demo spec with overrides and the openai model, and builds its plan.
func compileDemo(t *testing.T, overrides string) (*specs.Experiment, *specs.Plan) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "variant.jsonnet")
	src := "local ctxlab = import 'ctxlab.libsonnet';\n(import '" +
		filepath.Join(e2e.RepoRoot(t), "specs", "demo.jsonnet") + "') + " + overrides + "\n"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := jsonnet.Compile(path, jsonnet.Options{ExtStr: map[string]string{"model": "openai"}})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := specs.BuildPlan(e)
	if err != nil {
		t.Fatal(err)
	}
	return e, plan
}

// envOf is a Getenv over a map.
func envOf(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }

// TestSweepEndpoints holds the endpoint checks against the fake OpenAI-compatible server and the fake compression
// server: a sound setup is ready, naming what it checked; a window smaller than an issue names the instance; a
// compression server that does not answer names the compressor's method; a max_tokens as large as the window fails.
func TestSweepEndpoints(t *testing.T) {
	e, plan := compileDemo(t, "{ name: 'chk', anchor:: null, methods: super.methods[0:2] + "+
		"[ctxlab.methods.dense_function, ctxlab.baselines.compress_files(ctxlab.methods.oracle_files, 'llmlingua2', 0.5)] }")
	instances := []swebench.Instance{
		{InstanceID: "short-1", ProblemStatement: "the parser drops the last line"},
		{InstanceID: "long-1", ProblemStatement: strings.Repeat("the parser drops the last line of the file ", 40)},
	}
	comp := httptest.NewServer(compress.FakeHandler())
	defer comp.Close()
	closed := httptest.NewServer(nil)
	closed.Close()
	sweep := func(window int, compressURL string) *Report {
		t.Helper()
		hs := httptest.NewServer(fakeopenai.New(fakeopenai.WithModels(window, "gpt-4o-mini")))
		defer hs.Close()
		t.Setenv("OPENAI_BASE_URL", hs.URL+"/v1") // the providers' checks read their own environment
		t.Setenv("OPENAI_API_KEY", "")
		c := Checker{Getenv: envOf(map[string]string{"CTXLAB_COMPRESS_URL": compressURL}), HTTP: &http.Client{},
			ProbeTimeout: 5 * time.Second}
		return c.Sweep(context.Background(), e, plan, instances, t.TempDir(), Parts{Endpoints: true})
	}
	if r := sweep(128000, comp.URL); len(r.Problems) != 0 ||
		!strings.Contains(strings.Join(r.Checked, "; "), "embeddings of text-embedding-3-small; compressor llmlingua2") {
		t.Errorf("a sound setup: %+v", r)
	}
	e.Models[0].MaxTokens = 0
	r := sweep(200, comp.URL)
	if len(r.Problems) != 1 || r.Problems[0].Kind != "model" || !strings.Contains(r.Problems[0].Text,
		"does not fit its 200-token context") || !strings.Contains(r.Problems[0].Text, "long-1 (") ||
		strings.Contains(r.Problems[0].Text, "short-1") {
		t.Errorf("one issue longer than the window: %+v", r.Problems)
	}
	e.Models[0].MaxTokens = 4096
	r = sweep(4096, closed.URL)
	var texts []string
	for _, p := range r.Problems {
		texts = append(texts, p.Kind+" "+p.Name+": "+p.Text+"; "+p.Fix)
	}
	got := strings.Join(texts, "\n")
	if len(r.Problems) != 2 || !strings.Contains(got, "max_tokens 4096 leaves no room for a prompt") ||
		!strings.Contains(got, "method oracle_files_llmlingua2_r50") || !strings.Contains(got, "scripts/compress_server.py") {
		t.Errorf("max_tokens as large as the window, no compression server:\n%s", got)
	}
}

// TestSweepNoWorker: a starter that runs no worker checks nothing of its own machine and says so.
func TestSweepNoWorker(t *testing.T) {
	e, plan := compileDemo(t, "{ name: 'chk', anchor:: null, methods: super.methods[0:2] }")
	r := New().Sweep(context.Background(), e, plan, nil, t.TempDir(), Parts{})
	if len(r.Problems) != 0 || len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "--no-worker") {
		t.Errorf("no worker: %+v", r)
	}
}

// TestGradersWithoutRunners: with no go and no python3 on PATH, every instance of the demo benchmark is named,
// with the runner it lacks (the demo spec's grading, the repositories the benchmark generates).
func TestGradersWithoutRunners(t *testing.T) {
	bench, err := demobench.Generate(filepath.Join(t.TempDir(), "dataset"))
	if err != nil {
		t.Fatal(err)
	}
	rows := bench.Instances
	e, plan := compileDemo(t, "{ name: 'chk', anchor:: null, methods: super.methods[0:2] }")
	e.Dataset.File = bench.File
	t.Setenv("PATH", t.TempDir())
	r := New().Sweep(context.Background(), e, plan, rows, t.TempDir(), Parts{Repos: true, Graders: true})
	named := map[string]bool{}
	for _, p := range r.Problems {
		named[p.Name] = true
		if !strings.Contains(p.Text+p.Fix, "not on PATH") && !strings.Contains(p.Text+p.Fix, "no go command on PATH") {
			t.Errorf("problem %+v names no missing runner", p)
		}
	}
	if len(named) != len(rows) {
		t.Errorf("%d of %d instances named: %+v", len(named), len(rows), r.Problems)
	}
}
