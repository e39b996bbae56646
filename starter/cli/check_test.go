package cli

import (
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ctxlab/activities/compress"
	"ctxlab/demobench"
	"ctxlab/internal/cluster"
	"ctxlab/starter/exitcode"
	"ctxlab/testkit/e2e"
	"ctxlab/testkit/fakeanthropic"
	"ctxlab/testkit/fakeopenai"
)

// checkEnv clears what the checks read from the environment (the endpoint, its key, the compression server) and
// sets kv over it. The checks run in-process, so these tests are not parallel.
func checkEnv(t *testing.T, kv ...string) {
	t.Helper()
	for _, k := range []string{"OPENAI_BASE_URL", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY",
		"CTXLAB_COMPRESS_URL"} {
		t.Setenv(k, "")
	}
	for _, s := range kv {
		k, v, _ := strings.Cut(s, "=")
		t.Setenv(k, v)
	}
}

// TestCheckPaperWithNothing is issue 27's: `starter check specs/paper.jsonnet` on a machine with no endpoint, no key,
// no compression server and no dataset lists every missing piece, naming what it concerns and the fix, and exits 2
// in seconds.
func TestCheckPaperWithNothing(t *testing.T) {
	checkEnv(t)
	start := time.Now()
	paper := filepath.Join(e2e.RepoRoot(t), "specs", "paper.jsonnet")
	code, stdout, stderr := runMain("check", paper, "--runs", t.TempDir())
	took := time.Since(start)
	if code != exitcode.Usage {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitcode.Usage, stdout, stderr)
	}
	if took > 10*time.Second {
		t.Errorf("the check took %s, want seconds", took)
	}
	for _, want := range []string{
		"dataset: ", "swe-rebench-300.jsonl", "--ext-str dataset=FILE",
		"model gpt-5.6: OPENAI_API_KEY is not set",
		"model claude-opus-5: ANTHROPIC_API_KEY is not set",
		"methods dense_function, whole_files_dense: no embeddings of model \"text-embedding-3-small\"",
		"method swerank_retrieve: no embeddings of model \"Salesforce/SweRankEmbed-Small\"",
		"llmlingua2", "longllmlingua", "longcodezip", "swepruner", "CTXLAB_COMPRESS_URL",
		"nothing was run or paid", "--no-check",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("the report lacks %q:\n%s", want, stderr)
		}
	}
	t.Logf("%s in %s", stderr, took.Round(time.Millisecond))
}

