package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"ctxlab/activities/api/errkind"
	"ctxlab/activities/llm"
	"ctxlab/jsonnet"
	"ctxlab/results"
	"ctxlab/runfolder"
	"ctxlab/runlog"
	"ctxlab/specs"
	"ctxlab/store/cas"
	"ctxlab/testkit/e2e"
	"ctxlab/testkit/llamaserver"
)

// The llama tests run the demo against real llama.cpp servers (testkit/llamaserver: Debian's llama-server with the
// real stories260K model, a 2048-token context per slot), as the README's command does:
//
//	starter run specs/demo.jsonnet --ext-str model=openai --ext-str openai_model=stories260K
//
// One server answers chat, a second (--embeddings --pooling mean) embeddings; OPENAI_BASE_URL names a proxy in front
// of both that routes /v1/embeddings to the second, as a gateway would, and keeps every answer as the server sent it
// (its usage above all), so the rows can be held against the server's own counts.

// Each llama test's own deadline, far above what it takes on a 2-core machine and far below go test's: a sweep that
// waits on an outage that is not (issue 27: it used to wait for hours, and the killed sweep hung the package until
// go test's 30 minutes ran out) fails its test, saying what it waited for.
const (
	llamaDemoTimeout  = 12 * time.Minute // the whole demo: 7m43s for 230 of its 253 rows in a CI run at load 10-18
	llamaSweepTimeout = 4 * time.Minute  // a smaller sweep
	llamaCheckTimeout = time.Minute      // one starter check
)

// llamaServers are the servers the llama tests share, started on first use and stopped when the tests end.
var llamaServers struct {
	once      sync.Once
	err       error
	chat, emb *llamaserver.Server
}

// llamaProxy returns a base URL (OPENAI_BASE_URL) in front of the shared servers, started once, and its recorder:
// each test has its own, so it counts that test's answers only.
func llamaProxy(t *testing.T) (string, *answerRecorder) {
	t.Helper()
	model, root := llamaserver.Require(t)
	s := &llamaServers
	s.once.Do(func() {
		if s.chat, s.err = llamaserver.Launch(root, model, llamaserver.Options{Context: 4096}); s.err != nil {
			return
		}
		// A physical batch as large as a slot's context: the default, 512, refuses longer functions.
		s.emb, s.err = llamaserver.Launch(root, model, llamaserver.Options{Context: 4096, Embeddings: true,
			Batch: 2048})
	})
	if s.err != nil {
		t.Fatal(s.err)
	}
	rec := &answerRecorder{chat: s.chat.URL, emb: s.emb.URL, usage: map[string][]llm.Usage{},
		statuses: map[int]int{}}
	proxy := httptest.NewServer(rec)
	t.Cleanup(proxy.Close)
	return proxy.URL + "/v1", rec
}

// stopSharedLlama stops the shared servers (TestMain).
func stopSharedLlama() {
	for _, srv := range []*llamaserver.Server{llamaServers.chat, llamaServers.emb} {
		if srv != nil {
			srv.Stop()
		}
	}
}

// answerRecorder forwards every request to the chat server (embeddings to the embeddings server) and records what
// the servers answered: per chat request and answer text, the usage the server reported; the embeddings' usage; and
// the count of chat answers by status.
type answerRecorder struct {
	chat, emb string

	mu              sync.Mutex
	inFlight        int                    // chat completion requests sent on and not answered yet
	usage           map[string][]llm.Usage // answerKey -> the usage of each 200 answer
	statuses        map[int]int            // chat completion answers by HTTP status
	embeddingTokens int
	embeddingCalls  int
	bodies          []string // the error bodies of chat answers, for the failure messages
}

// answerKey identifies an answer by the messages asked and the text answered.
func answerKey(msgs []llm.Message, text string) string {
	b, _ := json.Marshal(msgs)
	return string(b) + "\x00" + text
}

