package offline

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"ctxlab/activities/api/errkind"
	"ctxlab/activities/llm"
	"ctxlab/activities/tokens"
	"ctxlab/internal/offlinetask"
	"ctxlab/specs"
)

// Name is the model name the stand-in reports in responses.
const Name = "offline-stand-in"

// Provider is the offline stand-in as an llm.Provider. It answers a request by its Task through the task's input
// answer registered with internal/offlinetask (the extension point it shares with the fake endpoint), reading what
// it needs from Request.Offline (a *LocalizeInput, *EvidenceInput or *PatchInput for the built-in tasks) instead of
// the prompt, and returns text in the same formats the prompts ask a model for, so the activities parse its answers
// with the same code as a model's. Usage counts the prompt and the answer with a tokenizer (what the call would have
// sent and received); the cost is always zero. It is not a language model.
type Provider struct {
	// Tokenizer counts usage (o200k_base when empty).
	Tokenizer string
}

var (
	_ llm.Provider = Provider{}
	_ llm.Client   = Provider{}
)

// The offline provider's implementation (specs.Offline): the stand-in, counting usage with the step's tokenizer.
func init() {
	llm.Register(specs.Offline, llm.Implementation{New: func(_ specs.Model, c llm.Config) (llm.Client, error) {
		return Provider{Tokenizer: c.Tokenizer}, nil
	}})
}

// The built-in tasks' input answers. Their prompt answers (for the fake endpoint) are registered by fakeopenai.
func init() {
	offlinetask.Register(specs.Localize.Task, offlinetask.Answerer{FromInput: Answer(func(in *LocalizeInput, c offlinetask.Call) (string, error) {
		return Localize(*in, c.Sample), nil
	})})
	offlinetask.Register(specs.Evidence.Task, offlinetask.Answerer{FromInput: Answer(func(in *EvidenceInput, _ offlinetask.Call) (string, error) {
		return PlanEvidence(*in), nil
	})})
	offlinetask.Register(specs.Patch.Task, offlinetask.Answerer{FromInput: Answer(func(in *PatchInput, _ offlinetask.Call) (string, error) {
		res, err := OraclePatch(in.Gold, in.Context)
		if err != nil {
			return "", err
		}
		return FormatPatch(res.Patch, in.Format)
	})})
}

// Answer adapts a function of a task's own input type to an offlinetask input answer: a call without input, or
// with input of another type, is an error naming the task, so the activity that forgot to attach its input learns
// which one it was.
func Answer[In any](answer func(in *In, c offlinetask.Call) (string, error)) func(offlinetask.Call) (string, error) {
	return func(c offlinetask.Call) (string, error) {
		if c.Input == nil {
			return "", fmt.Errorf("the offline stand-in got a %q request without its offline input", c.Task)
		}
		in, ok := c.Input.(*In)
		if !ok {
			return "", fmt.Errorf("the offline stand-in cannot answer a %q request carrying %T (want %T)", c.Task, c.Input, in)
		}
		return answer(in, c)
	}
}

// Prepare is the stand-in's one attempt at req, which never fails in a way worth another.
func (p Provider) Prepare(_ context.Context, req llm.Request) (llm.Attempt, *llm.Error) {
	return llm.Attempt{Send: func(ctx context.Context) (llm.Response, *llm.Error, time.Duration) {
		resp, err := p.Complete(ctx, req)
		var le *llm.Error
		if err != nil && !errors.As(err, &le) {
			le = &llm.Error{Kind: errkind.Timeout, Msg: "the call was cancelled", Err: err}
		}
		return resp, le, 0
	}}, nil
}

// Complete answers one request.
func (p Provider) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	if err := ctx.Err(); err != nil {
		return llm.Response{}, err
	}
	answerer, ok := offlinetask.Lookup(req.Task)
	if !ok || answerer.FromInput == nil {
		return llm.Response{}, &llm.Error{Kind: errkind.BadRequest,
			Msg: fmt.Sprintf("the offline stand-in cannot answer a %q request: no input answer is registered for it (offlinetask.Register)", req.Task)}
	}
	text, err := answerer.FromInput(offlinetask.Call{Task: req.Task, Input: req.Offline, Sample: req.Sample})
	if err != nil {
		return llm.Response{}, &llm.Error{Kind: errkind.BadRequest, Msg: err.Error(), Err: err}
	}
	tok := p.Tokenizer
	if tok == "" {
		tok = tokens.O200kBase
	}
	var prompt strings.Builder
	for _, m := range req.Messages {
		prompt.WriteString(m.Content)
		prompt.WriteString("\n")
	}
	pt, err := tokens.Count(tok, prompt.String())
	if err != nil {
		return llm.Response{}, &llm.Error{Kind: errkind.BadRequest, Msg: err.Error(), Err: err}
	}
	ct, err := tokens.Count(tok, text)
	if err != nil {
		return llm.Response{}, &llm.Error{Kind: errkind.BadRequest, Msg: err.Error(), Err: err}
	}
	return llm.Response{Text: text, Usage: llm.Usage{PromptTokens: pt, CompletionTokens: ct}, Model: Name}, nil
}