// TestCheckEndpoint holds the model and method checks against an OpenAI-compatible endpoint (the fake, for what a
// real server cannot show: a wrong key echoed back, a vLLM-style context window): a refused key is named without
// the key, an id the endpoint does not serve names the ones it serves, a window smaller than the issues' texts
// names the instances, a max_tokens as large as the window fails, dense and compression methods need their services,
// and a sound setup passes.
func TestCheckEndpoint(t *testing.T) {
	const key = "sk-ctxlab-check-DO-NOT-LEAK-93b1e2"
	runs := t.TempDir()
	methods := "methods: super.methods[0:2] + [ctxlab.methods.dense_function, " +
		"ctxlab.baselines.compress_files(ctxlab.methods.oracle_files, 'llmlingua2', 0.5)]"
	spec := libVariant(t, "{ name: 'chk', dataset+: { limit: 2 }, anchor:: null, "+methods+" }")
	noMaxTokens := libVariant(t, "{ name: 'chk', dataset+: { limit: 2 }, anchor:: null, "+methods+
		", models: [super.models[0] + { max_tokens: 0 }] }")
	check := func(srv *fakeopenai.Server, spec string) (int, string) {
		t.Helper()
		hs := httptest.NewServer(srv)
		defer hs.Close()
		comp := httptest.NewServer(compress.FakeHandler())
		defer comp.Close()
		checkEnv(t, "OPENAI_BASE_URL="+hs.URL+"/v1", "OPENAI_API_KEY="+key, "CTXLAB_COMPRESS_URL="+comp.URL)
		code, stdout, stderr := runMain("check", spec, "--runs", runs, "--ext-str", "model=openai")
		if strings.Contains(stdout+stderr, key) {
			t.Errorf("the key was printed:\n%s%s", stdout, stderr)
		}
		return code, stdout + stderr
	}

	code, out := check(fakeopenai.New(fakeopenai.WithKey("sk-another-key"), fakeopenai.WithModels(0, "gpt-4o-mini")),
		spec)
	if code != exitcode.Usage || !strings.Contains(out, "model gpt-4o-mini: the endpoint at 127.0.0.1 refuses the key") ||
		!strings.Contains(out, "OPENAI_API_KEY") {
		t.Errorf("a wrong key: exit %d\n%s", code, out)
	}
	code, out = check(fakeopenai.New(fakeopenai.WithKey(key), fakeopenai.WithModels(0, "llama-3-8b", "qwen")), spec)
	if code != exitcode.Usage || !strings.Contains(out, `does not serve model id "gpt-4o-mini" (it serves llama-3-8b, qwen)`) {
		t.Errorf("an id the endpoint does not serve: exit %d\n%s", code, out)
	}
	// A window of 200 tokens: no demo issue fits (each is 250 to 450 tokens).
	code, out = check(fakeopenai.New(fakeopenai.WithKey(key), fakeopenai.WithModels(200, "gpt-4o-mini")), noMaxTokens)
	if code != exitcode.Usage || !strings.Contains(out, "does not fit its 200-token context (vLLM's max_model_len") ||
		!strings.Contains(out, "acme__humanize-1 (") {
		t.Errorf("issues longer than the window: exit %d\n%s", code, out)
	}
	// The library's max_tokens (4096) in a 4096-token window leaves no room for any prompt.
	code, out = check(fakeopenai.New(fakeopenai.WithKey(key), fakeopenai.WithModels(4096, "gpt-4o-mini")), spec)
	if code != exitcode.Usage || !strings.Contains(out, "max_tokens 4096 leaves no room for a prompt in its 4096-token") {
		t.Errorf("max_tokens as large as the window: exit %d\n%s", code, out)
	}
	code, out = check(fakeopenai.New(fakeopenai.WithKey(key), fakeopenai.WithModels(128000, "gpt-4o-mini")), spec)
	if code != exitcode.OK || !strings.Contains(out, "ready") ||
		!strings.Contains(out, "embeddings of text-embedding-3-small") || !strings.Contains(out, "compressor llmlingua2") {
		t.Errorf("a sound setup: exit %d\n%s", code, out)
	}

	// No compression server: the compressor's method is named.
	hs := httptest.NewServer(fakeopenai.New(fakeopenai.WithKey(key), fakeopenai.WithModels(0, "gpt-4o-mini")))
	defer hs.Close()
	closed := httptest.NewServer(nil)
	closed.Close()
	checkEnv(t, "OPENAI_BASE_URL="+hs.URL+"/v1", "OPENAI_API_KEY="+key, "CTXLAB_COMPRESS_URL="+closed.URL)
	code, stdout, stderr := runMain("check", spec, "--runs", runs, "--ext-str", "model=openai")
	if code != exitcode.Usage || !strings.Contains(stderr, "llmlingua2") ||
		!strings.Contains(stderr, "scripts/compress_server.py") {
		t.Errorf("a compression server that does not answer: exit %d\n%s%s", code, stdout, stderr)
	}
	// An endpoint without /v1/models (the fake without WithModels) is a note, not a problem.
	plain := httptest.NewServer(fakeopenai.New())
	defer plain.Close()
	checkEnv(t, "OPENAI_BASE_URL="+plain.URL+"/v1")
	code, stdout, stderr = runMain("check", demoVariant(t, "{ name: 'chk2', dataset+: { limit: 1 }, "+referenceMethods+
		" }"), "--runs", runs, "--ext-str", "model=openai")
	if code != exitcode.OK || !strings.Contains(stdout, "has no /v1/models: the model id is not checked") {
		t.Errorf("no model list: exit %d\n%s%s", code, stdout, stderr)
	}
}