func (a *answerRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	upstream := a.chat
	if strings.HasSuffix(r.URL.Path, "/embeddings") {
		upstream = a.emb
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, upstream+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	req.Header = r.Header.Clone()
	chat := strings.HasSuffix(r.URL.Path, "/chat/completions")
	if chat {
		a.mu.Lock()
		a.inFlight++
		a.mu.Unlock()
		defer func() {
			a.mu.Lock()
			a.inFlight--
			a.mu.Unlock()
		}()
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	a.record(r.URL.Path, body, resp.StatusCode, out)
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(out)
}

func (a *answerRecorder) record(path string, reqBody []byte, status int, respBody []byte) {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case strings.HasSuffix(path, "/chat/completions"):
		a.statuses[status]++
		if status != http.StatusOK {
			a.bodies = append(a.bodies, fmt.Sprintf("%d %.300s", status, respBody))
			return
		}
		var req struct {
			Messages []llm.Message `json:"messages"`
		}
		var ans struct {
			Choices []struct {
				Message struct {
					Content string `json:"content"`
				} `json:"message"`
			} `json:"choices"`
			Usage struct {
				PromptTokens        int `json:"prompt_tokens"`
				CompletionTokens    int `json:"completion_tokens"`
				PromptTokensDetails struct {
					// llama.cpp reports the prompt tokens its slot's cache already held (the localize samples
					// share their prompt).
					CachedTokens int `json:"cached_tokens"`
				} `json:"prompt_tokens_details"`
			} `json:"usage"`
		}
		if json.Unmarshal(reqBody, &req) != nil || json.Unmarshal(respBody, &ans) != nil || len(ans.Choices) == 0 {
			return
		}
		k := answerKey(req.Messages, ans.Choices[0].Message.Content)
		a.usage[k] = append(a.usage[k], llm.Usage{PromptTokens: ans.Usage.PromptTokens,
			CompletionTokens: ans.Usage.CompletionTokens, CachedTokens: ans.Usage.PromptTokensDetails.CachedTokens})
	case strings.HasSuffix(path, "/embeddings") && status == http.StatusOK:
		var ans struct {
			Usage struct {
				PromptTokens int `json:"prompt_tokens"`
			} `json:"usage"`
		}
		if json.Unmarshal(respBody, &ans) == nil {
			a.embeddingTokens += ans.Usage.PromptTokens
			a.embeddingCalls++
		}
	}
}

// serverUsage reports whether the server sent this answer with the usage want. The same request may be answered
// more than once (a call in flight at a kill, the same prompt of two methods at once) with other cached-token counts
// (llama.cpp's slot cache held the prompt the second time); the stored answer must carry one of the server's counts.
func (a *answerRecorder) serverUsage(msgs []llm.Message, text string, want llm.Usage) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Contains(a.usage[answerKey(msgs, text)], want)
}

// inFlightNow is the number of chat requests the server is answering.
func (a *answerRecorder) inFlightNow() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.inFlight
}

// embeddings are the embedding requests answered and the prompt tokens the server counted for them.
func (a *answerRecorder) embeddings() (calls, tokens int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.embeddingCalls, a.embeddingTokens
}

func (a *answerRecorder) chatAnswers() (map[int]int, []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := map[int]int{}
	for k, v := range a.statuses {
		st[k] = v
	}
	return st, append([]string(nil), a.bodies...)
}

// llamaAnswers caps the model's answers in the llama tests' sweeps at 64 tokens, a spec's own max_tokens: the real
// model writes stories that parse as nothing whatever their length, and at the README's 4,096 every answer runs to
// the end of its slot (about 1,000 tokens, seconds each on a 2-core machine, minutes for the demo's calls). The
// server is still started as a user would, and prompts up to a slot long still fill its shared context.
const llamaAnswers = "models: [m + { max_tokens: 64 } for m in super.models]"

// llamaArgs are the README's flags for the real model.
var llamaArgs = []string{"--ext-str", "model=openai", "--ext-str", "openai_model=" + llamaserver.ModelID}

