package steps

import (
	"context"
	"encoding/json"

	"ctxlab/activities/limiter"
	"ctxlab/activities/llm"
	"ctxlab/activities/tokens"
	"ctxlab/specs"
)

// Budget lets a step's paid calls go under the run's spend cap and provider limits, which the run's budget workflow
// holds for every worker (a limiter.Purse of the process, for the step's attempt).
type Budget interface {
	// Admit waits until a call to provider may go (calls in flight, the provider's limits), or fails with a
	// *limiter.CapError when the call's worst case (worst, computed only when the run has a cap) does not fit
	// beside the spend so far. The caller calls settle once the call ended, with what it cost and whether it was
	// sent.
	Admit(ctx context.Context, provider string, worst func() float64) (settle func(costUSD float64, sent bool), err error)
}

// LimitsOf returns a spec's run limits: what the starter sets on the run's budget.
func LimitsOf(e *specs.Experiment) limiter.Limits {
	return limiter.Limits{SpendUSD: e.Limits.SpendUSD, Providers: e.Limits.Providers}
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