// libVariant is demoVariant for overrides that name ctxlab's library.
func libVariant(t *testing.T, overrides string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "variant.jsonnet")
	src := "local ctxlab = import 'ctxlab.libsonnet';\n(import '" + demoSpec(t) + "') + " + overrides + "\n"
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCheckAnthropic: an anthropic model is checked against Anthropic's API (the fake): an id it serves passes, one
// it does not is named, and the key is never printed.
func TestCheckAnthropic(t *testing.T) {
	const key = "sk-ant-check-DO-NOT-LEAK-5c1a"
	runs := t.TempDir()
	hs := httptest.NewServer(&fakeanthropic.Server{Models: []string{"claude-fake-1"}})
	defer hs.Close()
	checkEnv(t, "ANTHROPIC_BASE_URL="+hs.URL, "ANTHROPIC_API_KEY="+key)
	for _, tc := range []struct {
		id   string
		code int
		want string
	}{
		{"claude-fake-1", exitcode.OK, "model claude-fake-1 served by 127.0.0.1"},
		{"claude-nope", exitcode.Usage, `model claude-nope: the endpoint at 127.0.0.1 does not serve model id "claude-nope"`},
	} {
		spec := libVariant(t, "{ name: 'chka', dataset+: { limit: 1 }, anchor:: null, methods: super.methods[0:2], "+
			"models: [ctxlab.models.anthropic('"+tc.id+"')] }")
		code, stdout, stderr := runMain("check", spec, "--runs", runs)
		out := stdout + stderr
		if code != tc.code || !strings.Contains(out, tc.want) || strings.Contains(out, key) {
			t.Errorf("%s: exit %d, want %d and %q\n%s", tc.id, code, tc.code, tc.want, out)
		}
	}
}

// TestCheckGraders holds the executor checks against this machine with things taken away: no go and no python3 on
// PATH names every instance with its fix.
func TestCheckGraders(t *testing.T) {
	checkEnv(t)
	runs := t.TempDir()
	demo := demoSpec(t)

	t.Setenv("PATH", t.TempDir())
	code, stdout, stderr := runMain("check", demo, "--runs", runs)
	if code != exitcode.Usage || !strings.Contains(stderr, "instances acme__humanize-1") ||
		!strings.Contains(stderr, "no go command on PATH") || !strings.Contains(stderr, "install Go") ||
		!strings.Contains(stderr, "instance acme__tablefmt-1: its python tests cannot run here") ||
		!strings.Contains(stderr, "python3 is not on PATH") {
		t.Errorf("no go, no python3: exit %d\n%s%s", code, stdout, stderr)
	}
}

