package steps

import (
	"context"
	"errors"

	"ctxlab/activities/api"
	"ctxlab/activities/llm"
	"ctxlab/activities/llm/offline"
	"ctxlab/specs"
)

func init() { registerStep(specs.Patch, patchStep) }

// patchStep asks the step's model for a patch from the context (single turn). Its output is the patch as a unified diff,
// possibly empty: an answer that holds no usable edit is an empty patch, and the row's patch_parse_error says why.
//
// Prompt fields: .Issue, .Context (the context's files and snippets under [path] headers), .Format (the prompt's
// instructions for the edit format, from prompt.formats).
func patchStep(ctx context.Context, j *job, p specs.PatchParams) (api.NodeOutput, error) {
	inst, m, err := j.instanceAndSnapshot(ctx)
	if err != nil {
		return api.NodeOutput{}, err
	}
	c, err := j.loadContext(ctx, "context")
	if err != nil {
		return api.NodeOutput{}, err
	}
	msgs, err := renderPrompt(p.Prompt, j.in.Step, struct{ Issue, Context, Format string }{
		inst.ProblemStatement, c.Render(), p.Prompt.Formats[string(p.Format)]})
	if err != nil {
		return api.NodeOutput{}, err
	}
	req := llm.Request{Task: specs.Patch.Task, Messages: msgs, Sample: p.Sample,
		Offline: &offline.PatchInput{Gold: inst.Patch, Context: c, Format: string(p.Format)}}
	resp, row, err := j.callModel(ctx, p.ModelParams, req)
	if err != nil {
		return api.NodeOutput{}, err
	}
	patch := recordPatch(row, resp.Text, p.Format, j.reader(ctx, m))
	if standIn(p.Model) {
		if res, err := offline.OraclePatch(inst.Patch, c); err == nil {
			specs.OracleHunksEmitted.Set(row, res.Emitted)
			specs.OracleHunksTotal.Set(row, res.Total)
		}
	}
	ref, err := j.store.Put(ctx, []byte(patch))
	if err != nil {
		return api.NodeOutput{}, err
	}
	return api.NodeOutput{Ref: ref, Row: row}, nil
}

// recordPatch turns a model's answer into the step's patch and records on the row how it was read:
// patch_parse_error when the answer's edit could not be read (the patch is then empty), and patch_recounted, the
// number of hunks whose header line counts were repaired because the answer lost or added blank lines at a hunk's
// end (diff.RecountBlankTails), when there were any.
func recordPatch(row map[string]any, text string, format specs.EditFormat, read func(string) (string, bool)) string {
	patch, recounted, err := patchFromAnswer(text, format, read)
	if err != nil {
		specs.PatchParseError.Set(row, err.Error())
		return ""
	}
	if recounted > 0 {
		specs.PatchRecounted.Set(row, recounted)
	}
	return patch
}

// patchFromAnswer turns a model's answer into a unified diff and says how many of its hunks were recounted. An
// answer that holds no edit at all (the model says it cannot help) is an empty patch without error.
func patchFromAnswer(text string, format specs.EditFormat, read func(string) (string, bool)) (string, int, error) {
	var patch string
	var recounted int
	var err error
	switch format {
	case specs.EditSearchReplace:
		var blocks []llm.Replace
		if blocks, err = llm.ParseSearchReplace(text); err == nil {
			patch, err = llm.SearchReplaceDiff(blocks, read)
		}
	default:
		var d llm.ExtractedDiff
		d, err = llm.ExtractDiffDetail(text)
		patch, recounted = d.Patch, d.Recounted
	}
	if errors.Is(err, llm.ErrNoDiff) {
		return "", 0, nil
	}
	return patch, recounted, err
}
