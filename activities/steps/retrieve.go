package steps

import (
	"context"
	"strings"

	"ctxlab/activities/api"
	"ctxlab/activities/chunk"
	"ctxlab/activities/dense"
	"ctxlab/activities/rankings"
	"ctxlab/activities/repo"
	"ctxlab/runfolder"
	"ctxlab/specs"
	"ctxlab/store/objects"
)

// DefaultRetrieveTokens is the fixed budget of an unfitted retriever: PAPER.md's mean CQ2-CARE context.
const DefaultRetrieveTokens = 13800

func init() { registerStep(specs.Retrieve, retrieveStep) }

// retrieveStep ranks the repository's chunks against the issue text (BM25 or dense embeddings) and shows them in rank
// order up to the budget: multiplier x the anchor's context tokens when the step has a budget input, max_tokens
// otherwise.
func retrieveStep(ctx context.Context, j *job, p specs.RetrieveParams) (api.NodeOutput, error) {
	inst, m, err := j.instanceAndSnapshot(ctx)
	if err != nil {
		return api.NodeOutput{}, err
	}
	row := map[string]any{}
	chunked, order, err := j.rankChunks(ctx, inst.ProblemStatement, m, p, row)
	if err != nil {
		return api.NodeOutput{}, err
	}
	sorted := make([]chunk.Chunk, len(order))
	for i, k := range order {
		sorted[i] = chunked.Chunks[k]
	}
	out, err := j.showRanked(ctx, inst.ProblemStatement, sorted, chunked.FileLines, p)
	if err != nil {
		return api.NodeOutput{}, err
	}
	for k, v := range row {
		out.Row[k] = v
	}
	return out, nil
}

// showRanked shows chunks in the given order up to the budget, as a retrieve step with params rp shows its ranking:
// multiplier x the anchor's context tokens with a budget input, rp's max_tokens otherwise.
func (j *job) showRanked(ctx context.Context, issue string, sorted []chunk.Chunk, fileLines map[string]int,
	rp specs.RetrieveParams) (api.NodeOutput, error) {
	r := newRanked(issue, sorted, fileLines, rp.Partial == nil || *rp.Partial)
	target, anchor, fitted, err := j.budgetTarget(ctx, rp.Tokenizer, rp.FitParams)
	if err != nil {
		return api.NodeOutput{}, err
	}
	if !fitted {
		target = rp.MaxTokens
		if target <= 0 {
			target = DefaultRetrieveTokens
		}
	}
	c, shown, res, err := r.fit(rp.Tokenizer, target, rp.FitParams)
	if err != nil {
		return api.NodeOutput{}, err
	}
	out, err := j.putContext(ctx, c)
	if err != nil {
		return api.NodeOutput{}, err
	}
	specs.ChunksShown.Set(out.Row, shown)
	specs.TemplateShown.Set(out.Row, showsTemplate(c.Files()))
	if fitted {
		for k, v := range fitRow(rp.FitParams, target, anchor, res) {
			out.Row[k] = v
		}
	}
	return out, nil
}

