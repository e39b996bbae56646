package steps

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"text/template"
	"time"

	"ctxlab/activities/api"
	"ctxlab/activities/limiter"
	"ctxlab/activities/llm"
	_ "ctxlab/activities/llm/replay" // the replay provider's implementation
	"ctxlab/activities/respcache"
	"ctxlab/runfolder"
	"ctxlab/runlog"
	"ctxlab/specs"
	"ctxlab/store/cas"
)

// newProvider returns the provider of a model: the one Models.Provider gives, else its declared implementation's
// (llm.New): the offline stand-in, the openai provider against the endpoint the environment names (OPENAI_BASE_URL,
// OPENAI_API_KEY), the anthropic provider (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL), or replay.
func (j *job) newProvider(m specs.Model, tokenizer string) (llm.Provider, error) {
	if p := j.env.Models.Provider; p != nil {
		return p(m, tokenizer)
	}
	return llm.New(m, llm.WithLogger(j.env.Log), llm.WithTokenizer(tokenizer))
}

// standIn reports whether m's provider is a stand-in, not a language model (specs.Provider.StandIn).
func standIn(m specs.Model) bool {
	p, _ := specs.ProviderOf(m)
	return p.StandIn
}

// renderPrompt fills the prompt's templates with data.
func renderPrompt(p specs.Prompt, step string, data any) ([]llm.Message, error) {
	if p.User == "" {
		return nil, permanentf(api.ErrBadInput, "%s: params.prompt.user is empty (ctxlab.libsonnet's steps set it)", step)
	}
	var msgs []llm.Message
	for _, part := range []struct{ role, text string }{{"system", p.System}, {"user", p.User}} {
		if part.text == "" {
			continue
		}
		t, err := template.New(part.role).Option("missingkey=error").Parse(part.text)
		if err != nil {
			return nil, permanentf(api.ErrBadInput, "%s: %s prompt: %v", step, part.role, err)
		}
		var b bytes.Buffer
		if err := t.Execute(&b, data); err != nil {
			return nil, permanentf(api.ErrBadInput, "%s: %s prompt: %v", step, part.role, err)
		}
		msgs = append(msgs, llm.Message{Role: part.role, Content: b.String()})
	}
	return msgs, nil
}

