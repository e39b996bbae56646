package checks

import (
	"context"
	"fmt"
	"strings"

	"ctxlab/activities/api/errkind"
	"ctxlab/activities/llm"
	"ctxlab/activities/tokens"
	"ctxlab/specs"
)

// tokenizerProbe is the text a remote tokenizer is asked to count before a sweep.
const tokenizerProbe = "ctxlab checks that this tokenizer counts"

// checkTokenizers asks each tokenizer the sweep counts with that lives elsewhere (a model server's /tokenize,
// Anthropic's count_tokens) to count a short text, once each. One that refuses (an endpoint without /tokenize, as
// OpenAI's API is) would fail every step that fits or measures a context for that model's rows once the sweep has
// begun; found here, it is a configuration problem before anything runs. An endpoint that does not answer, or
// refuses the key, is the model check's to name. Encodings are compiled in and always count.
func (r session) checkTokenizers(ctx context.Context, e *specs.Experiment) {
	seen := map[string]bool{}
	for _, m := range e.Models {
		name := specs.ResolveTokenizer(e, m)
		scheme, id, remote := strings.Cut(name, ":")
		if !remote || seen[name] {
			continue
		}
		seen[name] = true
		pctx, cancel := context.WithTimeout(ctx, r.ProbeTimeout)
		n, err := probeTokenizer(pctx, scheme, id, name)
		cancel()
		switch {
		case err == nil:
			r.Checked = append(r.Checked, fmt.Sprintf("tokenizer %s counts (%d tokens in a probe)", name, n))
		case llm.KindOf(err) == errkind.BadRequest:
			// The subject is named as rows name a tokenizer.
			r.Fail(specs.Tokenizer.Name, name, fmt.Sprintf("the server at %s does not tokenize (%s)", endpointHost(scheme),
				errorMessage(err)), "serve the model with llama.cpp or vLLM (they serve POST /tokenize), or count "+
				"its budgets in an encoding: tokenizer: 'o200k_base' on the model (or the experiment)")
		case llm.KindOf(err) == errkind.BadResponse:
			// Its counts would be budgets and spend reservations: one no real tokenizer gives is no count at all.
			r.Fail(specs.Tokenizer.Name, name, fmt.Sprintf("the server at %s counts what no tokenizer counts (%s)",
				endpointHost(scheme), errorMessage(err)), "fix or replace the server's tokenizer, or count its "+
				"budgets in an encoding: tokenizer: 'o200k_base' on the model (or the experiment)")
		}
	}
}

// probeTokenizer counts tokenizerProbe with the tokenizer name (scheme:id), asking within ctx: the counter of the
// provider that counts with scheme.
func probeTokenizer(ctx context.Context, scheme, id, name string) (int, error) {
	c, ok, err := llm.CounterFor(ctx, scheme, id)
	if !ok {
		c, err = tokens.For(name)
	}
	if err != nil {
		return 0, err
	}
	return c.Count(tokenizerProbe)
}

// endpointHost names the host a tokenizer scheme asks: its provider's endpoint.
func endpointHost(scheme string) string {
	for _, n := range specs.ProviderNames() {
		if p := specs.Providers[n]; p.Counting.Scheme == scheme {
			return llm.Host(p)
		}
	}
	return scheme
}
