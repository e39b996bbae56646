package jsonnet

import (
	"encoding/json"
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	gojsonnet "github.com/google/go-jsonnet"

	"ctxlab/specs"
)

const demoSpec = "../specs/demo.jsonnet"

func TestCompileDemo(t *testing.T) {
	e, err := Compile(demoSpec, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if e.Name != "demo" || e.File != demoSpec {
		t.Errorf("name %q file %q", e.Name, e.File)
	}
	if e.Dataset.Generate != "demo" || e.Dataset.File != "demo.jsonl" || e.Dataset.Repos != "{dataset_dir}/repos/{repo}" {
		t.Errorf("dataset %+v (a generated dataset's file stays relative to the generated folder)", e.Dataset)
	}
	if len(e.Models) != 1 || e.Models[0] != (specs.Model{Name: "offline", Provider: "offline"}) {
		t.Errorf("models %+v", e.Models)
	}
	var names []string
	for _, m := range e.Methods {
		names = append(names, m.Name)
	}
	if len(names) < 6 || !slices.Equal(names[:6], []string{"no_source", "oracle_files", "cq2care", "cq2care_no_evidence",
		"cq2care_single_sample", "cq2care_patch_resample"}) {
		t.Errorf("methods %v", names)
	}
	if e.Tokenizer != "model" || e.Grading.Executor != "local" || e.Grading.Timeout.D() != 30*time.Minute ||
		!reflect.DeepEqual(e.Limits, specs.Limits{Concurrency: 4, Retries: 3}) {
		t.Errorf("defaults: tokenizer %q grading %+v limits %+v", e.Tokenizer, e.Grading, e.Limits)
	}
	var ids []string
	for _, s := range e.Methods[1].Steps {
		ids = append(ids, s.ID+":"+s.Activity)
	}
	if want := "checkout:checkout context:oracle_files patch:patch measure:measure grade:grade"; strings.Join(ids, " ") != want {
		t.Errorf("oracle_files steps %v, want %s", ids, want)
	}
	if p := e.Methods[0].Steps[2].Params["format"]; p != "diff" {
		t.Errorf("patch params %v", e.Methods[0].Steps[2].Params)
	}

	plan, err := specs.BuildPlan(e)
	if err != nil {
		t.Fatal(err)
	}
	steps := map[string][]string{} // activity -> steps of each of its nodes, joined
	for _, n := range plan.Nodes {
		steps[n.Activity] = append(steps[n.Activity], strings.Join(n.Steps, ","))
	}
	if got := steps["checkout"]; len(got) != 1 || strings.Count(got[0], ".checkout") < len(e.Methods) {
		t.Errorf("checkout nodes %v, want one shared by every method", got)
	}
	if got := append(steps["patch"], steps["agent_patch"]...); len(got) != len(e.Methods) {
		t.Errorf("patch nodes %v, want one per method (contexts or samples differ)", got)
	}
	if len(plan.Arms) != len(names) {
		t.Errorf("%d arms for %d methods", len(plan.Arms), len(names))
	}
	// CQ2-CARE's ablations reuse its steps, and the baselines fitted to it read its context from its own nodes:
	// one inventory, three localization samples and one intersection per issue for every method that needs them.
	for act, want := range map[string]int{"inventory": 1, "localize": 3, "intersect": 1, "trim": 1, "evidence": 2,
		"assemble": 3} {
		if got := steps[act]; len(got) != want {
			t.Errorf("%s nodes %v, want %d", act, got, want)
		}
	}
	anchored := false
	for _, s := range steps["assemble"] {
		anchored = anchored || strings.Contains(s, "cq2care.context") && strings.Contains(s, "bm25_function.anchor.context")
	}
	if !anchored {
		t.Errorf("assemble nodes %v, want cq2care's context shared with the fitted baselines' anchor steps", steps["assemble"])
	}
}

func TestCompileDemoOpenAI(t *testing.T) {
	e, err := Compile(demoSpec, Options{ExtStr: map[string]string{"model": "openai", "openai_model": "gpt-5.6"}})
	if err != nil {
		t.Fatal(err)
	}
	m := e.Models[0]
	if m.Name != "gpt-5.6" || m.Provider != "openai" || m.ID != "gpt-5.6" || m.MaxTokens != 4096 ||
		m.Temperature == nil || *m.Temperature != 0 || m.Seed == nil || *m.Seed != 0 {
		t.Errorf("model %+v", m)
	}
	e, err = Compile(demoSpec, Options{ExtStr: map[string]string{"model": "openai"}})
	if err != nil || e.Models[0].ID != "gpt-4o-mini" {
		t.Errorf("default openai model: %v %+v", err, e)
	}
	e, err = Compile(demoSpec, Options{ExtStr: map[string]string{"model": "anthropic"}})
	if err != nil || e.Models[0].Provider != "anthropic" || e.Models[0].ID != "claude-haiku-4-5" ||
		e.Models[0].Price.CacheWrite != 1.25 {
		t.Errorf("the demo under anthropic: %v %+v", err, e)
	}
	_, err = Compile(demoSpec, Options{ExtStr: map[string]string{"model": "gemini"}})
	if err == nil || !strings.HasPrefix(err.Error(), demoSpec+":") || !strings.Contains(err.Error(), "got 'gemini'") {
		t.Errorf("bad model: %v", err)
	}
}

func TestVariablesReachTheSpec(t *testing.T) {
	dir := writeFiles(t, map[string]string{"spec.jsonnet": `
local ctxlab = import 'ctxlab.libsonnet';
function(name, retries='2', concurrency=1)
ctxlab.experiment({
  name: name + '-' + std.extVar('suffix') + '-' + ctxlab.ext('tag', 'untagged') + '-' + ctxlab.ext('missing', 'dflt'),
  dataset: ctxlab.datasets.swebench('data/' + ctxlab.ext('file', 'x.jsonl')),
  models: [ctxlab.models.offline],
  methods: [ctxlab.methods.no_source],
  limits: { retries: std.parseInt(retries), concurrency: concurrency * ctxlab.ext('factor', 1) },
  tokenizer: std.extVar('tok'),
})
`})
	path := filepath.Join(dir, "spec.jsonnet")
	e, err := Compile(path, Options{
		ExtStr:  map[string]string{"suffix": "s", "tag": "t1", "file": "y.jsonl"},
		ExtCode: map[string]string{"factor": "2 + 1", "tok": "'cl' + '100k_base'"},
		TLAStr:  map[string]string{"name": "exp", "retries": "5"},
		TLACode: map[string]string{"concurrency": "2"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if e.Name != "exp-s-t1-dflt" {
		t.Errorf("name %q", e.Name)
	}
	if e.Limits.Retries != 5 || e.Limits.Concurrency != 6 {
		t.Errorf("limits %+v", e.Limits)
	}
	if e.Tokenizer != "cl100k_base" {
		t.Errorf("tokenizer %q", e.Tokenizer)
	}
	if want := filepath.Join(dir, "data", "y.jsonl"); e.Dataset.File != want || !filepath.IsAbs(e.Dataset.File) {
		t.Errorf("dataset file %q, want %q", e.Dataset.File, want)
	}

	// Without the top-level argument the spec cannot be evaluated; the error still says where.
	_, err = Compile(path, Options{ExtStr: map[string]string{"suffix": "s"}, ExtCode: map[string]string{"tok": "1"}})
	var ce *Error
	if !errors.As(err, &ce) || !strings.Contains(ce.Msg, "name") {
		t.Errorf("missing tla: %v", err)
	}

	// std.extVar of a variable that was not given is an error at the call.
	_, err = Compile(path, Options{TLAStr: map[string]string{"name": "exp"}})
	if !errors.As(err, &ce) || ce.File != path || ce.Line != 5 || !strings.Contains(ce.Msg, "suffix") {
		t.Errorf("missing ext var: %v", err)
	}
}

func TestReservedVariable(t *testing.T) {
	for _, opts := range []Options{
		{ExtStr: map[string]string{ExtVarAll: "x"}},
		{ExtCode: map[string]string{ExtVarAll: "1"}},
		{ExtStr: map[string]string{"a": "x"}, ExtCode: map[string]string{"a": "1"}},
	} {
		if _, err := Compile(demoSpec, opts); err == nil || !strings.HasPrefix(err.Error(), demoSpec+": ") {
			t.Errorf("%+v: err %v", opts, err)
		}
	}
}

func TestAbsoluteDatasetFileKept(t *testing.T) {
	abs := filepath.Join(t.TempDir(), "elsewhere", "d.jsonl")
	dir := writeFiles(t, map[string]string{"spec.jsonnet": `local ctxlab = import 'ctxlab.libsonnet';
ctxlab.experiment({ name: 'x', dataset: ctxlab.datasets.swebench(std.extVar('f'), 'https://github.com/{repo}'),
  models: [ctxlab.models.offline], methods: [ctxlab.methods.oracle_files] })`})
	e, err := Compile(filepath.Join(dir, "spec.jsonnet"), Options{ExtStr: map[string]string{"f": abs}})
	if err != nil {
		t.Fatal(err)
	}
	if e.Dataset.File != abs || e.Dataset.Repos != "https://github.com/{repo}" {
		t.Errorf("dataset %+v", e.Dataset)
	}
}

func TestLibraryIsEmbedded(t *testing.T) {
	// A file named ctxlab.libsonnet next to the spec does not replace the embedded library.
	dir := writeFiles(t, map[string]string{
		"ctxlab.libsonnet": "error 'the file on disk was used'",
		"spec.jsonnet":     "local ctxlab = import 'ctxlab.libsonnet';\nctxlab.methods.no_source",
	})
	_, err := Compile(filepath.Join(dir, "spec.jsonnet"), Options{})
	if err == nil || strings.Contains(err.Error(), "file on disk") ||
		!strings.Contains(err.Error(), `unknown field "steps"`) {
		t.Errorf("err %v, want the embedded library's method rejected as an experiment", err)
	}
	if !strings.Contains(Library(), "experiment(cfg)") {
		t.Error("Library() does not return the library")
	}
}

func TestImporter(t *testing.T) {
	dir := writeFiles(t, map[string]string{"a/b.libsonnet": "{}"})
	im := newImporter()
	c1, at1, err := im.Import(filepath.Join(dir, "a", "spec.jsonnet"), "b.libsonnet")
	if err != nil || at1 != filepath.Join(dir, "a", "b.libsonnet") {
		t.Fatalf("%v %q", err, at1)
	}
	c2, at2, _ := im.Import(filepath.Join(dir, "spec.jsonnet"), "a/b.libsonnet")
	if at2 != at1 || c1 != c2 {
		t.Error("the same file gave different contents (go-jsonnet requires the same)")
	}
	l1, lat, err := im.Import(filepath.Join(dir, "spec.jsonnet"), LibraryName)
	l2, _, _ := im.Import("", LibraryName)
	if err != nil || lat != "<ctxlab>/ctxlab.libsonnet" || l1 != l2 {
		t.Errorf("library: %v %q", err, lat)
	}
	if _, _, err := im.Import(lat, "b.libsonnet"); err == nil || !strings.Contains(err.Error(), "ctxlab library") {
		t.Errorf("the library's imports resolve inside it: %v", err)
	}
	if _, _, err := im.Import(filepath.Join(dir, "spec.jsonnet"), "nope.libsonnet"); err == nil {
		t.Error("missing file imported")
	}
}

// TestGarbageNeverPanics compiles random bytes and random mutations of the demo spec: each must give an error or
// an experiment, never a panic or a multi-line *Error.
func TestGarbageNeverPanics(t *testing.T) {
	demo, err := os.ReadFile(demoSpec)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewSource(1))
	const alphabet = "{}[]()'\":,;.+-*/%=!<>|&$\\ \n\tabcdefimnoprstuxyz0123456789"
	n := 300
	if testing.Short() {
		n = 50
	}
	for i := range n {
		var text []byte
		switch i % 3 {
		case 0:
			text = make([]byte, rng.Intn(200))
			for j := range text {
				text[j] = alphabet[rng.Intn(len(alphabet))]
			}
		case 1:
			text = make([]byte, rng.Intn(100))
			rng.Read(text)
		default:
			text = slices.Clone(demo)
			for range 1 + rng.Intn(4) {
				at := rng.Intn(len(text))
				switch rng.Intn(3) {
				case 0:
					text = slices.Delete(text, at, min(len(text), at+1+rng.Intn(8)))
				case 1:
					text = slices.Insert(text, at, alphabet[rng.Intn(len(alphabet))])
				default:
					text[at] = alphabet[rng.Intn(len(alphabet))]
				}
			}
		}
		path := filepath.Join(dir, "garbage.jsonnet")
		if err := os.WriteFile(path, text, 0o644); err != nil {
			t.Fatal(err)
		}
		compileNoPanic(t, path, text)
	}
}

func compileNoPanic(t *testing.T, path string, text []byte) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("panic %v on input %q", r, text)
		}
	}()
	e, err := Compile(path, Options{})
	if err == nil {
		if e == nil {
			t.Fatalf("no experiment and no error on %q", text)
		}
		return
	}
	var one *Error
	if !errors.As(err, &one) {
		t.Fatalf("error %T is not an *Error on %q", err, text)
	}
	var es Errors
	if !errors.As(err, &es) && strings.Contains(err.Error(), "\n") {
		t.Fatalf("a single error spans lines on %q: %s", text, err)
	}
	if strings.Contains(err.Error(), "(CRASH)") {
		t.Fatalf("go-jsonnet crashed on %q: %s", text, err)
	}
}