// callModel sends one request to the model and returns its answer and the row fields it adds (model_calls,
// prompt_tokens, completion_tokens, cost_usd; the Issue workflow sums them over a row's steps). Failures a retry
// can fix (429, 5xx, timeouts, broken answers) come back as retryable errors typed with their kind, so the
// activity is retried (an endpoint that asks to wait longer than a call waits gives ErrProviderWait instead);
// context-length, authentication, quota and other request errors are non-retryable with the failure's kind as
// their type, which the row's error records.
//
// Calls to a paid provider go through the response cache first: an answer already paid for is served again with
// its original usage, so rows do not depend on whether a call was cached. A miss checks the run's spend cap, waits
// for the provider's limits, calls, and stores the answer before returning it. Every call is appended to the run's
// calls.jsonl, the ledger spend is counted from.
func (j *job) callModel(ctx context.Context, mp specs.ModelParams, req llm.Request) (llm.Response, map[string]any, error) {
	m := sampleModel(mp.Model, req.Sample, mp.Temperature)
	provider := func() (llm.Provider, error) {
		p, err := j.newProvider(m, modelTokenizer(mp))
		if err != nil && !isPermanent(err) {
			err = modelError(j.in.Step, m, err)
		}
		return p, err
	}
	// A provider that is not paid (the offline stand-in, replay) calls no endpoint: its answers are neither cached
	// nor counted as spend.
	if p, _ := specs.ProviderOf(m); !p.Paid {
		return j.callFree(ctx, m, provider, req)
	}

	cache := j.responseCache()
	req.Context, req.ContextSource = j.contextWindow(ctx, cache, m)
	creq := respcache.For(m, llm.BaseURL(m), req)
	key := creq.Key()
	call := runlog.Call{Instance: j.in.Instance.ID, Node: j.in.Node, Step: j.in.Step, Provider: m.Provider,
		Model: m.Name, Key: key}
	if ref, err := cas.PutJSON(ctx, j.store, req.Messages); err == nil {
		call.Request = ref
	}
	cached := func() (llm.Response, map[string]any, bool) {
		e, ok := cache.Get(ctx, key)
		if !ok {
			return llm.Response{}, nil, false
		}
		// A stored answer is held to what a call can report before it is priced (a shared cache is anyone's):
		// one of impossible usage is asked again.
		if err := llm.CheckUsage(e.Response.Usage); err != nil {
			j.env.Log.Warn().Err(err).Str("key", key).Msg("a cached answer of impossible usage is asked again")
			return llm.Response{}, nil, false
		}
		// Scrubbed again: an entry may come from a shared cache written before answers were scrubbed.
		resp := e.Response.Scrubbed()
		resp.CostUSD = llm.Cost(resp.Usage, m.Price)
		call.Cached, call.PromptTokens, call.CompletionTokens = true, resp.Usage.PromptTokens, resp.Usage.CompletionTokens
		call.CachedTokens, call.CacheWriteTokens = resp.Usage.CachedTokens, resp.Usage.CacheWriteTokens
		call.Response = j.putResponse(ctx, resp)
		j.recordCall(call)
		j.usage.ModelCalls++
		j.usage.CacheHits++
		row := usageRow(resp, m)
		j.calls.answer(row, false, false)
		return resp, row, true
	}
	if !j.env.Models.NoCache {
		if resp, row, ok := cached(); ok {
			return resp, row, nil
		}
	}
	// One asker per request: whoever waited here finds the answer the holder stored.
	unlock, err := cache.Lock(ctx, key)
	if err != nil {
		return llm.Response{}, nil, err
	}
	defer unlock()
	if !j.env.Models.NoCache {
		if resp, row, ok := cached(); ok {
			return resp, row, nil
		}
	}

	// Only a miss needs the provider, so cached answers are served on a machine without the API key.
	p, err := provider()
	if err != nil {
		return llm.Response{}, nil, err
	}
	settle, err := j.admitCall(ctx, m, mp, req)
	if err != nil {
		return llm.Response{}, nil, err
	}
	// Run before the cache lock's release, and after recordCall, which every path below reaches first: the
	// budget counts what the ledger line says the call cost.
	var cost float64
	defer func() { settle(cost, true) }()
	return j.completePaid(ctx, p, m, req, cache, key, creq, call, &cost)
}

// completePaid sends a paid call and records it: in the response cache first (a worker killed after that does not
// pay for the answer again), then in the calls log and the attempt's usage, a failed call's billed usage too.
// cost receives what the call cost, as its ledger line says.
func (j *job) completePaid(ctx context.Context, p llm.Provider, m specs.Model, req llm.Request, cache respcache.Cache,
	key string, creq respcache.Request, call runlog.Call, cost *float64) (llm.Response, map[string]any, error) {
	started := time.Now()
	resp, err := p.Complete(ctx, req)
	call.DurationMS = time.Since(started).Milliseconds()
	j.usage.ModelCalls++
	j.usage.PaidCalls++
	if err != nil {
		call.Error = string(llm.KindOf(err))
		// Answers the endpoint sent and billed that were no use are spend all the same.
		if paid := llm.PaidOf(err); paid != (llm.Usage{}) {
			call.PromptTokens, call.CompletionTokens = paid.PromptTokens, paid.CompletionTokens
			call.CachedTokens, call.CacheWriteTokens = paid.CachedTokens, paid.CacheWriteTokens
			call.CostUSD = llm.Cost(paid, m.Price)
			j.usage.PromptTokens += paid.PromptTokens
			j.usage.CompletionTokens += paid.CompletionTokens
			j.usage.CostUSD += call.CostUSD
			j.calls.bill(usageRow(llm.Response{Usage: paid, CostUSD: call.CostUSD}, m))
		}
		*cost = call.CostUSD
		j.recordCall(call)
		return llm.Response{}, nil, modelError(j.in.Step, m, err)
	}
	// The one point every paid answer passes before the cache, the content store, node outputs or a log see it:
	// an endpoint may echo the key inside a 200 answer.
	resp = resp.Scrubbed()
	if resp.CostUSD == 0 {
		resp.CostUSD = llm.Cost(resp.Usage, m.Price)
	}
	// Stored before anything else can fail: a worker killed from here on does not pay for this answer again.
	if err := cache.Put(ctx, key, creq, resp, j.env.Models.NoCache); err != nil {
		j.env.Log.Warn().Err(err).Str("step", j.in.Step).Msg("could not cache a model answer")
	}
	call.PromptTokens, call.CompletionTokens, call.CostUSD = resp.Usage.PromptTokens, resp.Usage.CompletionTokens, resp.CostUSD
	call.CachedTokens, call.CacheWriteTokens = resp.Usage.CachedTokens, resp.Usage.CacheWriteTokens
	call.Response = j.putResponse(ctx, resp)
	*cost = call.CostUSD
	j.recordCall(call)
	j.usage.PromptTokens += resp.Usage.PromptTokens
	j.usage.CompletionTokens += resp.Usage.CompletionTokens
	j.usage.CostUSD += resp.CostUSD
	row := usageRow(resp, m)
	j.calls.answer(row, true, j.env.Models.NoCache)
	return resp, row, nil
}

