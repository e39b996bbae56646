package jsonnet

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"ctxlab/specs"
)

// TestCompileStepParamErrors: a step param the activity does not take, or of the wrong type, is a spec error at the
// line that wrote it, naming the step, the activity and the param; before, it compiled and meant the default.
func TestCompileStepParamErrors(t *testing.T) {
	experiment := func(methods string) string {
		return spec(
			"ctxlab.experiment({",
			"  name: 'x',",
			"  dataset: ctxlab.datasets.demo,",
			"  models: [ctxlab.models.offline],",
			"  methods: [", // 7
			methods,        // 8 and on
			"  ],",
			"})")
	}
	cases := []struct {
		name    string
		methods string
		want    [][2]string
	}{
		{
			name: "misspelled param of an overridden library step",
			methods: "    ctxlab.override(ctxlab.methods.cq2care, 'context',\n" +
				"      { params+: { total_capp: 20000 } }) + { name: 'capped' },", // 9
			want: [][2]string{{"spec.jsonnet:9:20: ", `methods[0].steps[7].params.total_capp: step "context": ` +
				`activity assemble takes no param "total_capp" (params: file_cap, snippet_cap, tokenizer, total_cap)`}},
		},
		{
			name: "string where a number is expected",
			methods: "    ctxlab.override(ctxlab.methods.cq2care, 'context',\n" +
				"      { params+: { total_cap: '20000' } }) + { name: 'capped' },", // 9
			want: [][2]string{{"spec.jsonnet:9:31: ", `methods[0].steps[7].params.total_cap: step "context": ` +
				`activity assemble: expected an integer, got string "20000"`}},
		},
		{
			name: "number where a string is expected: at the param's name",
			methods: "    ctxlab.method('m', ctx('no_source'),\n" +
				"      patch={ format: 3, prompt: ctxlab.patch_params.prompt }),", // 9
			want: [][2]string{{"spec.jsonnet:9:15: ", `methods[0].steps[2].params.format: step "patch": ` +
				`activity patch: expected a string, got number 3`}},
		},
		{
			name:    "fraction where an integer is expected",
			methods: "    ctxlab.method('m', ctxlab.step('context', 'retrieve', { unit: 'file', max_tokens: 1.5 }, { checkout: 'checkout' })),", // 8
			want: [][2]string{{"spec.jsonnet:8:", `methods[0].steps[1].params.max_tokens: step "context": ` +
				`activity retrieve: expected an integer, got number 1.5`}},
		},
		{
			name: "misspelled field inside a param",
			methods: "    ctxlab.method('m', ctx('no_source'),\n" +
				"      patch={ format: 'diff', prompt: { user: 'u', sytem: 's' } }),", // 9
			want: [][2]string{{"spec.jsonnet:9:52: ", `methods[0].steps[2].params.prompt.sytem: step "patch": ` +
				`activity patch: unknown field "sytem" (fields here: formats, system, user)`}},
		},
		{
			name: "param of a step that takes none",
			methods: "    ctxlab.method('m', ctx('no_source')) +\n" +
				"    { steps: [if s.id == 'checkout' then s { params: { depth: 1 } } else s for s in super.steps] },", // 9
			want: [][2]string{{"spec.jsonnet:9:56: ", `methods[0].steps[0].params.depth: step "checkout": ` +
				`activity checkout takes no param "depth" (params: none)`}},
		},
		{
			name: "every bad param, one line each",
			methods: "    ctxlab.method('a', ctxlab.step('context', 'retrieve', { unit: 'file', scorrer: 'bm25' }, { checkout: 'checkout' })),\n" + // 8
				"    ctxlab.method('b', ctxlab.step('context', 'corrupt', { mode: 'delete_tokens', rate: 'half' }, { checkout: 'checkout', context: 'checkout' })),", // 9
			want: [][2]string{
				{"spec.jsonnet:8:", `methods[0].steps[1].params.scorrer: step "context": activity retrieve takes no param "scorrer"`},
				{"spec.jsonnet:9:", `methods[1].steps[1].params.rate: step "context": activity corrupt: expected a number, got string "half"`},
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := writeFiles(t, map[string]string{"spec.jsonnet": experiment(c.methods)})
			e, err := Compile(filepath.Join(dir, "spec.jsonnet"), Options{})
			if err == nil {
				t.Fatalf("compiled: %+v", e.Methods)
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(c.want) {
				t.Fatalf("got %d lines, want %d:\n%s", len(lines), len(c.want), err)
			}
			for i, w := range c.want {
				prefix := filepath.Join(dir, w[0])
				if !strings.HasPrefix(lines[i], prefix) || !strings.Contains(lines[i], w[1]) {
					t.Errorf("line %d:\n got %s\nwant %s...%s", i, lines[i], prefix, w[1])
				}
			}
		})
	}
}

// TestCompileStepParamsAccepted: the params a step may set compile, including those the plan would inject (model,
// tokenizer, grading) and those of embedded structs (fitting, model calls).
func TestCompileStepParamsAccepted(t *testing.T) {
	dir := writeFiles(t, map[string]string{"spec.jsonnet": spec(
		"ctxlab.experiment({",
		"  name: 'x',",
		"  dataset: ctxlab.datasets.demo,",
		"  models: [ctxlab.models.offline],",
		"  methods: [",
		"    ctxlab.method('m', ctxlab.step('context', 'retrieve',",
		"      { unit: 'file', tokenizer: 'cl100k_base', multiplier: 1.5, max_evals: 4, b: 0.5, partial: false },",
		"      { checkout: 'checkout' }),",
		"      patch=ctxlab.patch_params { sample: 2, temperature: 0.3, model: ctxlab.models.offline }),",
		"  ],",
		"})")})
	e, err := Compile(filepath.Join(dir, "spec.jsonnet"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := e.Methods[0].Steps[1].Params["multiplier"]; got != 1.5 {
		t.Errorf("retrieve multiplier %v, want 1.5", got)
	}
}

// TestEveryShippedSpecCompiles: the specs in specs/ use only params their activities take.
func TestEveryShippedSpecCompiles(t *testing.T) {
	paths, err := filepath.Glob("../specs/*.jsonnet")
	if err != nil || len(paths) < 3 {
		t.Fatalf("specs %v: %v", paths, err)
	}
	for _, p := range paths {
		if _, err := Compile(p, Options{}); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}

// TestLibraryReadsDefaultsFromCatalog: the library's CQ2-CARE knobs and patch format are the catalog's defaults,
// read when the spec is compiled, not a copy: changing the Go default changes the compiled spec.
func TestLibraryReadsDefaultsFromCatalog(t *testing.T) {
	compileCQ2CARE := func() map[string]map[string]any {
		t.Helper()
		dir := writeFiles(t, map[string]string{"spec.jsonnet": spec(
			"ctxlab.experiment({ name: 'x', dataset: ctxlab.datasets.demo, models: [ctxlab.models.offline],",
			"  methods: [ctxlab.methods.cq2care] })")})
		e, err := Compile(filepath.Join(dir, "spec.jsonnet"), Options{})
		if err != nil {
			t.Fatal(err)
		}
		params := map[string]map[string]any{}
		for _, s := range e.Methods[0].Steps {
			params[s.ID] = s.Params
		}
		return params
	}
	got := compileCQ2CARE()
	d := specs.AssembleDefaults
	if want := map[string]any{"file_cap": float64(d.FileCap), "snippet_cap": float64(d.SnippetCap),
		"total_cap": float64(d.TotalCap)}; !reflect.DeepEqual(got["context"], want) {
		t.Errorf("assemble params %v, want %v", got["context"], want)
	}
	if got["inventory"]["ratio"] != specs.InventoryDefaults.Ratio || got["patch"]["format"] != string(specs.PatchDefaults.Format) ||
		got["evidence"]["max_searches"] != float64(specs.EvidenceDefaults.MaxSearches) ||
		got["localize0"]["max_files"] != float64(specs.LocalizeDefaults.MaxFiles) {
		t.Errorf("params %v", got)
	}

	info := specs.Catalog["assemble"]
	t.Cleanup(func() { specs.Catalog["assemble"] = info })
	changed := info
	changed.Defaults = specs.AssembleParams{FileCap: 1, SnippetCap: 2, TotalCap: 3}
	specs.Catalog["assemble"] = changed
	if got := compileCQ2CARE()["context"]; got["total_cap"] != 3.0 || got["file_cap"] != 1.0 {
		t.Errorf("with total_cap 3 in the catalog the library wrote %v", got)
	}
}

// TestCompileStepParamValues: a param value outside its declared set or range is a spec error at the literal that
// wrote it, with the nearest allowed value; before, `scorer: 'bm52', unit: 'functon'` compiled and every retrieve
// node failed in the sweep.
func TestCompileStepParamValues(t *testing.T) {
	experiment := func(methods string) string {
		return spec(
			"ctxlab.experiment({",
			"  name: 'x',",
			"  dataset: ctxlab.datasets.demo,",
			"  models: [ctxlab.models.offline],",
			"  methods: [", // 7
			methods,        // 8 and on
			"  ],",
			"})")
	}
	cases := []struct {
		name    string
		methods string
		want    [][2]string
	}{
		{
			name: "misspelt scorer and unit of a library retriever",
			methods: "    ctxlab.baselines.retriever('r', 'functon',\n" + // 8
				"                               'bm52'),", // 9
			want: [][2]string{
				{"spec.jsonnet:9:32: ", `methods[0].steps[1].params.scorer: method "r", step "context": activity retrieve: ` +
					`param "scorer": "bm52" is not one of bm25, dense; did you mean "bm25"?`},
				{"spec.jsonnet:8:37: ", `methods[0].steps[1].params.unit: method "r", step "context": activity retrieve: ` +
					`param "unit": "functon" is not one of definition, function, window, file, swebench_file; did you mean "function"?`},
			},
		},
		{
			name:    "corrupt mode and compressor",
			methods: "    ctxlab.method('c', ctxlab.step('context', 'compress', { compressor: 'llmlingau2', rate: 0.5 }, { context: 'checkout' })),", // 8
			want: [][2]string{{"spec.jsonnet:8:73: ", `param "compressor": "llmlingau2" is not one of ` +
				`llmlingua2, longllmlingua, longcodezip, swepruner, fake; did you mean "llmlingua2"?`}},
		},
		{
			name: "a rate outside its range, at the number",
			methods: "    ctxlab.method('c', ctxlab.step('context', 'corrupt',\n" +
				"      { mode: 'tokens', rate: 1.5 }, { checkout: 'checkout', context: 'checkout' })),", // 9
			want: [][2]string{{"spec.jsonnet:9:31: ", `methods[0].steps[1].params.rate: method "c", step "context": ` +
				`activity corrupt: param "rate": 1.5 is out of range [0, 1]`}},
		},
		{
			name: "a step tokenizer no counter knows",
			methods: "    ctxlab.method('m', ctxlab.step('context', 'retrieve',\n" +
				"      { unit: 'file', tokenizer: 'o200k' }, { checkout: 'checkout' })),", // 9
			want: [][2]string{{"spec.jsonnet:9:34: ", `param "tokenizer": "o200k" is not one of o200k_base, ` +
				`cl100k_base, endpoint:MODEL, anthropic:MODEL; did you mean "o200k_base"?`}},
		},
		{
			name:    "an enumerated param without a default left out",
			methods: "    ctxlab.method('m', ctxlab.step('context', 'retrieve', { max_tokens: 100 }, { checkout: 'checkout' })),", // 8
			want: [][2]string{{"spec.jsonnet:", `methods[0].steps[1].params.unit: method "m", step "context": activity retrieve: ` +
				`param "unit" is required (one of definition, function, window, file, swebench_file)`}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := writeFiles(t, map[string]string{"spec.jsonnet": experiment(c.methods)})
			e, err := Compile(filepath.Join(dir, "spec.jsonnet"), Options{})
			if err == nil {
				t.Fatalf("compiled: %+v", e.Methods)
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(c.want) {
				t.Fatalf("got %d lines, want %d:\n%s", len(lines), len(c.want), err)
			}
			for i, w := range c.want {
				prefix := filepath.Join(dir, w[0])
				if !strings.HasPrefix(lines[i], prefix) || !strings.Contains(lines[i], w[1]) {
					t.Errorf("line %d:\n got %s\nwant %s...%s", i, lines[i], prefix, w[1])
				}
			}
		})
	}
}
