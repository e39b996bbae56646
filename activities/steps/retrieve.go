package steps

import (
	"bytes"
	"context"
	"strings"

	"ctxlab/activities/bm25"
	"ctxlab/activities/chunk"
	"ctxlab/activities/dense"
	"ctxlab/activities/repo"
	"ctxlab/runfolder"
	"ctxlab/specs"
)

// Retrieval units beyond package chunk's: SWE-bench's file-level baseline, whose documents are a file's path and
// contents together.
const unitSWEBenchFile = "swebench_file"

// Scorers.
const (
	scorerBM25  = "bm25"
	scorerDense = "dense"
)

// DefaultRetrieveTokens is the fixed budget of an unfitted retriever: PAPER.md's mean CQ2-CARE context.
const DefaultRetrieveTokens = 13800

// maxRetrieveFileBytes skips generated or data files that no retriever should index whole.
const maxRetrieveFileBytes = 1 << 20

func init() { registerStep(specs.Retrieve, retrieveStep) }

// RetrieveParams are declared in specs beside the catalog, which checks every step's params against them.
type RetrieveParams = specs.RetrieveParams

// retrieveStep ranks the repository's chunks against the issue text (BM25 or dense embeddings) and shows them in rank
// order up to the budget: multiplier x the anchor's context tokens when the step has a budget input, max_tokens
// otherwise.
func retrieveStep(ctx context.Context, j *job, p RetrieveParams) (NodeOutput, error) {
	inst, m, err := j.instanceAndSnapshot(ctx)
	if err != nil {
		return NodeOutput{}, err
	}
	chunks, fileLines, err := j.chunkRepo(ctx, m, p.Unit, p.Window)
	if err != nil {
		return NodeOutput{}, err
	}
	docs := make([]string, len(chunks))
	for i, c := range chunks {
		docs[i] = c.Text
		if p.Unit == unitSWEBenchFile {
			docs[i] = c.Path + "\n" + c.Text
		}
	}
	row := map[string]any{}
	var order []int
	switch p.Scorer {
	case "", scorerBM25:
		bp := bm25.Defaults()
		if p.K1 != 0 {
			bp.K1 = p.K1
		}
		if p.B != nil {
			bp.B = *p.B
		}
		if err := bp.Check(); err != nil {
			return NodeOutput{}, permanentf(ErrBadInput, "%s: %v", j.in.Step, err)
		}
		ix := bm25.New(bp)
		for _, d := range docs {
			ix.Add(d)
		}
		order = ix.Rank(inst.ProblemStatement)
	case scorerDense:
		order, err = j.denseRank(ctx, p.EmbeddingModel, inst.ProblemStatement, docs, row)
		if err != nil {
			return NodeOutput{}, err
		}
	default:
		return NodeOutput{}, permanentf(ErrBadInput, "%s: unknown scorer %q (known: bm25, dense)", j.in.Step, p.Scorer)
	}
	sorted := make([]chunk.Chunk, len(order))
	for i, k := range order {
		sorted[i] = chunks[k]
	}
	r := newRanked(inst.ProblemStatement, sorted, fileLines, p.Partial == nil || *p.Partial)
	target, anchor, fitted, err := j.budgetTarget(ctx, p.Tokenizer, p.FitParams)
	if err != nil {
		return NodeOutput{}, err
	}
	if !fitted {
		target = p.MaxTokens
		if target <= 0 {
			target = DefaultRetrieveTokens
		}
	}
	c, shown, res, err := r.fit(p.Tokenizer, target, p.FitParams)
	if err != nil {
		return NodeOutput{}, err
	}
	out, err := j.putContext(ctx, c)
	if err != nil {
		return NodeOutput{}, err
	}
	for k, v := range row {
		out.Row[k] = v
	}
	specs.ChunksShown.Set(out.Row, shown)
	specs.TemplateShown.Set(out.Row, showsTemplate(c.Files()))
	if fitted {
		for k, v := range fitRow(p.FitParams, target, anchor, res) {
			out.Row[k] = v
		}
	}
	return out, nil
}

// chunkRepo reads every text file of the snapshot and cuts it into units; it also returns each file's line count.
func (j *job) chunkRepo(ctx context.Context, m repo.Manifest, unit string, window int) ([]chunk.Chunk, map[string]int, error) {
	u := chunk.File
	if unit != unitSWEBenchFile {
		var err error
		if u, err = chunk.ParseUnit(unit); err != nil {
			return nil, nil, permanentf(ErrBadInput, "%s: %v (or %s)", j.in.Step, err, unitSWEBenchFile)
		}
	}
	var out []chunk.Chunk
	lines := map[string]int{}
	for _, e := range m.Files {
		if e.Mode == repo.ModeSymlink || e.Size > maxRetrieveFileBytes || e.Size == 0 {
			continue
		}
		b, err := m.Read(ctx, j.store, e.Path)
		if err != nil {
			return nil, nil, err
		}
		if bytes.IndexByte(b[:min(len(b), 8000)], 0) >= 0 {
			continue // binary
		}
		lines[e.Path] = bytes.Count(b, []byte("\n"))
		if len(b) > 0 && b[len(b)-1] != '\n' {
			lines[e.Path]++
		}
		out = append(out, chunk.Split(e.Path, b, u, window)...)
	}
	return out, lines, nil
}

// denseRank embeds the query and the documents and orders documents by cosine similarity.
func (j *job) denseRank(ctx context.Context, model, query string, docs []string, row map[string]any) ([]int, error) {
	if model == "" {
		return nil, permanentf(ErrBadInput, "%s: dense retrieval needs embedding_model", j.in.Step)
	}
	root := runfolder.Embeddings(j.env.RunDir)
	cl, err := dense.NewFromEnv(model, dense.DirCache{Root: root})
	if err != nil {
		return nil, modelError(j.in.Step, specs.Model{Name: model}, err)
	}
	vecs, st, err := cl.Embed(ctx, append([]string{query}, docs...))
	if err != nil {
		return nil, modelError(j.in.Step, specs.Model{Name: model}, err)
	}
	specs.EmbeddingTokens.Set(row, st.PromptTokens)
	specs.EmbeddingsCached.Set(row, st.Cached)
	return dense.Rank(vecs[0], vecs[1:]), nil
}

func showsTemplate(files []string) bool {
	for _, f := range files {
		if strings.Contains(strings.ToUpper(f), "ISSUE_TEMPLATE") {
			return true
		}
	}
	return false
}