// callFree asks a provider that is not paid.
func (j *job) callFree(ctx context.Context, m specs.Model, provider func() (llm.Provider, error),
	req llm.Request) (llm.Response, map[string]any, error) {
	p, err := provider()
	if err != nil {
		return llm.Response{}, nil, err
	}
	resp, err := p.Complete(ctx, req)
	if err != nil {
		return llm.Response{}, nil, modelError(j.in.Step, m, err)
	}
	resp = resp.Scrubbed()
	j.usage.ModelCalls++
	row := usageRow(resp, m)
	j.calls.answer(row, false, false)
	return resp, row, nil
}

// admitCall lets a paid call go under the run's budget: its spend cap and its provider's limits. The call's worst
// case is set aside against the cap before it is sent and held until settle, which the caller calls with what the
// call cost, so calls in flight at once on every worker cannot together pass the cap.
func (j *job) admitCall(ctx context.Context, m specs.Model, mp specs.ModelParams, req llm.Request) (
	settle func(costUSD float64, sent bool), err error) {
	if j.env.Models.Budget == nil {
		return nil, fmt.Errorf("%s: no budget to let a paid call go (a step's model calls run in a worker)", j.in.Step)
	}
	settle, err = j.env.Models.Budget.Admit(ctx, m.Provider, func() float64 {
		return worstCaseUSD(m, req, llm.BaseURL(m), modelTokenizer(mp))
	})
	var ce *limiter.CapError
	if errors.As(err, &ce) {
		return nil, permanentf(api.ErrSpendLimit,
			"%s: spend cap reached: $%.4f spent of limits.spend_usd $%.4f, and this call may cost up to $%.4f; "+
				"raise it and run again to continue", j.in.Step, ce.Spent, ce.Cap, ce.Need)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: asking the run's budget to let the call go: %w", j.in.Step, err)
	}
	return settle, nil
}

// usageRow is the row fields a call of model m adds: its usage, and model_served when the endpoint names another
// model than m's id as the one that answered (a dated snapshot, a router's substitute), so the report can flag the
// row. A stand-in serves no model.
func usageRow(resp llm.Response, m specs.Model) map[string]any {
	row := map[string]any{}
	specs.ModelCalls.Set(row, 1)
	specs.PromptTokens.Set(row, resp.Usage.PromptTokens)
	specs.CompletionTokens.Set(row, resp.Usage.CompletionTokens)
	specs.CostUSD.Set(row, resp.CostUSD)
	if !standIn(m) {
		in, cached, out := llm.CostParts(resp.Usage, m.Price)
		specs.CachedTokens.Set(row, resp.Usage.CachedTokens)
		specs.CacheWriteTokens.Set(row, resp.Usage.CacheWriteTokens)
		specs.CostInputUSD.Set(row, in)
		specs.CostCachedUSD.Set(row, cached)
		specs.CostOutputUSD.Set(row, out)
	}
	if !standIn(m) && resp.Model != "" && resp.Model != m.ID {
		specs.ModelServed.Set(row, resp.Model)
	}
	return row
}

