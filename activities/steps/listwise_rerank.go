package steps

import (
	"context"
	"strings"

	"ctxlab/activities/api"
	"ctxlab/activities/chunk"
	"ctxlab/activities/listwise"
	"ctxlab/activities/llm"
	"ctxlab/activities/llm/offline"
	"ctxlab/specs"
)

func init() { registerStep(specs.ListwiseRerank, listwiseRerankStep) }

// Candidate is one chunk a listwise_rerank prompt shows, numbered from 1 within its window.
type Candidate struct {
	ID         int
	Path       string
	Start, End int
	Text       string
}

// listwiseRerankStep is SweRank's retrieve-then-rerank: the chunks ranked as a retrieve step with the same params
// ranks them (sharing its BM25 ranking or embeddings), the first top_k reranked by the model window by window
// (package listwise), then shown in that order, followed by the rest in retrieval order, up to the budget as
// retrieve shows them. Every window is one call through callModel (cached by content, under the spend cap,
// recorded), so a retried step pays for no finished window again.
//
// Prompt fields: .Issue, .Count (the window's candidates), .Candidates (each .ID, .Path, .Start, .End, .Text).
func listwiseRerankStep(ctx context.Context, j *job, p specs.ListwiseRerankParams) (api.NodeOutput, error) {
	if p.Step > p.Window {
		return api.NodeOutput{}, permanentf(api.ErrBadInput, "%s: step %d is larger than window %d: candidates between "+
			"windows would never be ranked", j.in.Step, p.Step, p.Window)
	}
	inst, m, err := j.instanceAndSnapshot(ctx)
	if err != nil {
		return api.NodeOutput{}, err
	}
	rp := specs.RetrieveParams{Tokenizer: p.Tokenizer, Scorer: p.Scorer, Unit: p.Unit, K1: p.K1, B: p.B,
		EmbeddingModel: p.EmbeddingModel, EmbeddingMaxTokens: p.EmbeddingMaxTokens, Partial: p.Partial,
		MaxTokens: p.MaxTokens, FitParams: p.FitParams}
	row := map[string]any{}
	chunked, order, err := j.rankChunks(ctx, inst.ProblemStatement, m, rp, row)
	if err != nil {
		return api.NodeOutput{}, err
	}
	top := min(p.TopK, len(order))
	ask := func(ctx context.Context, window []int) (string, error) {
		resp, callRow, err := j.askWindow(ctx, p, inst.ProblemStatement, chunked.Chunks, window)
		addCallRow(row, callRow)
		return resp, err
	}
	reranked, st, err := listwise.Rerank(ctx, order[:top], p.Window, p.Step, ask)
	if err != nil {
		return api.NodeOutput{}, err
	}
	sorted := make([]chunk.Chunk, 0, len(order))
	for _, k := range append(reranked, order[top:]...) {
		sorted = append(sorted, chunked.Chunks[k])
	}
	out, err := j.showRanked(ctx, inst.ProblemStatement, sorted, chunked.FileLines, rp)
	if err != nil {
		return api.NodeOutput{}, err
	}
	for k, v := range row {
		out.Row[k] = v
	}
	specs.ListwiseCandidates.Set(out.Row, top)
	specs.ListwiseWindows.Set(out.Row, st.Windows)
	specs.ListwiseUnparsed.Set(out.Row, st.Unparsed)
	specs.ListwiseIncomplete.Set(out.Row, st.Incomplete)
	return out, nil
}

// askWindow asks the model to rank one window of chunks (indices into chunks, in their current order).
func (j *job) askWindow(ctx context.Context, p specs.ListwiseRerankParams, issue string, chunks []chunk.Chunk,
	window []int) (string, map[string]any, error) {
	cands := make([]Candidate, len(window))
	offlineCands := make([]string, len(window))
	for i, k := range window {
		c := chunks[k]
		text := c.Text
		if p.MaxLines > 0 {
			if lines := strings.SplitAfter(text, "\n"); len(lines) > p.MaxLines {
				text = strings.Join(lines[:p.MaxLines], "")
			}
		}
		cands[i] = Candidate{ID: i + 1, Path: c.Path, Start: c.Start, End: c.End, Text: text}
		offlineCands[i] = c.Path + "\n" + text
	}
	msgs, err := renderPrompt(p.Prompt, j.in.Step, struct {
		Issue      string
		Count      int
		Candidates []Candidate
	}{issue, len(cands), cands})
	if err != nil {
		return "", nil, err
	}
	req := llm.Request{Task: specs.ListwiseRerank.Task, Messages: msgs, Sample: p.Sample,
		Offline: &offline.ListwiseInput{Issue: issue, Candidates: offlineCands}}
	resp, row, err := j.callModel(ctx, p.ModelParams, req)
	return resp.Text, row, err
}

// addCallRow adds one call's usage row fields (callModel's) to a step's row that makes several calls: the counts
// and costs summed, the model the endpoint named kept.
func addCallRow(row, call map[string]any) {
	for _, f := range specs.UsageFields {
		switch v := call[f.Name].(type) {
		case int:
			n, _ := row[f.Name].(int)
			row[f.Name] = n + v
		case float64:
			x, _ := row[f.Name].(float64)
			row[f.Name] = x + v
		}
	}
	if served, ok := specs.ModelServed.Get(call); ok {
		specs.ModelServed.Set(row, served)
	}
}
