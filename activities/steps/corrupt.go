package steps

import (
	"context"

	"ctxlab/activities/api"
	"ctxlab/activities/chunk"
	"ctxlab/activities/contexts"
	"ctxlab/activities/corrupt"
	"ctxlab/activities/repo"
	"ctxlab/specs"
)

func init() { registerStep(specs.Corrupt, corruptStep) }

// corruptStep makes a controlled variant of the input context (see package corrupt): tokens or whole lines deleted
// at a seeded rate, or one of the two pairings with the context named other.
func corruptStep(ctx context.Context, j *job, p specs.CorruptParams) (api.NodeOutput, error) {
	c, err := j.loadContext(ctx, "context")
	if err != nil {
		return api.NodeOutput{}, err
	}
	// The pairings read a second context, other, and the repository.
	var other contexts.Context
	var m repo.Manifest
	if p.Mode == specs.CorruptSameFilesOtherText || p.Mode == specs.CorruptSameTextOtherFiles {
		if other, err = j.loadContext(ctx, "other"); err != nil {
			return api.NodeOutput{}, err
		}
		if m, err = j.snapshot(ctx); err != nil {
			return api.NodeOutput{}, err
		}
	}
	row := map[string]any{}
	var out contexts.Context
	switch p.Mode {
	case specs.CorruptTokens, specs.CorruptLines:
		out, err = deleteFrom(j, c, p, row)
	case specs.CorruptSameFilesOtherText:
		out, err = sameFilesOtherText(ctx, j, m, c, other, p, row)
	case specs.CorruptSameTextOtherFiles:
		out, err = sameTextOtherFiles(ctx, j, m, c, other, p, row)
	default: // Decode checked it against specs.CorruptMode's values
		err = permanentf(api.ErrBadInput, "%s: undeclared mode %q", j.in.Step, p.Mode)
	}
	if err != nil {
		return api.NodeOutput{}, err
	}
	res, err := j.putContext(ctx, out)
	if err != nil {
		return api.NodeOutput{}, err
	}
	for k, v := range row {
		res.Row[k] = v
	}
	specs.TemplateShown.Set(res.Row, showsTemplate(out.Files()))
	return res, nil
}

// deleteFrom deletes tokens or lines of c at the seeded rate.
func deleteFrom(j *job, c contexts.Context, p specs.CorruptParams, row map[string]any) (contexts.Context, error) {
	out, st, err := corrupt.Apply(c, corrupt.Options{Mode: string(p.Mode), Rate: p.Rate, Seed: p.Seed})
	if err != nil {
		return out, permanentf(api.ErrBadInput, "%s: %v", j.in.Step, err)
	}
	if p.Mode == specs.CorruptTokens {
		specs.CorruptTokensDeleted.Set(row, st.TokensDeleted)
	} else {
		specs.CorruptLinesDeleted.Set(row, st.LinesDeleted)
	}
	return out, nil
}

// sameFilesOtherText keeps c's files and lines and changes its lines to make its verbatim rate other's.
func sameFilesOtherText(ctx context.Context, j *job, m repo.Manifest, c, other contexts.Context, p specs.CorruptParams,
	row map[string]any) (contexts.Context, error) {
	eps, err := j.epsilonOf(ctx, m, other)
	if err != nil {
		return contexts.Context{}, err
	}
	out, st, err := corrupt.SameFilesOtherText(c, eps, p.Seed)
	if err != nil {
		return out, permanentf(api.ErrBadInput, "%s: %v", j.in.Step, err)
	}
	specs.CorruptTargetEpsilon.Set(row, eps)
	specs.CorruptLinesChanged.Set(row, st.LinesDeleted)
	return out, nil
}

// sameTextOtherFiles shows other's files, whole and verbatim in other's order, fitted to c's tokens.
func sameTextOtherFiles(ctx context.Context, j *job, m repo.Manifest, c, other contexts.Context, p specs.CorruptParams,
	row map[string]any) (contexts.Context, error) {
	var files []chunk.Chunk
	lines := map[string]int{}
	for _, path := range corrupt.FilesInOrder(other) {
		if _, ok := m.Lookup(path); !ok {
			continue
		}
		b, err := m.Read(ctx, j.store, path)
		if err != nil {
			return contexts.Context{}, err
		}
		cs := chunk.Split(path, b, chunk.File, 0)
		if len(cs) == 1 {
			files = append(files, cs[0])
			lines[path] = cs[0].End
		}
	}
	target, err := countTokens(p.Tokenizer, c.Render())
	if err != nil {
		return contexts.Context{}, err
	}
	r := newRanked(c.Issue, files, lines, true)
	out, _, fit, err := r.fit(p.Tokenizer, target, p.FitParams)
	if err != nil {
		return contexts.Context{}, err
	}
	for k, v := range fitRow(p.FitParams, target, target, fit) {
		row[k] = v
	}
	return out, nil
}

// epsilonOf measures a context's verbatim rate against the snapshot (1 for a context that shows no lines).
func (j *job) epsilonOf(ctx context.Context, m repo.Manifest, c contexts.Context) (float64, error) {
	met, err := j.measureContext(ctx, m, c, nil)
	if err != nil {
		return 0, err
	}
	if met.Epsilon == nil {
		return 1, nil
	}
	return *met.Epsilon, nil
}