func FuzzCompile(f *testing.F) {
	demo, err := os.ReadFile(demoSpec)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(demo)
	f.Add([]byte("{"))
	f.Add([]byte("local ctxlab = import 'ctxlab.libsonnet'; ctxlab.experiment({})"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, text []byte) {
		path := filepath.Join(dir, "fuzz.jsonnet")
		if err := os.WriteFile(path, text, 0o644); err != nil {
			t.Fatal(err)
		}
		compileNoPanic(t, path, text)
	})
}

func TestVariableCodeErrors(t *testing.T) {
	_, err := Compile(demoSpec, Options{ExtCode: map[string]string{"model": "1 +"}})
	if err == nil || !strings.HasPrefix(err.Error(), "<extvar:model>:1:4: ") {
		t.Errorf("syntax error in ext code: %v", err)
	}
	dir := writeFiles(t, map[string]string{"spec.jsonnet": "local d = import '.';\nd\n"})
	_, err = Compile(filepath.Join(dir, "spec.jsonnet"), Options{})
	if err == nil || !strings.HasPrefix(err.Error(), filepath.Join(dir, "spec.jsonnet")+":1:11: ") ||
		!strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("importing a folder: %v", err)
	}
}

// TestLibraryDefaultsMatchSetDefaults keeps ctxlab.experiment's defaults and specs.SetDefaults the same.
func TestLibraryDefaultsMatchSetDefaults(t *testing.T) {
	fromLib := evalExperiment(t, "(import 'ctxlab.libsonnet').experiment({})")
	var fromGo specs.Experiment
	fromGo.SetDefaults()
	if !reflect.DeepEqual(fromLib, fromGo) {
		t.Errorf("library defaults %+v\n     SetDefaults %+v", fromLib, fromGo)
	}
}

