package activities

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"

	"ctxlab/activities/api"
	"ctxlab/activities/steps"
	"ctxlab/jsonnet"
	"ctxlab/specs"
	"ctxlab/testkit/demorun"
)

// TestEveryActivityEmitsOnlyDeclaredFields runs the demo spec's whole plan (all its methods) on a demo instance with
// the real activities: a node whose row sets a field its activity does not declare, or a value of another kind,
// fails, and so does this test.
func TestEveryActivityEmitsOnlyDeclaredFields(t *testing.T) {
	if testing.Short() {
		t.Skip("runs and grades every demo method on one instance")
	}
	f := newFixture(t)
	e, err := jsonnet.Compile(filepath.Join("..", "specs", "demo.jsonnet"), jsonnet.Options{})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := specs.BuildPlan(e)
	if err != nil {
		t.Fatal(err)
	}
	outs := f.RunPlan(plan, demorun.Instance) // fails on the first node the check refuses
	for _, n := range plan.Nodes {
		// Checked again after Temporal's JSON round trip, as the workflow receives it.
		if err := specs.CheckRow(n.Activity, n.Steps[0], outs[n.Key].Row); err != nil {
			t.Error(err)
		}
	}
}

// TestNodeRefusesUndeclaredRowFields: a node whose row sets a field its activity does not declare, or a declared
// field with a value of another kind, fails for good with an error naming the instance, step and field; a row of
// declared fields passes.
func TestNodeRefusesUndeclaredRowFields(t *testing.T) {
	f := newFixture(t)
	for i, tc := range []struct {
		row  map[string]any
		want string // "" when the node must succeed
	}{
		{map[string]any{"repo_files": 3}, ""},
		{map[string]any{"repo_files": 3, "repo_fiels": 3}, `"repo_fiels" is not declared by activity checkout`},
		{map[string]any{"repo_files": "many"}, `"repo_files" holds string, but activity checkout declares it int`},
		{map[string]any{"repo_files": 2.5}, `"repo_files" holds float64`},
		{map[string]any{"resolved": true}, `"resolved" is not declared by activity checkout`},
	} {
		in := api.NodeInput{Run: "t", Instance: f.Refs[demorun.Instance], Node: "rowcheck-" + strconv.Itoa(i), Step: "m.checkout"}
		_, err := f.a.node(context.Background(), in, "checkout", func(context.Context, steps.Env, *steps.Attempt) (api.NodeOutput, error) {
			return api.NodeOutput{Row: tc.row}, nil
		})
		if tc.want == "" {
			if err != nil {
				t.Errorf("row %v: %v", tc.row, err)
			}
			continue
		}
		var app *temporal.ApplicationError
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "step m.checkout") ||
			!strings.Contains(err.Error(), demorun.Instance) {
			t.Errorf("row %v: error %v, want one naming instance %s, step m.checkout and %s", tc.row, err, demorun.Instance, tc.want)
		} else if !nonRetryable(err) || !asApp(err, &app) || app.Type() != ErrUndeclaredField {
			t.Errorf("row %v: error %v is not a permanent %s", tc.row, err, ErrUndeclaredField)
		}
	}
}

func asApp(err error, app **temporal.ApplicationError) bool { return errors.As(err, app) }
