package steps

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"ctxlab/activities/contexts"
	"ctxlab/activities/llm"
	"ctxlab/activities/repo"
	"ctxlab/activities/tokens"
	"ctxlab/patch/diff"
	"ctxlab/specs"
)

func init() { registerStep(specs.Measure, measureStep) }

// MeasureParams are declared in specs beside the catalog, which checks every step's params against them.
type MeasureParams = specs.MeasureParams

// measureStep computes the offline metrics of a context (rho, epsilon, share of lines in gold files, the line-level
// truth, tokens) and whether the patch, if any, applies strictly at base_commit.
func measureStep(ctx context.Context, j *job, p MeasureParams) (NodeOutput, error) {
	inst, m, err := j.instanceAndSnapshot(ctx)
	if err != nil {
		return NodeOutput{}, err
	}
	c, err := j.loadContext(ctx, "context")
	if err != nil {
		return NodeOutput{}, err
	}
	gold, err := diff.ChangedFiles(inst.Patch)
	if err != nil {
		return NodeOutput{}, permanentf(ErrBadInput, "instance %s: gold patch: %v", inst.InstanceID, err)
	}
	met, err := j.measureContext(ctx, m, c, gold)
	if err != nil {
		return NodeOutput{}, err
	}
	truth, err := j.measureTruth(ctx, m, c, inst.Patch)
	if err != nil {
		return NodeOutput{}, err
	}
	tokens, err := countTokens(p.Tokenizer, c.Render())
	if err != nil {
		return NodeOutput{}, err
	}
	row := map[string]any{}
	specs.Tokenizer.Set(row, p.Tokenizer)
	specs.ContextTokens.Set(row, tokens)
	specs.ContextLines.Set(row, met.Lines)
	specs.Rho.Set(row, met.Rho)
	specs.Epsilon.SetPtr(row, met.Epsilon)
	specs.GoldLineShare.SetPtr(row, met.GoldLineShare)
	specs.GoldFilesMissed.Set(row, met.GoldFilesMissed)
	setTruth(row, truth)
	if pin, ok := j.in.Inputs["patch"]; ok {
		text, err := j.store.Get(ctx, pin.Ref)
		if err != nil {
			return NodeOutput{}, err
		}
		applied, empty, why := applies(ctx, j, m, string(text))
		specs.PatchApplied.Set(row, applied)
		specs.PatchEmpty.Set(row, empty)
		if why != "" {
			specs.PatchApplyError.Set(row, why)
		}
	}
	return NodeOutput{Row: row}, nil
}

// applies tries the patch strictly, in memory, on the snapshot.
func applies(ctx context.Context, j *job, m repo.Manifest, patch string) (applied, empty bool, why string) {
	if strings.TrimSpace(patch) == "" {
		return false, true, ""
	}
	_, err := diff.ApplyFiles(func(path string) ([]byte, bool) {
		if _, ok := m.Lookup(path); !ok {
			return nil, false
		}
		b, err := m.Read(ctx, j.store, path)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			// A store failure is not the patch's: fail the attempt (retried) rather than record it as not applying.
			j.failRead(fmt.Errorf("instance %s: %w", j.in.Instance.ID, err))
		}
		return b, err == nil
	}, patch)
	if errors.Is(err, diff.ErrEmpty) {
		return false, true, ""
	}
	if err != nil {
		return false, false, err.Error()
	}
	return true, false, ""
}

// countTokens counts text in the step's tokenizer (an encoding, or "endpoint:MODEL": the model server's own). A
// server that could not answer now (down, 5xx, a timeout) fails the attempt, which is retried; any other failure is
// the spec's (a tokenizer the server does not serve) and permanent.
func countTokens(tokenizer, text string) (int, error) {
	n, err := tokens.Count(tokenizer, text)
	if err != nil {
		var le *llm.Error
		if errors.As(err, &le) && le.Kind.Retryable() {
			return 0, &Error{Type: string(le.Kind), Message: llm.ScrubSecrets(err.Error()), Retryable: true}
		}
		return 0, permanent(ErrBadInput, err)
	}
	return n, nil
}

// measureContext measures c against the snapshot's files (and gold, the files the gold patch edits), each read from
// the store and checked against its hash; a file the store cannot give fails the measurement.
func (j *job) measureContext(ctx context.Context, m repo.Manifest, c contexts.Context,
	gold []string) (contexts.Metrics, error) {
	var readErr error
	met := contexts.Measure(c, gold, func(path string) (string, bool) {
		if _, ok := m.Lookup(path); !ok {
			return "", false
		}
		b, err := m.Read(ctx, j.store, path)
		if err != nil {
			readErr = err
			return "", false
		}
		return string(b), true
	})
	return met, readErr
}

// measureTruth measures c's line-level truth against the instance's gold patch at the snapshot; a file the store
// cannot give fails the measurement (retried), as for measureContext.
func (j *job) measureTruth(ctx context.Context, m repo.Manifest, c contexts.Context, patch string) (contexts.Truth,
	error) {
	read := j.reader(ctx, m)
	gold, err := contexts.GoldOf(patch, read)
	if err != nil {
		return contexts.Truth{}, permanentf(ErrBadInput, "instance %s: gold patch: %v", j.in.Instance.ID, err)
	}
	t := contexts.MeasureTruth(c, gold, read)
	return t, j.readFailure()
}

// setTruth writes the line-level truth's row fields; a measure without a denominator is left out of the row.
func setTruth(row map[string]any, t contexts.Truth) {
	specs.FilePrecision.SetPtr(row, t.FilePrecision)
	specs.BlockRecall.SetPtr(row, t.BlockRecall)
	specs.BlockPrecision.SetPtr(row, t.BlockPrecision)
	specs.LineRecall.SetPtr(row, t.LineRecall)
	specs.LinePrecision.SetPtr(row, t.LinePrecision)
	specs.GoldLines.Set(row, t.GoldLines)
	specs.GoldBlockLines.Set(row, t.GoldBlockLines)
}
