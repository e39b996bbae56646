package activities

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/temporal"

	"ctxlab/activities/llm/offline"
	"ctxlab/activities/search"
	"ctxlab/specs"
)

// TestCatalogAndRegistryAgree: every activity a spec may name has an implementation a worker registers, and every
// node activity registered has a catalog entry (its queue, inputs and params).
func TestCatalogAndRegistryAgree(t *testing.T) {
	catalog := slices.Sorted(maps.Keys(specs.Catalog))
	registered := slices.Sorted(maps.Keys(nodeActivities))
	if !slices.Equal(catalog, registered) {
		t.Errorf("catalog %v\nregistered %v", catalog, registered)
	}
	fns := New(t.TempDir(), zerolog.Nop()).Functions()
	for _, name := range catalog {
		if fns[name] == nil {
			t.Errorf("%s: no worker function", name)
		}
	}
}

// TestParamsDecodeStrictly: a node's params decode strictly at run time too, so a plan built without the spec
// compiler cannot mean a default by a typo.
func TestParamsDecodeStrictly(t *testing.T) {
	cases := []struct {
		params map[string]any
		want   string // "" for no error
	}{
		{map[string]any{"total_cap": 20000, "tokenizer": "o200k_base"}, ""},
		{map[string]any{"total_capp": 20000}, `unknown field "total_capp"`},
		{map[string]any{"total_cap": "20000"}, "cannot unmarshal string"},
	}
	for _, c := range cases {
		j := &job{in: NodeInput{Step: "m.context", Params: c.params}}
		p := AssembleParams{TotalCap: 80000}
		err := j.params(&p)
		if c.want == "" {
			if err != nil || p.TotalCap != 20000 {
				t.Errorf("%v: %v, total_cap %d", c.params, err, p.TotalCap)
			}
			continue
		}
		var app *temporal.ApplicationError
		if !errors.As(err, &app) || app.Type() != ErrBadInput || !app.NonRetryable() ||
			!strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "m.context") {
			t.Errorf("%v: error %v, want a permanent %s naming the step and %s", c.params, err, ErrBadInput, c.want)
		}
	}
}

// TestDefaultsAgreeWithPackages: the params defaults kept in specs name the same values as the packages that use
// them (specs cannot import those packages).
func TestDefaultsAgreeWithPackages(t *testing.T) {
	if specs.EvidenceDefaults.Window != search.DefaultWindow {
		t.Errorf("evidence window default %d, search.DefaultWindow %d", specs.EvidenceDefaults.Window, search.DefaultWindow)
	}
	if specs.PatchDefaults.Format != offline.FormatDiff {
		t.Errorf("patch format default %q, want %q", specs.PatchDefaults.Format, offline.FormatDiff)
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
		call, ok := fn.(func(context.Context, NodeInput) (NodeOutput, error))
		if !ok {
			t.Errorf("%s: function %T is not a node activity", name, fn)
			continue
		}
		step := "m." + name
		in := NodeInput{Run: "params", Instance: InstanceRef{ID: "acme__x-1"}, Node: "n-" + name, Step: step,
			Params: map[string]any{"variant": 3}}
		_, err := call(context.Background(), in)
		var app *temporal.ApplicationError
		if !errors.As(err, &app) || app.Type() != ErrBadInput || !app.NonRetryable() ||
			!strings.Contains(err.Error(), step+": ") || !strings.Contains(err.Error(), `no param "variant"`) {
			t.Errorf("%s: error %v, want a permanent %s naming step %s and param variant", name, err, ErrBadInput, step)
		}
	}
}