// planOf compiles a spec as starter run does with llamaArgs.
func planOf(t *testing.T, spec string) *specs.Plan {
	t.Helper()
	var flags jsonnet.Flags
	fs := pflag.NewFlagSet("compile", pflag.ContinueOnError)
	flags.Register(fs)
	if err := fs.Parse(llamaArgs); err != nil {
		t.Fatal(err)
	}
	e, err := jsonnet.Compile(spec, flags.Options())
	if err != nil {
		t.Fatal(err)
	}
	plan, err := specs.BuildPlan(e)
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// callUsage is the usage of a run's model calls as the server reported it, per (instance, node): the calls in
// calls.jsonl that got an answer, each distinct request once (a failed attempt's calls are asked again, and served
// from the cache, by the attempt that finishes).
func callUsage(t *testing.T, runDir string, rec *answerRecorder) map[[2]string]llm.Usage {
	t.Helper()
	calls, bad, err := runlog.Read[runlog.Call](filepath.Join(runDir, runfolder.CallsFile))
	if err != nil || bad > 0 {
		t.Fatalf("calls.jsonl: %v, %d torn lines", err, bad)
	}
	store, err := cas.NewDir(filepath.Join(runDir, "cas"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	out := map[[2]string]llm.Usage{}
	seen := map[[3]string]bool{}
	unmatched := 0
	for _, c := range calls {
		k := [3]string{c.Instance, c.Node, c.Key}
		if c.Error != "" || seen[k] {
			continue
		}
		seen[k] = true
		var msgs []llm.Message
		var resp llm.Response
		if err := cas.GetJSON(ctx, store, c.Request, &msgs); err != nil {
			t.Fatalf("the request of call %s: %v", c.Key[:12], err)
		}
		if err := cas.GetJSON(ctx, store, c.Response, &resp); err != nil {
			t.Fatalf("the answer of call %s: %v", c.Key[:12], err)
		}
		u := resp.Usage
		if !rec.serverUsage(msgs, resp.Text, u) {
			unmatched++
			if unmatched <= 3 {
				t.Errorf("%s %s: the server never sent this answer (or sent it with other counts): %.200q",
					c.Instance, c.Step, resp.Text)
			}
			continue
		}
		if c.PromptTokens != u.PromptTokens || c.CompletionTokens != u.CompletionTokens ||
			c.CachedTokens != u.CachedTokens {
			t.Errorf("%s %s: the ledger counts %d+%d tokens (%d cached), the stored answer and the server %+v",
				c.Instance, c.Step, c.PromptTokens, c.CompletionTokens, c.CachedTokens, u)
		}
		// The agent's turns record their node as the agent node's key and the turn ("agent-KEY.t00.model").
		node, _, _ := strings.Cut(c.Node, ".")
		pair := [2]string{c.Instance, node}
		sum := out[pair]
		sum.PromptTokens += u.PromptTokens
		sum.CompletionTokens += u.CompletionTokens
		out[pair] = sum
	}
	if unmatched > 3 {
		t.Errorf("%d answers in all that the server did not send", unmatched)
	}
	return out
}

// checkRowsUsage holds every row's prompt_tokens and completion_tokens against the server's usage of its own
// steps' calls (borrowed steps describe another method's row). A row with an error may have fewer: its failed
// step's finished calls count on no row.
func checkRowsUsage(t *testing.T, rows map[results.Key]results.Row, plan *specs.Plan, usage map[[2]string]llm.Usage) {
	t.Helper()
	arms := map[string]specs.Arm{}
	for _, a := range plan.Arms {
		arms[a.Method] = a
	}
	checked := 0
	for k, r := range rows {
		var want llm.Usage
		for _, st := range arms[k.Method].Steps {
			if u := usage[[2]string{k.Instance, st.Key}]; !st.Borrowed {
				want.PromptTokens += u.PromptTokens
				want.CompletionTokens += u.CompletionTokens
			}
		}
		pt, _ := r.Float(specs.PromptTokens.Name)
		ct, _ := r.Float(specs.CompletionTokens.Name)
		got := llm.Usage{PromptTokens: int(pt), CompletionTokens: int(ct)}
		switch {
		case r[results.FieldError] == nil && got != want:
			t.Errorf("%v: prompt_tokens %d, completion_tokens %d; the server counted %d and %d for its calls", k,
				got.PromptTokens, got.CompletionTokens, want.PromptTokens, want.CompletionTokens)
		case r[results.FieldError] != nil && (got.PromptTokens > want.PromptTokens ||
			got.CompletionTokens > want.CompletionTokens):
			t.Errorf("%v (error %v): %d+%d tokens, more than the server's %d+%d for its calls", k, r[results.FieldError],
				got.PromptTokens, got.CompletionTokens, want.PromptTokens, want.CompletionTokens)
		}
		if want.PromptTokens > 0 {
			checked++
		}
	}
	if checked == 0 {
		t.Error("no row has a model call the server answered: nothing was compared")
	}
	t.Logf("usage of %d rows held against the server's", checked)
}

// llamaSweep runs the starter and fails the test, with the chat answers' statuses and errors, when it does not exit
// with 0 or 4 (rows with errors: the model's own, with this model) in time.
func llamaSweep(t *testing.T, rec *answerRecorder, timeout time.Duration, args ...string) (stdout, stderr string) {
	t.Helper()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := starter(ctx, t, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	statuses, bodies := rec.chatAnswers()
	if ctx.Err() != nil {
		t.Fatalf("the sweep against llama-server did not finish in %s (chat answers by status: %v; last errors: %q); "+
			"stderr's end:\n%s", timeout, statuses, lastOf(bodies, 3), e2e.Tail(errb.String(), 4000))
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	if code != exitOK && code != exitRowErrors {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), e2e.Tail(errb.String(), 8000))
	}
	t.Logf("sweep finished in %s, exit %d; chat answers by status: %v", time.Since(start).Round(time.Second), code,
		statuses)
	return out.String(), errb.String()
}

func lastOf(s []string, n int) []string { return s[max(0, len(s)-n):] }

// checkRowErrors holds the rows' errors against what a working local server can cause: none waits on an outage
// (the endpoint answered every call), a prompt longer than the context is a context_length row, and no other row
// is (the answers' max_tokens fit beside their prompts, and calls that fill the slots' shared context together are
// asked again).
func checkRowErrors(t *testing.T, rows map[results.Key]results.Row) map[string]int {
	t.Helper()
	kinds := map[string]int{}
	for k, r := range rows {
		if r[results.FieldError] == nil {
			continue
		}
		kind := r.String(results.FieldErrorKind)
		kinds[kind]++
		msg := fmt.Sprint(r[results.FieldError])
		if errkind.Kind(kind).Retryable() {
			t.Errorf("%v: error kind %s, an outage of a server that answered every call: %.300s", k, kind, msg)
		}
		if strings.Contains(msg, "exceeds the available context size") && kind != string(errkind.ContextLength) {
			t.Errorf("%v: a prompt longer than the context filed as %s, not %s: %.300s", k, kind,
				errkind.ContextLength, msg)
		}
		// A context_length row is a prompt the server counted past a slot, by ctxlab before the call or by the
		// server's 400; the server's shared context running out under the calls in flight is no prompt's fault.
		if kind == string(errkind.ContextLength) && !strings.Contains(msg, "cannot fit") &&
			!strings.Contains(msg, "exceeds the available context size") {
			t.Errorf("%v: context_length, though nothing says its prompt is longer than the context: %.300s", k, msg)
		}
		if strings.Contains(msg, "Context size has been exceeded") {
			t.Errorf("%v: the server's shared context was full (kind %s), and the call was not asked again with "+
				"fewer beside it: %.300s", k, kind, msg)
		}
	}
	return kinds
}

// TestLlamaDemoSweep is issue 27's first story: the README's command against a real llama-server finishes, well
// inside the time it used to wait on outages that were not, with every row once; context errors are context_length
// rows; each row's tokens are the server's usage of its calls; the agent, whose tool calls this model never makes,
// ends each issue with a row that says so.
func TestLlamaDemoSweep(t *testing.T) {
	t.Parallel()
	base, rec := llamaProxy(t)
	setStarterEnv(t, "OPENAI_BASE_URL="+base, "OPENAI_API_KEY=")
	runs := t.TempDir()
	spec := demoVariant(t, "{ "+llamaAnswers+" }")
	llamaSweep(t, rec, llamaDemoTimeout, append([]string{"run", spec, "--runs", runs}, llamaArgs...)...)

	dir := filepath.Join(runs, "demo")
	rows := readRows(t, filepath.Join(dir, "results.jsonl"))
	plan := planOf(t, spec)
	if want := 11 * len(plan.Arms); len(rows) != want {
		t.Errorf("%d rows, want %d: one per instance and method", len(rows), want)
	}
	kinds := checkRowErrors(t, rows)
	// no_source's prompts are the issue and the prompt's own text, which fit a slot's 2048 tokens (starter check
	// counted the issues with the server): those rows cannot be the prompt's fault.
	for k, r := range rows {
		if k.Method == "no_source" && r[results.FieldError] != nil {
			t.Errorf("%v: %v (kind %s), though its prompt fits the context", k, r[results.FieldError],
				r.String(results.FieldErrorKind))
		}
	}
	checkRowsUsage(t, rows, plan, callUsage(t, dir, rec))
	agents := 0
	for k, r := range rows {
		if k.Method != "agent" {
			continue
		}
		agents++
		calls, _ := r.Float("agent_tool_calls")
		turns, _ := r.Float("agent_turns")
		if r[results.FieldError] == nil && (calls != 0 || turns < 1 || r.String("agent_stop") == "") {
			t.Errorf("%v: %v tool calls in %v turns, stop %q: this model makes no tool call", k, calls, turns,
				r.String("agent_stop"))
		}
		if resolved, _ := r.Bool(specs.Resolved.Name); resolved {
			t.Errorf("%v: resolved by a model that writes children's stories", k)
		}
	}
	if agents != 11 {
		t.Errorf("%d agent rows, want 11", agents)
	}
	t.Logf("row errors by kind: %v", kinds)
}

// TestLlamaKilledSweepResumes kills the starter with SIGKILL in the middle of a sweep against the real server,
// starts it again, and checks that the sweep completes with every row once, that no call whose answer was stored
// was paid again, and that the server answered no more calls than the ledger paid and the calls in flight at the
// kill.
func TestLlamaKilledSweepResumes(t *testing.T) {
	t.Parallel()
	base, rec := llamaProxy(t)
	setStarterEnv(t, "OPENAI_BASE_URL="+base, "OPENAI_API_KEY=")
	spec := demoVariant(t, "{ name: 'llamakill', dataset+: { limit: 3 }, methods: super.methods[0:6], "+
		llamaAnswers+" }")
	runs := t.TempDir()
	dir := filepath.Join(runs, "llamakill")
	args := append([]string{"run", spec, "--runs", runs, "--quiet"}, llamaArgs...)

	ctx, cancel := context.WithTimeout(context.Background(), llamaSweepTimeout)
	defer cancel()
	cmd := starter(ctx, t, args...)
	var errb e2e.SyncBuffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// Kill once some answers are stored and the sweep is not done.
	for paid := 0; paid < 4; {
		select {
		case <-ctx.Done():
			<-exited
			statuses, bodies := rec.chatAnswers()
			t.Fatalf("waited %s for 4 paid calls to kill the sweep after, and %d came (chat answers by status: %v; "+
				"last errors: %q); stderr's end:\n%s", llamaSweepTimeout, paid, statuses, lastOf(bodies, 3),
				e2e.Tail(errb.String(), 4000))
		case err := <-exited:
			t.Fatalf("the sweep ended (%v) before 4 calls were paid (%d were), so there was nothing to kill; "+
				"stderr's end:\n%s", err, paid, e2e.Tail(errb.String(), 4000))
		case <-time.After(200 * time.Millisecond):
		}
		calls, _, _ := runlog.Read[runlog.Call](filepath.Join(dir, runfolder.CallsFile))
		paid = 0
		for _, c := range calls {
			if c.Paid() && c.Error == "" {
				paid++
			}
		}
	}
	inFlight := rec.inFlightNow()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited
	if rs, _, err := results.ReadFile(filepath.Join(dir, "results.jsonl")); err == nil && len(rs) == 18 {
		t.Fatal("the kill came after every row was written")
	}

	llamaSweep(t, rec, llamaSweepTimeout, args...)
	rows := readRows(t, filepath.Join(dir, "results.jsonl"))
	if len(rows) != 3*6 {
		t.Errorf("%d rows after the restart, want 18: %v", len(rows), keys(rows))
	}
	checkRowErrors(t, rows)
	checkRowsUsage(t, rows, planOf(t, spec), callUsage(t, dir, rec))

	calls, _, err := runlog.Read[runlog.Call](filepath.Join(dir, runfolder.CallsFile))
	if err != nil {
		t.Fatal(err)
	}
	paid := map[string]int{}
	ledger := 0
	for _, c := range calls {
		if c.Paid() && c.Error == "" {
			paid[c.Key]++
			ledger++
		}
	}
	for k, n := range paid {
		if n > 1 {
			t.Errorf("request %s was paid %d times after its answer was stored", k[:12], n)
		}
	}
	// What the server answered beyond the ledger are the calls it was answering when the starter died.
	served, _ := rec.chatAnswers()
	if served[http.StatusOK] > ledger+inFlight || ledger > served[http.StatusOK] {
		t.Errorf("the server sent %d answers, the ledger paid %d, and %d calls were in flight at the kill",
			served[http.StatusOK], ledger, inFlight)
	}
	t.Logf("killed with %d calls in flight; %d different answers paid in all", inFlight, len(paid))
}

// TestLlamaDenseFunction runs dense retrieval over functions (dense_function, at its own budget) with the real
// embeddings server: every row is ranked with the server's vectors (each embeddings request the server answered
// is counted on exactly one row, so the rows' embedding_tokens add up to the server's usage), and shows chunks.
func TestLlamaDenseFunction(t *testing.T) {
	t.Parallel()
	base, rec := llamaProxy(t)
	setStarterEnv(t, "OPENAI_BASE_URL="+base, "OPENAI_API_KEY=")
	// Three instances: the embeddings server reads every function of each repository (about 25,000 tokens an
	// instance, seconds each on a 2-core machine). SweRank's reranking windows are not run here: beside the other
	// real-server tests, which share the chat server, its windows fill the slots' shared context and wait
	// (TestLlamaSweRankSweep runs them on servers of its own).
	spec := libVariant(t, "{ name: 'llamadense', anchor:: null, dataset+: { limit: 3 }, "+
		"methods: [ctxlab.methods.dense_function], "+llamaAnswers+" }")
	runs := t.TempDir()
	// Without the check, whose one embedding of two words no row counts.
	llamaSweep(t, rec, llamaSweepTimeout, append([]string{"run", spec, "--runs", runs, "--quiet", "--no-check"},
		llamaArgs...)...)
	rows := readRows(t, filepath.Join(runs, "llamadense", "results.jsonl"))
	if len(rows) != 3 {
		t.Errorf("%d rows, want 3", len(rows))
	}
	t.Logf("row errors by kind: %v", checkRowErrors(t, rows))
	total := 0
	for k, r := range rows {
		tok, _ := r.Float("embedding_tokens")
		shown, _ := r.Float(specs.ChunksShown.Name)
		total += int(tok)
		if r.String("error") == "" && shown < 1 {
			t.Errorf("%v: %v chunks shown", k, shown)
		}
	}
	calls, tokens := rec.embeddings()
	if calls == 0 || total != tokens {
		t.Errorf("the rows count %d embedding tokens, the server %d in %d requests", total, tokens, calls)
	}
	t.Logf("%d embeddings requests, %d tokens", calls, tokens)
}

// TestLlamaCheck runs starter check against the real server: the README's command passes, noting what the server
// says of its context (llama.cpp's /props: 4 slots of 2048 tokens, which share one context); a model id the server does not serve names the one it does; dense
// retrieval against the chat server, which answers no embeddings (HTTP 501), names the method.
func TestLlamaCheck(t *testing.T) {
	t.Parallel()
	base, _ := llamaProxy(t)
	setStarterEnv(t, "OPENAI_BASE_URL="+base, "OPENAI_API_KEY=")
	runs := t.TempDir()
	stdout, stderr, code := runStarter(t, llamaCheckTimeout, append([]string{"check", demoSpec(t), "--runs", runs},
		llamaArgs...)...)
	if code != exitOK || !strings.Contains(stdout, "llama.cpp's /props, per slot") ||
		!strings.Contains(stdout, "serves 4 requests at once, each with a context of 2048 tokens") ||
		!strings.Contains(stdout, "model "+llamaserver.ModelID+" served by 127.0.0.1") {
		t.Errorf("the README's command: exit %d\n%s%s", code, stdout, stderr)
	}
	stdout, stderr, code = runStarter(t, llamaCheckTimeout, "check", demoSpec(t), "--runs", runs, "--ext-str",
		"model=openai", "--ext-str", "openai_model=gpt-4o-mini")
	if code != exitUsage || !strings.Contains(stderr, `does not serve model id "gpt-4o-mini" (it serves `+
		llamaserver.ModelID+")") {
		t.Errorf("an id the server does not serve: exit %d\n%s%s", code, stdout, stderr)
	}
	setStarterEnv(t, "OPENAI_BASE_URL="+llamaServers.chat.URL+"/v1")
	spec := libVariant(t, "{ name: 'llamadense', anchor:: null, methods: [ctxlab.methods.dense_function] }")
	stdout, stderr, code = runStarter(t, llamaCheckTimeout, append([]string{"check", spec, "--runs", runs},
		llamaArgs...)...)
	if code != exitUsage || !strings.Contains(stderr, "method dense_function: no embeddings") ||
		!strings.Contains(stderr, "HTTP 501") {
		t.Errorf("embeddings from the chat server: exit %d\n%s%s", code, stdout, stderr)
	}
}
