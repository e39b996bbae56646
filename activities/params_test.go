package activities

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/temporal"

	"ctxlab/activities/api"
	"ctxlab/activities/steps"
	"ctxlab/specs"
)

// TestEveryKindHasAStep: every kind a spec may name has a step (package steps' registerStep, which refuses a step
// of an undeclared kind), and every step is a node activity a worker registers.
func TestEveryKindHasAStep(t *testing.T) {
	fns := New(t.TempDir(), zerolog.Nop()).Functions()
	for _, name := range specs.ActivityNames() {
		if !slices.Contains(steps.Kinds(), name) {
			t.Errorf("kind %s: no step registered (registerStep in its step's init)", name)
		}
	}
	for _, name := range steps.Kinds() {
		if _, ok := fns[name].(func(context.Context, api.NodeInput) (api.NodeOutput, error)); !ok {
			t.Errorf("step %s: no node activity among the worker's functions (%T)", name, fns[name])
		}
	}
}

// TestEveryActivityRefusesUnknownParams: every node activity, those that read no params included (checkout,
// no_source, oracle_files, intersect), fails permanently on a param its catalog entry does not declare, naming the
// step and the param, before it does any work.
func TestEveryActivityRefusesUnknownParams(t *testing.T) {
	a := New(t.TempDir(), zerolog.Nop())
	for name, fn := range a.Functions() {
		if _, node := specs.Catalog[name]; !node {
			continue // bookkeeping activities take no step params
		}
		call, ok := fn.(func(context.Context, api.NodeInput) (api.NodeOutput, error))
		if !ok {
			t.Errorf("%s: function %T is not a node activity", name, fn)
			continue
		}
		step := "m." + name
		in := api.NodeInput{Run: "params", Instance: api.InstanceRef{ID: "acme__x-1"}, Node: "n-" + name, Step: step,
			Params: map[string]any{"variant": 3}}
		_, err := call(context.Background(), in)
		var app *temporal.ApplicationError
		if !errors.As(err, &app) || app.Type() != api.ErrBadInput || !app.NonRetryable() ||
			!strings.Contains(err.Error(), step+": ") || !strings.Contains(err.Error(), `no param "variant"`) {
			t.Errorf("%s: error %v, want a permanent %s naming step %s and param variant", name, err, api.ErrBadInput, step)
		}
	}
}
