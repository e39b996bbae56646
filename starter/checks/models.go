package checks

import (
	"context"
	"fmt"

	"ctxlab/activities/llm"
	"ctxlab/activities/tokens"
	"ctxlab/dataset/swebench"
	"ctxlab/internal/listing"
	"ctxlab/specs"
)

// checkModels checks every model a plan calls, as its provider's check does (llm.Implementation.Check): for an
// endpoint, that it serves the model's id (GET /v1/models), and where the server says its context window (llama.cpp's
// /props, vLLM's max_model_len), that the window holds the model's max_tokens and each instance's smallest prompt
// (its issue text, which every prompt shows).
func (r session) checkModels(ctx context.Context, e *specs.Experiment, needs planNeeds,
	instances []swebench.Instance) {
	for _, m := range e.Models {
		impl, ok := llm.Implemented(m.Provider)
		if !ok || impl.Check == nil || len(needs.methodsOf[m.Name]) == 0 {
			continue
		}
		c := impl.Check(ctx, m, r.ProbeTimeout)
		if c.Note != "" {
			r.Note("model %s: %s", m.Name, c.Note)
		}
		if c.Problem != "" {
			r.Fail("model", m.Name, c.Problem, c.Fix)
		}
		if !c.Served {
			continue
		}
		r.Checked = append(r.Checked, fmt.Sprintf("model %s served by %s", m.Name, c.Host))
		if c.Window.Tokens > 0 {
			r.checkWindow(m, c.Window, c.Count, specs.ResolveTokenizer(e, m), needs, instances)
		}
	}
}

// checkWindow holds a context window against each instance's issue text, which every prompt shows, and the
// model's max_tokens. A server that refuses up front a request whose prompt and max_tokens exceed the window (vLLM,
// OpenAI) fails every call of an instance whose issue leaves no room for max_tokens; llama.cpp stops an answer at
// the window's end (and the calls ask for no more than it leaves), so there only the issue itself must fit, and a
// max_tokens beyond the window is a note. The plan's
// largest context beyond the window is a note too: only some prompts reach it, and their rows are context_length
// rows.
func (r session) checkWindow(m specs.Model, w llm.Window, serverCount func(string) (int, error), tokenizer string,
	needs planNeeds, instances []swebench.Instance) {
	window, source, llama := w.Tokens, w.Where(), w.LlamaCpp()
	if llama {
		if w.Slots > 1 {
			r.Note("model %s: the server serves %d requests at once, each with a context of %d tokens, all sharing "+
				"one cache of a size it does not report (llama-server -c): calls that together need more than it "+
				"holds fail with HTTP 500 \"Context size has been exceeded.\" and are asked again with fewer beside "+
				"them (context_capacity); llama-server -c %d holds them all", m.Name, w.Slots, window, w.Slots*window)
		}
	}
	room := m.MaxTokens
	if llama {
		room = 0
		if m.MaxTokens >= window {
			r.Note("model %s: max_tokens %d is beyond its %d-token context (%s): each call asks for what the "+
				"context leaves beside its prompt", m.Name, m.MaxTokens, window, source)
		}
	} else if m.MaxTokens >= window {
		r.Fail("model", m.Name, fmt.Sprintf("max_tokens %d leaves no room for a prompt in its %d-token context "+
			"(%s)", m.MaxTokens, window, source), "lower the model's max_tokens, or serve a larger context")
		return
	}
	unit, count := tokenizer+" tokens", func(text string) (int, error) { return tokens.Count(tokenizer, text) }
	if serverCount != nil {
		unit, count = "tokens of the server's tokenizer", serverCount
	}
	var tooLong []string
	for _, in := range instances {
		n, err := count(in.ProblemStatement)
		if err != nil {
			r.Note("model %s: could not count the tokens of %s's issue: %v", m.Name, in.InstanceID, err)
			break
		}
		if n+room > window {
			tooLong = append(tooLong, fmt.Sprintf("%s (%d)", in.InstanceID, n))
		}
	}
	if len(tooLong) > 0 {
		with := ""
		if room > 0 {
			with = fmt.Sprintf(" beside max_tokens %d", room)
		}
		r.Fail("model", m.Name, fmt.Sprintf("the issue text alone (%s), which every prompt shows, does not fit its "+
			"%d-token context%s (%s) for %s", unit, window, with, source, listing.Some(tooLong, maxNamed)),
			"serve a larger context, or leave those instances out of the dataset")
	}
	if needs.largest > window {
		r.Note("model %s: its context holds %d tokens (%s); contexts of up to %d %s tokens (%s's assemble total_cap) "+
			"may not fit, and the rows of prompts that do not are context_length rows", m.Name, window, source,
			needs.largest, tokenizer, needs.largestMethod)
	}
}
