package e2e

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"ctxlab/activities/llm"
	"ctxlab/results"
	"ctxlab/runfolder"
	"ctxlab/runlog"
	"ctxlab/specs"
	"ctxlab/store/cas"
	"ctxlab/testkit/llamaserver"
)

// swerankSweepTimeout is TestLlamaSweRankSweep's deadline for each of its two sweeps: the first embeds every
// function and file of three repositories and asks the chat server for every window and patch; the second is
// answered from the cache.
const swerankSweepTimeout = 5 * time.Minute

// swerankSpec is SweRank's full pipeline, as specs/paper.jsonnet runs it (fitted to the anchor's tokens on each
// issue), and whole_files_dense, on two demo instances under the real model. The pipeline's knobs are small enough
// for the model's 2048-token slots: four candidates, two a window of three lines each; every embedded text is cut at
// 400 cl100k_base tokens, which the server's 2048-token batch holds in this model's tokens. The anchor is
// oracle_files, whose context needs no model; a quarter of its tokens leaves the patch prompts room in a slot.
const swerankSpec = `{ name: 'llamaswerank', anchor:: null, dataset+: { limit: 2 },
  local b = ctxlab.baselines, local m = ctxlab.methods,
  local cut = { embedding_model: 'Salesforce/SweRankEmbed-Small', embedding_max_tokens: 400 },
  methods: [
    b.fitted(b.swerank('swerank', 'dense', cut + { top_k: 4, window: 2, step: 1, max_lines: 3 }), m.oracle_files, 0.25,
             name='swerank'),
    b.fitted(b.retriever('whole_files_dense', 'file', 'dense', cut + { partial: false }), m.oracle_files, 0.25,
             name='whole_files_dense'),
  ], ` + llamaAnswers + ` }`

// swerankServers starts a chat server and an embeddings server of the test's own (four slots of 2048 tokens each,
// so that no call waits for another's share of a shared context) and a recording proxy in front of both.
func swerankServers(t *testing.T) (string, *answerRecorder) {
	t.Helper()
	chat := llamaserver.Start(t, llamaserver.Options{Context: 4 * 2048, Slots: 4})
	emb := llamaserver.Start(t, llamaserver.Options{Context: 4 * 2048, Slots: 4, Embeddings: true, Batch: 2048})
	rec := &answerRecorder{chat: chat.URL, emb: emb.URL, usage: map[string][]llm.Usage{}, statuses: map[int]int{}}
	proxy := httptest.NewServer(rec)
	t.Cleanup(proxy.Close)
	return proxy.URL + "/v1", rec
}

// rankedID is a candidate's id as SweRank's answer format writes it.
var rankedID = regexp.MustCompile(`\[[0-9]+\]`)

// rerankWindows are, per instance, the distinct reranking calls of a run's ledger that the server answered (each
// held against the server's own record), and how many of their answers name no candidate in SweRank's format.
func rerankWindows(t *testing.T, dir string, plan *specs.Plan, rec *answerRecorder) (windows, unparsed map[string]int) {
	t.Helper()
	rerankNodes := map[string]bool{}
	for _, n := range plan.Nodes {
		if n.Activity == specs.ListwiseRerank.Name {
			rerankNodes[n.Key] = true
		}
	}
	calls, bad, err := runlog.Read[runlog.Call](filepath.Join(dir, runfolder.CallsFile))
	if err != nil || bad > 0 {
		t.Fatalf("calls.jsonl: %v, %d torn lines", err, bad)
	}
	store, err := cas.NewDir(filepath.Join(dir, "cas"))
	if err != nil {
		t.Fatal(err)
	}
	windows, unparsed = map[string]int{}, map[string]int{}
	seen := map[[2]string]bool{}
	for _, c := range calls {
		k := [2]string{c.Instance, c.Key}
		if !rerankNodes[c.Node] || c.Error != "" || seen[k] {
			continue
		}
		seen[k] = true
		var msgs []llm.Message
		var resp llm.Response
		if err := cas.GetJSON(context.Background(), store, c.Request, &msgs); err != nil {
			t.Fatalf("the request of call %s: %v", c.Key[:12], err)
		}
		if err := cas.GetJSON(context.Background(), store, c.Response, &resp); err != nil {
			t.Fatalf("the answer of call %s: %v", c.Key[:12], err)
		}
		if !rec.serverUsage(msgs, resp.Text, resp.Usage) {
			t.Errorf("%s: a reranking answer the server never sent: %.200q", c.Instance, resp.Text)
		}
		windows[c.Instance]++
		if !rankedID.MatchString(resp.Text) {
			unparsed[c.Instance]++
		}
	}
	return windows, unparsed
}

