package steps

import (
	"context"

	"ctxlab/activities/api"
	"ctxlab/activities/contexts"
	"ctxlab/activities/tokens"
	"ctxlab/specs"
)

func init() {
	registerStep(specs.Assemble, assembleStep)
}

// assembleStep is CQ2-CARE's context (step 4): the selected files (input files) whole, each cut at FileCap tokens, then
// the evidence snippets (optional input evidence), each cut at SnippetCap; a block that would push the total past
// TotalCap is skipped. Defaults: 60K, 12K, 80K.
func assembleStep(ctx context.Context, j *job, p specs.AssembleParams) (api.NodeOutput, error) {
	if p.FileCap <= 0 || p.SnippetCap <= 0 || p.TotalCap <= 0 {
		return api.NodeOutput{}, permanentf(api.ErrBadInput, "%s: caps must be positive (file %d, snippet %d, total %d)",
			j.in.Step, p.FileCap, p.SnippetCap, p.TotalCap)
	}
	inst, m, err := j.instanceAndSnapshot(ctx)
	if err != nil {
		return api.NodeOutput{}, err
	}
	var sel Selection
	if err := j.loadJSON(ctx, "files", &sel); err != nil {
		return api.NodeOutput{}, err
	}
	var ev EvidenceResult
	if _, ok := j.in.Inputs["evidence"]; ok {
		if err := j.loadJSON(ctx, "evidence", &ev); err != nil {
			return api.NodeOutput{}, err
		}
	}
	read := j.reader(ctx, m)
	var blocks []contexts.Block
	for _, f := range sel.Files {
		if text, ok := read(f); ok {
			blocks = append(blocks, contexts.Block{Path: f, Kind: contexts.KindFile, Start: 1, Text: text})
		}
	}
	nFiles := len(blocks)
	for _, s := range ev.Snippets {
		blocks = append(blocks, contexts.Block{Path: s.Path, Kind: contexts.KindSnippet, Start: s.Start, Text: s.Text})
	}
	c, st, err := AssembleBlocks(inst.ProblemStatement, blocks, nFiles, p)
	if err != nil {
		return api.NodeOutput{}, permanent(api.ErrBadInput, err)
	}
	out, err := j.putContext(ctx, c)
	if err != nil {
		return api.NodeOutput{}, err
	}
	specs.AssembledTokens.Set(out.Row, st.Tokens)
	specs.BlocksCut.Set(out.Row, st.Cut)
	specs.BlocksSkipped.Set(out.Row, st.Skipped)
	return out, nil
}

// AssembleStats says what the caps did.
type AssembleStats struct {
	Tokens, Cut, Skipped int
}

// AssembleBlocks applies the caps: the first nFiles blocks are files (cut at FileCap), the rest snippets (cut at
// SnippetCap); a block whose tokens would push the total past TotalCap is skipped, and later, smaller ones may still
// fit. A block counts the tokens of its text as rendered (with its header).
func AssembleBlocks(issue string, blocks []contexts.Block, nFiles int, p specs.AssembleParams) (contexts.Context, AssembleStats, error) {
	c := contexts.Context{Issue: issue}
	var st AssembleStats
	for i, b := range blocks {
		limit := p.SnippetCap
		if i < nFiles {
			limit = p.FileCap
		}
		text, _, err := tokens.Truncate(p.Tokenizer, b.Text, limit)
		if err != nil {
			return c, st, err
		}
		if text != b.Text {
			st.Cut++
			b.Text = text
		}
		if b.Text == "" {
			st.Skipped++
			continue
		}
		n, err := tokens.Count(p.Tokenizer, contexts.Context{Blocks: []contexts.Block{b}}.Render())
		if err != nil {
			return c, st, err
		}
		if st.Tokens+n > p.TotalCap {
			st.Skipped++
			continue
		}
		st.Tokens += n
		c.Blocks = append(c.Blocks, b)
	}
	return c, st, nil
}