// TestCheckBeforeRunAndGrade: starter run with a problem exits 2 before anything is paid or written (no model call,
// no results.jsonl), and --no-check skips the check; starter grade checks the graders first.
func TestCheckBeforeRunAndGrade(t *testing.T) {
	srv := fakeopenai.New(fakeopenai.WithModels(0, "some-other-model"))
	hs := httptest.NewServer(srv)
	defer hs.Close()
	checkEnv(t, "OPENAI_BASE_URL="+hs.URL+"/v1")
	runs := t.TempDir()
	spec := demoVariant(t, "{ name: 'chkrun', dataset+: { limit: 1 }, "+referenceMethods+" }")
	code, stdout, stderr := runMain("run", spec, "--runs", runs, "--ext-str", "model=openai")
	if code != exitcode.Usage || !strings.Contains(stderr, `does not serve model id "gpt-4o-mini"`) {
		t.Errorf("run: exit %d\n%s%s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(runs, "chkrun", "results.jsonl")); !os.IsNotExist(err) {
		t.Errorf("results.jsonl after a failed check: %v", err)
	}
	if srv.Calls() != 0 {
		t.Errorf("%d model calls after a failed check", srv.Calls())
	}
	// With --no-worker the endpoint (and the graders, the repositories) are the workers', with their environment:
	// this starter's has no say, and the run goes on to the cluster (here an address nothing answers).
	closedPort, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	address := closedPort.Addr().String()
	closedPort.Close()
	oldDial := cluster.DialTimeout
	cluster.DialTimeout = 3 * time.Second
	code, stdout, stderr = runMain("run", spec, "--runs", runs, "--ext-str", "model=openai", "--no-worker",
		"--address", address)
	cluster.DialTimeout = oldDial
	if code == exitcode.Usage || strings.Contains(stderr, "does not serve model id") ||
		!strings.Contains(stdout+stderr, "this starter runs no worker (--no-worker)") ||
		!strings.Contains(stderr, "cannot reach Temporal at "+address) {
		t.Errorf("run --no-worker: exit %d, want the check's note and the cluster's error\n%s%s", code, stdout, stderr)
	}

	bench, err := demobench.Generate(filepath.Join(t.TempDir(), "dataset"))
	if err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = runMain("grade", "--dataset", bench.File, "--predictions", "gold", "--runs", runs,
		"--tests", "listed", "--goproxy", "file://{dataset_dir}/goproxy",
		"--test-cmd", `{"python": "python3 -m no_such_runner -v"}`)
	if code != exitcode.Usage || !strings.Contains(stderr, "instance acme__tablefmt-1") ||
		!strings.Contains(stderr, "cannot import no_such_runner") || strings.Contains(stderr, "acme__humanize-1") {
		t.Errorf("grade: exit %d\n%s%s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(runs, "grade-gold", "results.jsonl")); !os.IsNotExist(err) {
		t.Errorf("grade wrote rows after a failed check: %v", err)
	}
}

// TestCheckTokenizer: a model whose budgets its server counts (tokenizer 'endpoint') against an endpoint that has no
// /tokenize (OpenAI's API, or the fake) would fail every row of that model once the sweep has begun; the check
// names the tokenizer and the fix before anything runs, and passes a server that tokenizes.
func TestCheckTokenizer(t *testing.T) {
	runs := t.TempDir()
	spec := demoVariant(t, "{ name: 'chkt', dataset+: { limit: 1 }, "+referenceMethods+" }")
	args := []string{"check", spec, "--runs", runs, "--ext-str", "model=openai", "--ext-str", "openai_tokenizer=endpoint"}
	fake := fakeopenai.New(fakeopenai.WithModels(0, "gpt-4o-mini"))
	hs := httptest.NewServer(fake)
	defer hs.Close()
	checkEnv(t, "OPENAI_BASE_URL="+hs.URL+"/v1")
	code, stdout, stderr := runMain(args...)
	if code != exitcode.Usage || !strings.Contains(stderr, "tokenizer endpoint:gpt-4o-mini: the server at 127.0.0.1 "+
		"does not tokenize") || !strings.Contains(stderr, "tokenizer: 'o200k_base'") {
		t.Errorf("no /tokenize: exit %d, want %d naming the tokenizer and its fix\n%s%s", code, exitcode.Usage, stdout, stderr)
	}

	mux := http.NewServeMux()
	mux.Handle("/v1/", fake)
	mux.HandleFunc("POST /tokenize", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"tokens": [1, 2, 3]}`))
	})
	tokenizing := httptest.NewServer(mux)
	defer tokenizing.Close()
	checkEnv(t, "OPENAI_BASE_URL="+tokenizing.URL+"/v1")
	code, stdout, stderr = runMain(args...)
	if code != exitcode.OK || !strings.Contains(stdout, "tokenizer endpoint:gpt-4o-mini counts") {
		t.Errorf("a server that tokenizes: exit %d\n%s%s", code, stdout, stderr)
	}

	// Issue 39: a count no tokenizer gives (a negative one made every spend reservation $0) is a broken
	// tokenizer, refused before anything runs.
	mux = http.NewServeMux()
	mux.Handle("/v1/", fake)
	mux.HandleFunc("POST /tokenize", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"count": -1000000000}`))
	})
	negative := httptest.NewServer(mux)
	defer negative.Close()
	checkEnv(t, "OPENAI_BASE_URL="+negative.URL+"/v1")
	code, stdout, stderr = runMain(args...)
	if code != exitcode.Usage || !strings.Contains(stderr, "tokenizer endpoint:gpt-4o-mini: the server at 127.0.0.1 "+
		"counts what no tokenizer counts") || !strings.Contains(stderr, "-1000000000") {
		t.Errorf("a negative count: exit %d, want %d naming the tokenizer and its count\n%s%s", code, exitcode.Usage,
			stdout, stderr)
	}
}
