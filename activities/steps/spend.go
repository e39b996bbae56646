package steps

import (
	"encoding/json"
	"math"
	"sync"

	"ctxlab/activities/api"
	"ctxlab/activities/limiter"
	"ctxlab/activities/llm"
	"ctxlab/activities/tokens"
	"ctxlab/runfolder"
	"ctxlab/runlog"
	"ctxlab/specs"
)

// runfolder.LimitsFile is where a starter writes the limits of the spec it runs, in the run folder. Workers read it before
// every paid call, so raising the spend cap or a rate limit takes effect in a running sweep, on every worker that
// shares the run folder, without restarting anything.

// RunLimits are the limits of a run that are not part of what it computes.
type RunLimits struct {
	SpendUSD  float64                        `json:"spend_usd,omitempty"`
	Providers map[string]specs.ProviderLimit `json:"providers,omitempty"`
}

// LimitsOf returns a spec's run limits.
func LimitsOf(e *specs.Experiment) RunLimits {
	return RunLimits{SpendUSD: e.Limits.SpendUSD, Providers: e.Limits.Providers}
}

// WriteLimits records the run limits in the run folder (runfolder.WriteLimits: atomically, workers read it at any
// time).
func WriteLimits(runDir string, l RunLimits) error { return runfolder.WriteLimits(runDir, l) }

// ReadLimits reads a run folder's limits; a folder without the file has none.
func ReadLimits(runDir string) (RunLimits, error) {
	var l RunLimits
	err := runfolder.ReadLimits(runDir, &l)
	return l, err
}

// ErrSpendLimit is the type of the error a model call fails with when the run has spent its cap. The Issue
// workflow does not fail the node: it waits and tries again, so the sweep continues once the cap is raised.
const ErrSpendLimit = api.ErrSpendLimit

// Spending keeps the dollars each run's calls have paid so far, by run folder: it follows the run's calls.jsonl,
// reading only what was appended since the last look, so every worker process sees every other's calls. One is
// shared by a process's steps; the zero value is ready.
type Spending struct {
	mu      sync.Mutex
	tallies map[string]*tally
}

// tally is one run's: its ledger's tail and the total so far.
type tally struct {
	mu    sync.Mutex
	calls runlog.Tail[runlog.Call]
	total float64
}

// Spent returns the dollars paid by the calls of the run in runDir so far.
func (s *Spending) Spent(runDir string) (float64, error) {
	s.mu.Lock()
	if s.tallies == nil {
		s.tallies = map[string]*tally{}
	}
	t, ok := s.tallies[runDir]
	if !ok {
		t = &tally{calls: runlog.Tail[runlog.Call]{Path: runfolder.Calls(runDir)}}
		s.tallies[runDir] = t
	}
	s.mu.Unlock()

	t.mu.Lock()
	defer t.mu.Unlock()
	calls, err := t.calls.Next()
	if err != nil {
		return 0, err
	}
	for _, c := range calls {
		// A cost that cannot be real (negative, NaN or infinite, in a ledger written before usage was checked) is
		// no money: counted, it would lower the spend and let calls pass the cap.
		if c.Paid() && c.CostUSD > 0 && !math.IsInf(c.CostUSD, 0) {
			t.total += c.CostUSD
		}
	}
	return t.total, nil
}

// limiter returns the limiter of a provider in the run, nil when the run sets no limits for it.
func (j *job) limiter(provider string, l RunLimits) *limiter.Limiter {
	pl, ok := l.Providers[provider]
	if !ok || (pl.InFlight <= 0 && pl.RPS <= 0) {
		return nil
	}
	return limiter.New(runfolder.ProviderLimits(j.env.RunDir, provider),
		limiter.Limits{InFlight: pl.InFlight, RPS: pl.RPS})
}

// spendCap is the run's spend cap, shared by every worker that shares the run folder.
func (j *job) spendCap() *limiter.SpendCap {
	spending := j.env.Models.Spending
	if spending == nil {
		spending = &Spending{}
	}
	runDir := j.env.RunDir
	return &limiter.SpendCap{Dir: runfolder.SpendLimits(runDir),
		Spent: func() (float64, error) { return spending.Spent(runDir) }}
}

// unknownAnswerTokens is the answer a reservation assumes when nothing caps it: no max_tokens in the spec, and a
// remote endpoint that does not say how large its context is (the endpoint's own output limit applies, which
// ctxlab cannot read).
const unknownAnswerTokens = 32768

// worstCaseUSD is the most a call can cost: its prompt's tokens estimated as the openai provider estimates them
// when the server cannot count (the tokenizer's count, a quarter more, and 16 tokens a message for the template),
// all priced as the dearest input (a cache write costs more than plain input), and an answer as long as max_tokens
// allows priced as output.
func worstCaseUSD(m specs.Model, req llm.Request, endpoint, tokenizer string) float64 {
	prompt := 0
	margin := 4 // a quarter more
	if specs.MeteredTokenizer(tokenizer) {
		// Not a count_tokens request for every reservation (it has rate limits of its own): o200k_base, and half
		// again, a margin for Claude's tokenizer, which counts more tokens than o200k_base for most text.
		tokenizer, margin = specs.FallbackTokenizer, 2
	}
	for _, msg := range req.Messages {
		c, err := tokens.Count(tokenizer, msg.Content)
		if err != nil {
			c = len(msg.Content) // a byte a token: never fewer tokens than that for the tokenizers in use
		}
		prompt += c + c/margin + 16
	}
	for _, t := range req.Tools {
		b, _ := json.Marshal(t)
		prompt += len(b) / 3
	}
	answer := llm.MaxTokens(m, endpoint, req.Context) // what the call asks for: the answer can be no longer
	if answer <= 0 {
		answer = unknownAnswerTokens
	}
	return float64(prompt)*m.Price.MaxInput()/1e6 + float64(answer)*m.Price.Output/1e6
}