// TestLibraryReadsExperimentDefaultsFromGo: ctxlab.experiment's defaults are specs.ExperimentDefaults read when the
// spec is compiled, not a copy: changing a Go default changes what the library itself yields (checked on the
// library's output, before SetDefaults could fill anything in).
func TestLibraryReadsExperimentDefaultsFromGo(t *testing.T) {
	saved := specs.ExperimentDefaults
	t.Cleanup(func() { specs.ExperimentDefaults = saved })
	specs.ExperimentDefaults.Tokenizer = "cl100k_base"
	specs.ExperimentDefaults.Grading.Timeout = specs.Duration(7 * time.Minute)
	specs.ExperimentDefaults.Limits.Concurrency = 9

	fromLib := evalExperiment(t, "(import 'ctxlab.libsonnet').experiment({ limits: { retries: 5 } })")
	want := specs.ExperimentDefaults
	want.Limits.Retries = 5 // the spec's own value wins; the defaults beside it in limits stay
	if !reflect.DeepEqual(fromLib, want) {
		t.Errorf("library yields %+v\nwant %+v", fromLib, want)
	}
}

// evalExperiment evaluates a Jsonnet snippet with the library on the path, as it is, before SetDefaults.
func evalExperiment(t *testing.T, snippet string) specs.Experiment {
	t.Helper()
	vm, err := newVM(Options{})
	if err != nil {
		t.Fatal(err)
	}
	node, err := gojsonnet.SnippetToAST("snippet", snippet)
	if err != nil {
		t.Fatal(err)
	}
	out, err := vm.Evaluate(node)
	if err != nil {
		t.Fatal(err)
	}
	var e specs.Experiment
	if err := json.Unmarshal([]byte(out), &e); err != nil {
		t.Fatal(err)
	}
	return e
}