// rerankAnswers is how many chat answers the server sent to reranking prompts (the listwise prompt's system text).
func (a *answerRecorder) rerankAnswers() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for k, us := range a.usage {
		msgs, _, _ := strings.Cut(k, "\x00")
		var m []llm.Message
		if json.Unmarshal([]byte(msgs), &m) == nil && len(m) > 0 && strings.Contains(m[0].Content,
			"code ranking assistant") {
			n += len(us)
		}
	}
	return n
}

// TestLlamaSweRankSweep runs SweRank's full pipeline (issue 42) against real servers of its own: dense retrieval of
// functions by llama-server's embeddings, the listwise reranker's windows asked of the chat server as the model under
// test, the context fitted to the anchor's budget, then patch and grade; and whole_files_dense beside it. Every row
// is there once and free of errors, or a context_length row where the tiny model's slot cannot hold a prompt; each
// reranking row's windows are the chat answers the server sent for it, and its unparsed windows those answers that
// name no candidate; each row's tokens are the server's usage of its calls, and its embedding tokens add up to the
// server's; a second run of the same spec with the same cache pays for nothing and writes the same rows.
func TestLlamaSweRankSweep(t *testing.T) {
	t.Parallel()
	base, rec := swerankServers(t)
	setStarterEnv(t, "OPENAI_BASE_URL="+base, "OPENAI_API_KEY=")
	spec := libVariant(t, swerankSpec)
	plan := planOf(t, spec)
	runs, cache := t.TempDir(), t.TempDir()
	// Without the check, whose one embedding of two words no row counts.
	args := append([]string{"run", spec, "--runs", runs, "--cache", cache, "--quiet", "--no-check"}, llamaArgs...)
	llamaSweep(t, rec, swerankSweepTimeout, args...)

	dir := filepath.Join(runs, "llamaswerank")
	rows := readRows(t, filepath.Join(dir, "results.jsonl"))
	if len(rows) != 2*len(plan.Arms) || len(plan.Arms) != 2 {
		t.Errorf("%d rows of %d arms, want 2 instances x 2 methods: %v", len(rows), len(plan.Arms), keys(rows))
	}
	kinds := checkRowErrors(t, rows)
	for kind := range kinds {
		if kind != "context_length" {
			t.Errorf("rows of error kind %s: only a prompt longer than a slot may fail here", kind)
		}
	}
	checkRowsUsage(t, rows, plan, callUsage(t, dir, rec))

	windows, unparsed := rerankWindows(t, dir, plan, rec)
	allWindows, embTotal := 0, 0
	for k, r := range rows {
		tok, _ := r.Float(specs.EmbeddingTokens.Name)
		embTotal += int(tok)
		if r[results.FieldError] != nil {
			t.Logf("%v: %s: %.300v", k, r.String(results.FieldErrorKind), r[results.FieldError])
			continue
		}
		if tok < 1 {
			t.Errorf("%v: no embedding tokens", k)
		}
		if _, graded := r.Bool(specs.Resolved.Name); !graded {
			t.Errorf("%v: not graded: %v", k, r)
		}
		if k.Method != "swerank" {
			continue
		}
		w, _ := specs.ListwiseWindows.Get(r)
		u, _ := specs.ListwiseUnparsed.Get(r)
		cands, _ := specs.ListwiseCandidates.Get(r)
		allWindows += w
		// Four candidates, two a window, one up: three windows, each one call the server answered.
		if cands != 4 || w != 3 || w != windows[k.Instance] || u != unparsed[k.Instance] {
			t.Errorf("%v: %d candidates, %d windows, %d unparsed; the server answered %d windows, %d naming no "+
				"candidate", k, cands, w, u, windows[k.Instance], unparsed[k.Instance])
		}
		if reached, _ := r.Bool(specs.BudgetReached.Name); !reached {
			t.Errorf("%v: the budget was not reached: %v", k, r)
		}
	}
	if got := rec.rerankAnswers(); got != allWindows {
		t.Errorf("the server answered %d reranking prompts, the rows count %d windows", got, allWindows)
	}
	embCalls, embTokens := rec.embeddings()
	if embCalls == 0 || embTotal != embTokens {
		t.Errorf("the rows count %d embedding tokens, the server %d in %d requests", embTotal, embTokens, embCalls)
	}
	t.Logf("row errors by kind: %v; %d reranking windows, unparsed per instance %v; %d embeddings requests, %d tokens",
		kinds, allWindows, unparsed, embCalls, embTokens)

	// The same spec again, in another run folder beside the same cache: every node runs again, and every chat
	// answer and every embedding comes from the cache (the vectors are kept beside the answers, docs/models.md).
	chatBefore, _ := rec.chatAnswers()
	runs2 := t.TempDir()
	llamaSweep(t, rec, swerankSweepTimeout, append([]string{"run", spec, "--runs", runs2, "--cache", cache, "--quiet",
		"--no-check"}, llamaArgs...)...)
	chatAfter, _ := rec.chatAnswers()
	if n := chatAfter[http.StatusOK] - chatBefore[http.StatusOK]; n != 0 {
		t.Errorf("the second run was answered %d times by the chat server", n)
	}
	if calls, tok := rec.embeddings(); calls != embCalls || tok != embTokens {
		t.Errorf("the second run asked the embeddings server %d more times (%d tokens)", calls-embCalls,
			tok-embTokens)
	}
	dir2 := filepath.Join(runs2, "llamaswerank")
	first, second := answeredCalls(t, dir), answeredCalls(t, dir2)
	if first.paid != chatBefore[http.StatusOK] || second.paid != 0 || second.cached != first.paid {
		t.Errorf("ledgers: the first run paid %d answers (the server sent %d), the second paid %d and read %d "+
			"from the cache", first.paid, chatBefore[http.StatusOK], second.paid, second.cached)
	}
	// Rows are the first run's but for what the embeddings cost: nothing, each vector read from the cache.
	again := readRows(t, filepath.Join(dir2, "results.jsonl"))
	for k, r := range rows {
		tok, _ := again[k].Float(specs.EmbeddingTokens.Name)
		cached, _ := again[k].Float(specs.EmbeddingsCached.Name)
		if r.String("error") == "" && (tok != 0 || cached == 0) {
			t.Errorf("%v: the second run paid %v embedding tokens and read %v vectors from the cache", k, tok,
				cached)
		}
		a, b := maps.Clone(r), maps.Clone(again[k])
		for _, f := range []string{specs.EmbeddingTokens.Name, specs.EmbeddingsCached.Name} {
			delete(a, f)
			delete(b, f)
		}
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%v differs when answered from the cache:\n%v\n%v", k, r, again[k])
		}
	}
	t.Logf("second run: %d answers from the cache, none paid", second.cached)
}

// ledgerCounts are the model calls of a run's ledger that got an answer: paid, or read from the cache.
type ledgerCounts struct{ paid, cached int }

// answeredCalls counts a run's answered calls (a call refused before it was sent, such as a prompt longer than the
// model's context, carries an error and got no answer).
func answeredCalls(t *testing.T, dir string) ledgerCounts {
	t.Helper()
	calls, bad, err := runlog.Read[runlog.Call](filepath.Join(dir, runfolder.CallsFile))
	if err != nil || bad > 0 {
		t.Fatalf("calls.jsonl: %v, %d torn lines", err, bad)
	}
	var n ledgerCounts
	for _, c := range calls {
		switch {
		case c.Error != "":
		case c.Cached:
			n.cached++
		default:
			n.paid++
		}
	}
	return n
}