// contextWindow is the model's context window as its endpoint reports it (llm.ContextWindow), remembered in the
// response cache's folder so that a re-run while the server is down computes the same cache keys; 0 when the
// endpoint never said.
func (j *job) contextWindow(ctx context.Context, cache respcache.Cache, m specs.Model) (int, string) {
	if !llm.DiscoversWindow(m) {
		return 0, "" // its answers are capped by max_tokens alone (Anthropic's)
	}
	endpoint := llm.BaseURL(m)
	if w := llm.ContextWindow(ctx, m); w.Tokens > 0 {
		if old, ok := cache.Window(ctx, endpoint, m.ID); !ok || old != w {
			if err := cache.PutWindow(ctx, endpoint, m.ID, w); err != nil {
				j.env.Log.Warn().Err(err).Msg("could not record the model's context window")
			}
			if !ok || old.Tokens != w.Tokens {
				j.env.Log.Info().Str("model", m.ID).Int("context_window", w.Tokens).Str("source", w.Source).
					Msg("the endpoint reports the model's context window; answers are capped to fit it")
			}
		}
		return w.Tokens, w.Source
	}
	w, _ := cache.Window(ctx, endpoint, m.ID)
	return w.Tokens, w.Source
}

// responseCache is the run's response cache: the cache shared by several experiments when one is set, else the
// run's own, in its objects' content store folder.
func (j *job) responseCache() respcache.Cache {
	if c := j.env.Models.Cache; c != nil {
		return respcache.Open(c, "")
	}
	return respcache.Open(j.env.objects(), runfolder.CASDir)
}

// putResponse stores an answer in the run's content store for audits; a failure only loses the reference.
func (j *job) putResponse(ctx context.Context, resp llm.Response) cas.Ref {
	ref, err := cas.PutJSON(ctx, j.store, resp)
	if err != nil {
		return ""
	}
	return ref
}

// recordCall appends a call to the run's ledger.
func (j *job) recordCall(c runlog.Call) {
	c.Time = time.Now().UTC()
	record := j.env.Record
	if record == nil {
		record = func(file string, v any) error { return runlog.Append(filepath.Join(j.env.RunDir, file), v) }
	}
	if err := record(runfolder.CallsFile, c); err != nil {
		j.env.Log.Warn().Err(err).Str("step", j.in.Step).Msg("could not record a model call in calls.jsonl")
	}
}

// sampleModel is the model a sample is drawn from: a step's temperature, when it sets one, replaces the model's, and
// sample n adds n to the model's seed, so that independent samples are not the same request.
func sampleModel(m specs.Model, sample int, temperature *float64) specs.Model {
	if temperature != nil {
		t := *temperature
		m.Temperature = &t
	}
	if m.Seed != nil && sample != 0 {
		s := *m.Seed + int64(sample)
		m.Seed = &s
	}
	return m
}

// modelError maps a provider failure to a step error whose type is the failure's kind: retryable kinds are retried,
// a long Retry-After becomes ErrProviderWait, the others are non-retryable.
func modelError(step string, m specs.Model, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	kind := llm.KindOf(err)
	msg := llm.ScrubSecrets(fmt.Sprintf("%s: model %s: %v", step, m.Name, err))
	var le *llm.Error
	if errors.As(err, &le) && le.RetryAfter > 0 && kind.Waited() {
		return &Error{Type: api.ErrProviderWait, Message: msg, Wait: &api.ProviderWait{Kind: string(kind), Wait: le.RetryAfter}}
	}
	return &Error{Type: string(kind), Message: msg, Retryable: kind.Retryable()}
}

func modelTokenizer(p specs.ModelParams) string {
	if p.Tokenizer == "" {
		return "o200k_base"
	}
	return p.Tokenizer
}
