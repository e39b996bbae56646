package steps

import (
	"context"
	"fmt"

	"ctxlab/activities/api"
	"ctxlab/activities/contexts"
	"ctxlab/patch/diff"
	"ctxlab/specs"
	"ctxlab/store/cas"
)

func init() {
	registerStep(specs.NoSource, noSourceStep)
	registerStep(specs.OracleFiles, oracleFilesStep)
}

// noSourceStep is the lower bound: the issue text and no repository text.
func noSourceStep(ctx context.Context, j *job, _ specs.NoSourceParams) (api.NodeOutput, error) {
	inst, err := j.instance(ctx)
	if err != nil {
		return api.NodeOutput{}, err
	}
	return j.putContext(ctx, contexts.Context{Issue: inst.ProblemStatement})
}

// oracleFilesStep is the upper bound: every file the gold patch edits, whole and verbatim.
func oracleFilesStep(ctx context.Context, j *job, _ specs.OracleFilesParams) (api.NodeOutput, error) {
	inst, err := j.instance(ctx)
	if err != nil {
		return api.NodeOutput{}, err
	}
	gold, err := diff.ChangedFiles(inst.Patch)
	if err != nil {
		return api.NodeOutput{}, permanentf(api.ErrBadInput, "instance %s: gold patch: %v", inst.InstanceID, err)
	}
	m, err := j.snapshot(ctx)
	if err != nil {
		return api.NodeOutput{}, err
	}
	c := contexts.Context{Issue: inst.ProblemStatement}
	for _, p := range gold {
		if _, ok := m.Lookup(p); !ok {
			continue // created by the fix: nothing to show
		}
		text, err := m.Read(ctx, j.store, p)
		if err != nil {
			return api.NodeOutput{}, err
		}
		c.Blocks = append(c.Blocks, contexts.Block{Path: p, Kind: contexts.KindFile, Start: 1, Text: string(text)})
	}
	return j.putContext(ctx, c)
}

func (j *job) putContext(ctx context.Context, c contexts.Context) (api.NodeOutput, error) {
	ref, err := cas.PutJSON(ctx, j.store, c)
	if err != nil {
		return api.NodeOutput{}, err
	}
	row := map[string]any{}
	specs.FilesShown.Set(row, len(c.Files()))
	return api.NodeOutput{Ref: ref, Row: row}, nil
}

// loadContext reads the context a named input points at.
func (j *job) loadContext(ctx context.Context, name string) (contexts.Context, error) {
	var c contexts.Context
	in, err := j.input(name)
	if err != nil {
		return c, err
	}
	if err := cas.GetJSON(ctx, j.store, in.Ref, &c); err != nil {
		return c, fmt.Errorf("input %s: %w", name, err)
	}
	return c, nil
}
