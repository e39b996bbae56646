package activities

import (
	"context"
	"errors"

	"go.temporal.io/sdk/temporal"

	"ctxlab/activities/api"
	"ctxlab/activities/api/errkind"
	"ctxlab/dataset/swebench"
	"ctxlab/grading"
	"ctxlab/patch/diff"
	"ctxlab/results"
	"ctxlab/results/predictions"
	"ctxlab/specs"
	"ctxlab/store/cas"
)

// PredictionGrader grades SWE-bench predictions with the checkout and grade steps called as plain functions,
// without Temporal (starter grade): each prediction is a grade plan of two nodes (specs.GradePlan) with no model
// calls, its node outputs memoized in the run's store as a sweep's are, so a killed grade run picks up where it
// stopped when started again.
type PredictionGrader struct {
	Acts    *Activities
	Store   cas.Store
	Run     string
	Grading specs.Grading
	Dataset specs.Dataset
}

// Grade returns the prediction's row and the stored log of its test runs: its grade plan (specs.GradePlan: a
// checkout and a grade node, keyed as a sweep's nodes are) run step by step, the row built as the Issue workflow
// builds its rows (results.RowMerger). A failure lands in the row's error field, with its kind, and the fields of
// the steps that did not finish stay null, as in a sweep.
func (g PredictionGrader) Grade(ctx context.Context, inst swebench.Instance, p predictions.Prediction) grading.Graded {
	model, method := predictions.SplitModelName(p.ModelNameOrPath)
	plan, err := specs.GradePlan(method, model, g.Grading, specs.PatchKey([]byte(p.ModelPatch)))
	if err != nil {
		plan = &specs.Plan{Arms: []specs.Arm{{Method: method, Model: model}}}
	}
	arm := plan.Arms[0]
	var outputs map[string]api.NodeOutput
	var failedKey string
	if err == nil {
		outputs, failedKey, err = g.runArm(ctx, inst, p.ModelPatch, *plan)
	}
	row, _ := results.NewRowMerger(*plan).ArmRow(inst.InstanceID, arm, func(key string) (map[string]any, bool) {
		return outputs[key].Row, true // a node that failed or did not run has no fields
	}, func(row results.Row, st specs.ArmStep) {
		if st.Key == failedKey && row[results.FieldError] == nil {
			row[results.FieldError] = gradeErrorText(err)
		}
	})
	if err != nil && row[results.FieldError] == nil { // before any step: the instance or the patch was not stored
		row[results.FieldError] = gradeErrorText(err)
	}
	if err != nil {
		if kind := gradeErrorKind(err); kind != "" {
			row[results.FieldErrorKind] = kind
		}
	}
	out, ran := outputs[arm.Steps[len(arm.Steps)-1].Key]
	if err == nil && ran {
		// As the measure step defines it: the patch applies strictly (git apply).
		specs.PatchApplied.Set(row, out.Row[specs.PatchApply.Name] == string(diff.Applied))
	}
	return grading.Graded{Row: row, Log: out.Ref}
}

// gradeErrorKind is the kind an activity error carries: an ApplicationError's type, or the innermost errkind mark.
func gradeErrorKind(err error) string {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		if k, ok := errkind.OfType(app.Type()); ok {
			return string(k)
		}
	}
	if k, ok := errkind.KindOf(err); ok {
		return string(k)
	}
	return ""
}

// runArm runs the steps of a grade plan's arm in order on one instance, the patch as the plan's given patch input,
// and returns their outputs by node key; on a failure it stops and returns the failed node's key ("" before any
// node ran) with the error.
func (g PredictionGrader) runArm(ctx context.Context, inst swebench.Instance, patch string, plan specs.Plan) (
	map[string]api.NodeOutput, string, error) {
	instRef, err := cas.PutJSON(ctx, g.Store, inst)
	if err != nil {
		return nil, "", err
	}
	patchRef, err := g.Store.Put(ctx, []byte(patch))
	if err != nil {
		return nil, "", err
	}
	outputs := map[string]api.NodeOutput{specs.PatchKey([]byte(patch)): {Ref: patchRef}}
	nodes := map[string]specs.Node{}
	for _, n := range plan.Nodes {
		nodes[n.Key] = n
	}
	run := map[string]func(context.Context, api.NodeInput) (api.NodeOutput, error){
		specs.Checkout.Name: g.Acts.Checkout, specs.Grade.Name: g.Acts.Grade}
	for _, st := range plan.Arms[0].Steps {
		n := nodes[st.Key]
		in := api.NodeInput{Run: g.Run, Instance: api.InstanceRef{ID: inst.InstanceID, Ref: instRef},
			Node: n.Key, Step: "grade." + st.ID, Params: n.Params, Inputs: map[string]api.NodeOutput{},
			Dataset: g.Dataset}
		for name, key := range n.Inputs {
			in.Inputs[name] = outputs[key]
		}
		out, err := run[n.Activity](ctx, in)
		if err != nil {
			return outputs, n.Key, err
		}
		outputs[n.Key] = out
	}
	return outputs, "", nil
}

// gradeErrorText is an activity error's text for a row: an ApplicationError's message and its causes', without the
// "(type: ..., retryable: ...)" that its Error adds for Temporal's logs.
func gradeErrorText(err error) string {
	app, ok := err.(*temporal.ApplicationError)
	if !ok {
		return err.Error()
	}
	if cause := app.Unwrap(); cause != nil {
		return app.Message() + ": " + gradeErrorText(cause)
	}
	return app.Message()
}
