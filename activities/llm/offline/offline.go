package offline

import (
	"context"
	"fmt"
	"strings"

	"ctxlab/activities/llm"
	"ctxlab/activities/tokens"
)

// Name is the model name the stand-in reports in responses.
const Name = "offline-stand-in"

// Provider is the offline stand-in as an llm.Provider. It answers a request by its Task, reading what it needs from
// Request.Offline (a *LocalizeInput, *EvidenceInput or *PatchInput) instead of the prompt, and returns text in the
// same formats the prompts ask a model for, so the activities parse its answers with the same code as a model's.
// Usage counts the prompt and the answer with a tokenizer (what the call would have sent and received); the cost
// is always zero. It is not a language model.
type Provider struct {
	// Tokenizer counts usage (o200k_base when empty).
	Tokenizer string
}

var _ llm.Provider = Provider{}

// Complete answers one request.
func (p Provider) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	if err := ctx.Err(); err != nil {
		return llm.Response{}, err
	}
	var text string
	switch in := req.Offline.(type) {
	case *LocalizeInput:
		text = Localize(*in, req.Sample)
	case *EvidenceInput:
		text = PlanEvidence(*in)
	case *PatchInput:
		res, err := OraclePatch(in.Gold, in.Context)
		if err != nil {
			return llm.Response{}, &llm.Error{Kind: llm.KindBadRequest, Msg: err.Error(), Err: err}
		}
		text, err = FormatPatch(res.Patch, in.Format)
		if err != nil {
			return llm.Response{}, &llm.Error{Kind: llm.KindBadRequest, Msg: err.Error(), Err: err}
		}
	case nil:
		return llm.Response{}, &llm.Error{Kind: llm.KindBadRequest,
			Msg: fmt.Sprintf("the offline stand-in got a %q request without its offline input", req.Task)}
	default:
		return llm.Response{}, &llm.Error{Kind: llm.KindBadRequest,
			Msg: fmt.Sprintf("the offline stand-in cannot answer a %q request carrying %T", req.Task, in)}
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
		return llm.Response{}, &llm.Error{Kind: llm.KindBadRequest, Msg: err.Error(), Err: err}
	}
	ct, err := tokens.Count(tok, text)
	if err != nil {
		return llm.Response{}, &llm.Error{Kind: llm.KindBadRequest, Msg: err.Error(), Err: err}
	}
	return llm.Response{Text: text, Usage: llm.Usage{PromptTokens: pt, CompletionTokens: ct}, Model: Name}, nil
}
