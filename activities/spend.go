package activities

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
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

// WriteLimits records the run limits in the run folder (atomically: workers read it at any time).
func WriteLimits(runDir string, l RunLimits) error {
	b, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return err
	}
	tmp := filepath.Join(runDir, runfolder.LimitsFile+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, runfolder.Limits(runDir))
}

// ReadLimits reads a run folder's limits; a folder without the file has none.
func ReadLimits(runDir string) (RunLimits, error) {
	var l RunLimits
	b, err := os.ReadFile(runfolder.Limits(runDir))
	if errors.Is(err, fs.ErrNotExist) {
		return l, nil
	}
	if err != nil {
		return l, err
	}
	if err := json.Unmarshal(b, &l); err != nil {
		return l, fmt.Errorf("%s: %w", runfolder.Limits(runDir), err)
	}
	return l, nil
}

// ErrSpendLimit is the type of the error a model call fails with when the run has spent its cap. The Issue
// workflow does not fail the node: it waits and tries again, so the sweep continues once the cap is raised.
const ErrSpendLimit = api.ErrSpendLimit

// tally follows a run's calls.jsonl and keeps the dollars paid so far, reading only what was appended since the
// last look: every worker process sees every other's calls.
type tally struct {
	mu    sync.Mutex
	calls runlog.Tail[runlog.Call]
	total float64
}

// spent returns the dollars paid by the run's calls so far.
func (a *Activities) spent(run string) (float64, error) {
	a.mu.Lock()
	if a.tallies == nil {
		a.tallies = map[string]*tally{}
	}
	t, ok := a.tallies[run]
	if !ok {
		t = &tally{calls: runlog.Tail[runlog.Call]{Path: runfolder.Calls(a.RunDir(run))}}
		a.tallies[run] = t
	}
	a.mu.Unlock()

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

// limiter returns the limiter of a provider in a run, nil when the run sets no limits for it.
func (a *Activities) limiter(run, provider string, l RunLimits) *limiter.Limiter {
	pl, ok := l.Providers[provider]
	if !ok || (pl.InFlight <= 0 && pl.RPS <= 0) {
		return nil
	}
	return limiter.New(runfolder.ProviderLimits(a.RunDir(run), provider),
		limiter.Limits{InFlight: pl.InFlight, RPS: pl.RPS})
}

// spendCap is the run's spend cap, shared by every worker that shares the run folder.
func (a *Activities) spendCap(run string) *limiter.SpendCap {
	return &limiter.SpendCap{Dir: runfolder.SpendLimits(a.RunDir(run)),
		Spent: func() (float64, error) { return a.spent(run) }}
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
	if strings.HasPrefix(tokenizer, specs.TokenizerAnthropic+":") {
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
	answer := llm.MaxTokensCap(m.MaxTokens, endpoint, req.Context)
	if m.Provider == "anthropic" {
		answer = llm.AnthropicMaxTokens(m.MaxTokens) // always sent: the answer can be no longer
	}
	if answer <= 0 {
		answer = unknownAnswerTokens
	}
	return float64(prompt)*m.Price.MaxInput()/1e6 + float64(answer)*m.Price.Output/1e6
}