// rankChunks cuts the snapshot into the step's unit and orders the chunks against the query: by BM25 through the
// worker's ranking memo, so that every step of the run asking for the same ranking (whatever its method, model or
// budget) shares one, or by dense embeddings (whose cache shares the vectors). row takes the dense scorer's fields.
func (j *job) rankChunks(ctx context.Context, query string, m repo.Manifest, p specs.RetrieveParams,
	row map[string]any) (*rankings.Chunked, []int, error) {
	unit, err := rankings.ChunkUnit(p.Unit)
	if err != nil {
		return nil, nil, permanentf(api.ErrBadInput, "%s: %v", j.in.Step, err)
	}
	co, err := j.input("checkout")
	if err != nil {
		return nil, nil, err
	}
	read := func(ctx context.Context, path string) (string, error) {
		return j.env.Text.Read(ctx, j.store, m, path)
	}
	memo := j.env.Rankings
	if memo == nil {
		memo = rankings.NewMemo(0, j.env.Log)
	}
	chunked, err := memo.Chunks(ctx, rankings.Snapshot{Ref: co.Ref, Manifest: m, Read: read}, unit, p.Window)
	if err != nil {
		return nil, nil, err
	}
	var order []int
	switch p.Scorer {
	case "", specs.ScorerBM25:
		r, err := rankings.RankerOf(p)
		if err != nil {
			return nil, nil, permanentf(api.ErrBadInput, "%s: %v", j.in.Step, err)
		}
		order, err = memo.Rank(ctx, objects.Keyed{S: j.env.objects(), Prefix: runfolder.RankingsKey,
			Locks: runfolder.RankingLocksKey}, rankings.KeyOf(co.Ref, r, query),
			chunked, query)
		if err != nil {
			return nil, nil, err
		}
	case specs.ScorerDense:
		docs := make([]string, len(chunked.Chunks))
		for i, c := range chunked.Chunks {
			docs[i] = rankings.Doc(p.Unit, c)
		}
		if order, err = j.denseRank(ctx, p.EmbeddingModel, p.EmbeddingMaxTokens, query, docs, row); err != nil {
			return nil, nil, err
		}
	default: // Decode checked it against specs.Scorer's values
		return nil, nil, permanentf(api.ErrBadInput, "%s: undeclared scorer %q", j.in.Step, p.Scorer)
	}
	return chunked, order, nil
}

// denseRank embeds the query and the documents, each cut at maxInput tokens (0: dense.MaxInputTokens), and orders
// documents by cosine similarity.
func (j *job) denseRank(ctx context.Context, model string, maxInput int, query string, docs []string,
	row map[string]any) ([]int, error) {
	if model == "" {
		return nil, permanentf(api.ErrBadInput, "%s: dense retrieval needs embedding_model", j.in.Step)
	}
	// The vectors are kept where the chat answers are: the shared cache when there is one (starter run --cache),
	// so that another run folder pays for none of them again, else the run's objects.
	vectors := objects.Keyed{S: j.env.objects(), Prefix: runfolder.EmbeddingsKey, Durable: true}
	if c := j.env.Models.Cache; c != nil {
		vectors = objects.Keyed{S: c, Prefix: "embeddings", Durable: true}
	}
	cl, err := dense.NewFromEnv(model, embeddingCache{ctx: ctx, dir: vectors})
	if err != nil {
		return nil, modelError(j.in.Step, specs.Model{Name: model}, err)
	}
	cl.MaxInput, cl.Shared = maxInput, j.env.Models.Cache != nil
	vecs, st, err := cl.Embed(ctx, append([]string{query}, docs...))
	if err != nil {
		return nil, modelError(j.in.Step, specs.Model{Name: model}, err)
	}
	specs.EmbeddingTokens.Set(row, st.PromptTokens)
	specs.EmbeddingsCached.Set(row, st.Cached)
	return dense.Rank(vecs[0], vecs[1:]), nil
}

// embeddingCache keeps the vectors dense retrieval paid for in the run's objects, each text's once (dense.Cache).
type embeddingCache struct {
	ctx context.Context
	dir objects.Keyed
}

func (c embeddingCache) Get(key string) ([]float32, bool) {
	var v []float32
	if !c.dir.Get(c.ctx, key, &v) || len(v) == 0 {
		return nil, false
	}
	return v, true
}

func (c embeddingCache) Put(key string, v []float32) error {
	_, err := c.dir.Create(c.ctx, key, &v, func(stored any) bool { return len(*stored.(*[]float32)) > 0 })
	return err
}

func showsTemplate(files []string) bool {
	for _, f := range files {
		if strings.Contains(strings.ToUpper(f), "ISSUE_TEMPLATE") {
			return true
		}
	}
	return false
}
