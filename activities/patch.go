package activities

import (
	"context"

	"ctxlab/activities/llm/offline"
	"ctxlab/specs"
)

// PatchParams are the patch step's parameters; Model is filled in by the plan.
type PatchParams struct {
	Format string      `json:"format"`
	Model  specs.Model `json:"model"`
}

// Patch asks the step's model for a patch from the context. Its output is the patch text (possibly empty).
func (a *Activities) Patch(ctx context.Context, in NodeInput) (NodeOutput, error) {
	return a.node(ctx, in, "patch", func(ctx context.Context, j *job) (NodeOutput, error) {
		var p PatchParams
		if err := j.params(&p); err != nil {
			return NodeOutput{}, err
		}
		inst, err := j.instance(ctx)
		if err != nil {
			return NodeOutput{}, err
		}
		c, err := j.loadContext(ctx, "context")
		if err != nil {
			return NodeOutput{}, err
		}
		switch p.Model.Provider {
		case "offline":
			res, err := offline.OraclePatch(inst.Patch, c)
			if err != nil {
				return NodeOutput{}, permanentf(ErrBadInput, "instance %s: %v", inst.InstanceID, err)
			}
			ref, err := j.store.Put(ctx, []byte(res.Patch))
			if err != nil {
				return NodeOutput{}, err
			}
			return NodeOutput{Ref: ref, Row: map[string]any{
				"model_calls":          1,
				"cost_usd":             0.0,
				"oracle_hunks_emitted": res.Emitted,
				"oracle_hunks_total":   res.Total,
			}}, nil
		default:
			return NodeOutput{}, permanentf(ErrUnsupported, "model %s: provider %q is not available in this build",
				p.Model.Name, p.Model.Provider)
		}
	})
}
