package activities

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	"ctxlab/activities/budget"
	"ctxlab/activities/compress"
	"ctxlab/activities/contexts"
	"ctxlab/results"
	"ctxlab/specs"
)

// CompressEndpointEnv names the environment variable holding the compression server's URL (see package compress
// for the protocol); a step's endpoint parameter overrides it. The endpoint "builtin" is the in-process stand-in.
const CompressEndpointEnv = "CTXLAB_COMPRESS_URL"

// DefaultRateMin is the smallest rate a fit tries: LLMLingua-2 and LongLLMLingua are rarely run below 1/20.
const DefaultRateMin = 0.05

// CompressParams are declared in specs beside the catalog, which checks every step's params against them.
type CompressParams = specs.CompressParams

// Compress compresses every block of the input context at one rate (each block on its own, so the result still
// says which file each line came from). With a budget input, the rate is fitted so the context lands within the
// tolerance of multiplier x the anchor's tokens.
func (a *Activities) Compress(ctx context.Context, in NodeInput) (NodeOutput, error) {
	return a.node(ctx, in, "compress", func(ctx context.Context, j *job) (NodeOutput, error) {
		var p CompressParams
		if err := j.params(&p); err != nil {
			return NodeOutput{}, err
		}
		src, err := j.loadContext(ctx, "context")
		if err != nil {
			return NodeOutput{}, err
		}
		call, err := compressorFor(p)
		if err != nil {
			return NodeOutput{}, permanentf(ErrUnsupported, "%s: %v", in.Step, err)
		}
		query := src.Issue
		if p.NoQuery {
			query = ""
		}
		var mu sync.Mutex
		calls, origTok, compTok := 0, 0, 0
		cache := map[[2]any]string{}
		at := func(rate float64) (contexts.Context, error) {
			out := contexts.Context{Issue: src.Issue}
			for i, b := range src.Blocks {
				mu.Lock()
				text, ok := cache[[2]any{i, rate}]
				mu.Unlock()
				if !ok {
					resp, err := call(ctx, compress.Request{Compressor: p.Compressor, Text: b.Text, Rate: rate, Query: query})
					if err != nil {
						return out, err
					}
					text = resp.Text
					mu.Lock()
					cache[[2]any{i, rate}] = text
					calls, origTok, compTok = calls+1, origTok+resp.OriginalTokens, compTok+resp.CompressedTokens
					mu.Unlock()
				}
				if text == "" {
					continue
				}
				b.Text = text
				out.Blocks = append(out.Blocks, b)
			}
			return out, nil
		}
		target, anchor, fitted, err := j.budgetTarget(ctx, p.Tokenizer, p.FitParams)
		if err != nil {
			return NodeOutput{}, err
		}
		rate := p.Rate
		var res budget.Result
		if fitted {
			lo := p.RateMin
			if lo <= 0 {
				lo = DefaultRateMin
			}
			srcTokens, err := countTokens(p.Tokenizer, src.Render())
			if err != nil {
				return NodeOutput{}, err
			}
			guess := 1.0
			if srcTokens > 0 {
				guess = float64(target) / float64(srcTokens)
			}
			res, err = budget.Fit(budget.Problem{Target: target, Tolerance: p.Tolerance, MaxEvals: p.MaxEvals,
				Knob: budget.Knob{Lo: lo, Hi: 1, Guess: guess}}, func(x float64) (int, error) {
				c, err := at(x)
				if err != nil {
					return 0, err
				}
				return countTokens(p.Tokenizer, c.Render())
			})
			if err != nil {
				return NodeOutput{}, compressFailure(in.Step, err)
			}
			rate = res.Knob
		} else if !(rate > 0 && rate <= 1) {
			return NodeOutput{}, permanentf(ErrBadInput, "%s: rate %v must be in (0, 1] (or give the step a budget)",
				in.Step, rate)
		}
		c, err := at(rate)
		if err != nil {
			return NodeOutput{}, compressFailure(in.Step, err)
		}
		out, err := j.putContext(ctx, c)
		if err != nil {
			return NodeOutput{}, err
		}
		out.Row["compress_rate"] = rate
		out.Row["compressor_calls"] = calls
		out.Row["compressor_tokens_in"] = origTok
		out.Row["compressor_tokens_out"] = compTok
		out.Row[results.FieldTemplateShown] = showsTemplate(c.Files())
		if fitted {
			for k, v := range fitRow(p.FitParams, target, anchor, res) {
				out.Row[k] = v
			}
		}
		return out, nil
	})
}

type compressFunc func(context.Context, compress.Request) (compress.Response, error)

// compressorFor returns the stand-in for "fake" or endpoint "builtin", else a client of the endpoint.
func compressorFor(p CompressParams) (compressFunc, error) {
	if p.Compressor == "" {
		return nil, errors.New("no compressor named")
	}
	ep := p.Endpoint
	if ep == "" {
		ep = os.Getenv(CompressEndpointEnv)
	}
	if p.Compressor == compress.Fake || ep == "builtin" {
		return func(_ context.Context, r compress.Request) (compress.Response, error) {
			return compress.FakeCompress(r)
		}, nil
	}
	if ep == "" {
		return nil, fmt.Errorf("compressor %s needs a server: set %s or the step's endpoint (see scripts/compress_server.py)",
			p.Compressor, CompressEndpointEnv)
	}
	return compress.NewClient(ep).Compress, nil
}

// compressFailure keeps 429, 5xx and transport failures retryable; anything else a compressor says is final.
func compressFailure(step string, err error) error {
	var ce *compress.Error
	switch {
	case isPermanent(err):
		return err
	case errors.As(err, &ce) && ce.Retryable, errors.Is(err, context.Canceled):
		return fmt.Errorf("%s: %w", step, err)
	}
	return permanentf(ErrBadInput, "%s: %v", step, err)
}

func init() {
	registerNode("compress", func(a *Activities) any { return a.Compress })
}
