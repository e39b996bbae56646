package steps

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	"ctxlab/activities/api"
	"ctxlab/activities/budget"
	"ctxlab/activities/compress"
	"ctxlab/activities/contexts"
	"ctxlab/specs"
)

// CompressEndpointEnv names the environment variable holding the compression server's URL (see package compress
// for the protocol); a step's endpoint parameter overrides it. The endpoint "builtin" is the in-process stand-in.
const CompressEndpointEnv = "CTXLAB_COMPRESS_URL"

// DefaultRateMin is the smallest rate a fit tries: LLMLingua-2 and LongLLMLingua are rarely run below 1/20.
const DefaultRateMin = 0.05

func init() { registerStep(specs.Compress, compressStep) }

// compressStep compresses every block of the input context at one rate (each block on its own, so the result
// still says which file each line came from). With a budget input, the rate is fitted so the context lands within
// the tolerance of multiplier x the anchor's tokens.
func compressStep(ctx context.Context, j *job, p specs.CompressParams) (api.NodeOutput, error) {
	src, err := j.loadContext(ctx, "context")
	if err != nil {
		return api.NodeOutput{}, err
	}
	call, err := compressorFor(p)
	if err != nil {
		return api.NodeOutput{}, permanentf(api.ErrUnsupported, "%s: %v", j.in.Step, err)
	}
	bc := &blockCompressor{src: src, call: call, compressor: string(p.Compressor), query: src.Issue,
		cache: map[[2]any]string{}}
	if p.NoQuery {
		bc.query = ""
	}
	target, anchor, fitted, err := j.budgetTarget(ctx, p.Tokenizer, p.FitParams)
	if err != nil {
		return api.NodeOutput{}, err
	}
	rate := p.Rate
	var res budget.Result
	if fitted {
		srcTokens, err := countTokens(p.Tokenizer, src.Render())
		if err != nil {
			return api.NodeOutput{}, err
		}
		if res, err = fitRate(ctx, bc, p, target, srcTokens); err != nil {
			return api.NodeOutput{}, compressFailure(j.in.Step, err)
		}
		rate = res.Knob
	} else if !(rate > 0 && rate <= 1) {
		return api.NodeOutput{}, permanentf(api.ErrBadInput, "%s: rate %v must be in (0, 1] (or give the step a budget)",
			j.in.Step, rate)
	}
	c, err := bc.at(ctx, rate)
	if err != nil {
		return api.NodeOutput{}, compressFailure(j.in.Step, err)
	}
	out, err := j.putContext(ctx, c)
	if err != nil {
		return api.NodeOutput{}, err
	}
	specs.CompressRate.Set(out.Row, rate)
	specs.CompressorCalls.Set(out.Row, bc.calls)
	specs.CompressorTokensIn.Set(out.Row, bc.tokensIn)
	specs.CompressorTokensOut.Set(out.Row, bc.tokensOut)
	specs.TemplateShown.Set(out.Row, showsTemplate(c.Files()))
	if fitted {
		for k, v := range fitRow(p.FitParams, target, anchor, res) {
			out.Row[k] = v
		}
	}
	return out, nil
}

// blockCompressor compresses a context's blocks at a rate, asking the compressor once per block and rate.
type blockCompressor struct {
	src        contexts.Context
	call       compressFunc
	compressor string
	query      string

	mu                         sync.Mutex
	cache                      map[[2]any]string
	calls, tokensIn, tokensOut int
}

// at is the context compressed at rate; blocks compressed to nothing are left out.
func (bc *blockCompressor) at(ctx context.Context, rate float64) (contexts.Context, error) {
	out := contexts.Context{Issue: bc.src.Issue}
	for i, b := range bc.src.Blocks {
		bc.mu.Lock()
		text, ok := bc.cache[[2]any{i, rate}]
		bc.mu.Unlock()
		if !ok {
			resp, err := bc.call(ctx, compress.Request{Compressor: bc.compressor, Text: b.Text, Rate: rate,
				Query: bc.query})
			if err != nil {
				return out, err
			}
			text = resp.Text
			bc.mu.Lock()
			bc.cache[[2]any{i, rate}] = text
			bc.calls, bc.tokensIn = bc.calls+1, bc.tokensIn+resp.OriginalTokens
			bc.tokensOut += resp.CompressedTokens
			bc.mu.Unlock()
		}
		if text == "" {
			continue
		}
		b.Text = text
		out.Blocks = append(out.Blocks, b)
	}
	return out, nil
}

// fitRate fits the rate whose compressed context lands on target tokens, from rate_min to 1, starting at the rate
// that the source's tokens suggest.
func fitRate(ctx context.Context, bc *blockCompressor, p specs.CompressParams, target, srcTokens int) (budget.Result, error) {
	lo := p.RateMin
	if lo <= 0 {
		lo = DefaultRateMin
	}
	guess := 1.0
	if srcTokens > 0 {
		guess = float64(target) / float64(srcTokens)
	}
	return budget.Fit(budget.Problem{Target: target, Tolerance: p.Tolerance, MaxEvals: p.MaxEvals,
		Knob: budget.Knob{Lo: lo, Hi: 1, Guess: guess}}, func(x float64) (int, error) {
		c, err := bc.at(ctx, x)
		if err != nil {
			return 0, err
		}
		return countTokens(p.Tokenizer, c.Render())
	})
}

type compressFunc func(context.Context, compress.Request) (compress.Response, error)

// compressorFor returns the stand-in for "fake" or endpoint "builtin", else a client of the endpoint.
func compressorFor(p specs.CompressParams) (compressFunc, error) {
	if p.Compressor == "" {
		return nil, errors.New("no compressor named")
	}
	ep := p.Endpoint
	if ep == "" {
		ep = os.Getenv(CompressEndpointEnv)
	}
	if p.Compressor == specs.CompressorFake || ep == "builtin" {
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
	return permanentf(api.ErrBadInput, "%s: %v", step, err)
}
