package specs

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// goodExperiment is a small valid experiment; tests break one thing at a time.
func goodExperiment() *Experiment {
	tail := func() []Step {
		return []Step{
			{ID: "patch", Activity: "patch", Inputs: map[string]string{"checkout": "checkout", "context": "context"}},
			{ID: "measure", Activity: "measure",
				Inputs: map[string]string{"checkout": "checkout", "context": "context", "patch": "patch"}},
			{ID: "grade", Activity: "grade", Inputs: map[string]string{"checkout": "checkout", "patch": "patch"}},
		}
	}
	method := func(name, activity string) Method {
		steps := []Step{
			{ID: "checkout", Activity: "checkout"},
			{ID: "context", Activity: activity, Inputs: map[string]string{"checkout": "checkout"}},
		}
		return Method{Name: name, Steps: append(steps, tail()...)}
	}
	e := &Experiment{
		Name:    "demo",
		Dataset: Dataset{Generate: "demo", File: "demo.jsonl"},
		Models:  []Model{{Name: "offline", Provider: "offline"}},
		Methods: []Method{method("no_source", "no_source"), method("oracle_files", "oracle_files")},
	}
	e.SetDefaults()
	return e
}

func TestSetDefaults(t *testing.T) {
	var e Experiment
	e.SetDefaults()
	if e.Tokenizer != "model" || e.Grading.Executor != "local" || e.Grading.Timeout.D() != 30*time.Minute ||
		e.Limits.Concurrency != 4 || e.Limits.Retries != 3 || e.Dataset.Repos != "{dataset_dir}/repos/{repo}" {
		t.Errorf("defaults: %+v", e)
	}
	if len(e.Models) != 0 {
		t.Errorf("SetDefaults added models: %+v", e.Models)
	}
	if e.Grading.ModelTests != "drop" || e.Grading.Tests != "files" || e.Grading.Isolation != "sandbox" {
		t.Errorf("grading defaults not written out: %+v", e.Grading)
	}

	// Values that are set stay, negative ones included (Validate rejects those).
	e = Experiment{Tokenizer: "cl100k_base", Limits: Limits{Concurrency: -1, Retries: 7},
		Grading: Grading{Timeout: Duration(time.Minute)}, Dataset: Dataset{Repos: "https://x/{repo}"}}
	e.SetDefaults()
	if e.Tokenizer != "cl100k_base" || e.Limits.Concurrency != -1 || e.Limits.Retries != 7 ||
		e.Grading.Timeout.D() != time.Minute || e.Dataset.Repos != "https://x/{repo}" {
		t.Errorf("SetDefaults overwrote set values: %+v", e)
	}
}

func TestValidateGood(t *testing.T) {
	if errs := Validate(goodExperiment()); errs != nil {
		t.Fatalf("valid experiment: %v", errs)
	}
	e := goodExperiment()
	e.Anchor = "oracle_files"
	e.Models = append(e.Models, Model{Name: "gpt", Provider: "openai", ID: "gpt-4o-mini"})
	e.Dataset = Dataset{File: "x.jsonl", Repos: "{dataset_dir}/{repo}"}
	if errs := Validate(e); errs != nil {
		t.Fatalf("valid experiment: %v", errs)
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(e *Experiment)
		path   string
		value  string
		key    bool
		occ    int
		msg    string
	}{
		{"empty name", func(e *Experiment) { e.Name = "" }, "name", "", false, 0, "name is empty"},
		{"name with slash", func(e *Experiment) { e.Name = "a/b" }, "name", "a/b", false, 0, "folder name"},
		{"name with space", func(e *Experiment) { e.Name = "a b" }, "name", "a b", false, 0, "folder name"},
		{"name dotdot", func(e *Experiment) { e.Name = ".." }, "name", "..", false, 0, "folder name"},
		{"name too long", func(e *Experiment) { e.Name = strings.Repeat("n", 300) }, "name", strings.Repeat("n", 300),
			false, 0, "300 characters long; at most 128"},
		{"no models", func(e *Experiment) { e.Models = nil }, "models", "", false, 0, "at least one"},
		{"bad provider", func(e *Experiment) { e.Models[0].Provider = "claude" }, "models[0].provider",
			"claude", false, 0, `unknown provider "claude" (known: anthropic, offline, openai, replay)`},
		{"model without name", func(e *Experiment) { e.Models[0].Name = "" }, "models[0].name", "", false, 0,
			"model name is empty"},
		{"duplicate model", func(e *Experiment) { e.Models = append(e.Models, e.Models[0]) }, "models[1].name",
			"offline", false, 1, `duplicate model name "offline"`},
		{"openai without id", func(e *Experiment) { e.Models[0] = Model{Name: "gpt", Provider: "openai"} },
			"models[0].id", "gpt", false, 0, `openai model "gpt" needs an id`},
		{"anthropic without id", func(e *Experiment) { e.Models[0] = Model{Name: "claude", Provider: "anthropic"} },
			"models[0].id", "claude", false, 0, `anthropic model "claude" needs an id`},
		{"negative cached price", func(e *Experiment) { e.Models[0].Price.CachedInput = -0.5 },
			"models[0].price.cached_input", "offline", false, 0, "price.cached_input -0.5 must be 0 or more"},
		{"bad tokenizer", func(e *Experiment) { e.Tokenizer = "gpt2" }, "tokenizer", "gpt2", false, 0,
			`unknown tokenizer "gpt2"`},
		{"no methods", func(e *Experiment) { e.Methods = nil }, "methods", "", false, 0, "at least one"},
		{"duplicate method", func(e *Experiment) { e.Methods[1].Name = "no_source" }, "methods[1].name",
			"no_source", false, 1, `duplicate method name "no_source"`},
		{"method name with dot", func(e *Experiment) { e.Methods[0].Name = "a.b" }, "methods[0].name", "a.b",
			false, 0, "must not contain"},
		{"method name with slash", func(e *Experiment) { e.Methods[0].Name = "a/b" }, "methods[0].name", "a/b",
			false, 0, "must not contain"},
		{"empty method name", func(e *Experiment) { e.Methods[0].Name = "" }, "methods[0].name", "", false, 0,
			"method name is empty"},
		{"method without steps", func(e *Experiment) { e.Methods[0].Steps = nil }, "methods[0].steps",
			"no_source", false, 0, "has no steps"},
		{"empty step id", func(e *Experiment) { e.Methods[0].Steps[4].ID = "" }, "methods[0].steps[4].id", "",
			false, 0, "step id is empty"},
		{"duplicate step id", func(e *Experiment) { e.Methods[0].Steps[4].ID = "measure" },
			"methods[0].steps[4].id", "measure", false, 1, `duplicate step id "measure" in method "no_source"`},
		{"unknown activity", func(e *Experiment) { e.Methods[1].Steps[1].Activity = "bm25" },
			"methods[1].steps[1].activity", "bm25", false, 0,
			`unknown activity "bm25" (known: ` + strings.Join(ActivityNames(), ", ") + ")"},
		{"input names missing step", func(e *Experiment) { e.Methods[0].Steps[2].Inputs["context"] = "ctx" },
			"methods[0].steps[2].inputs.context", "ctx", false, 0,
			`input context of step "patch" names missing step "ctx"`},
		{"input the activity does not take", func(e *Experiment) { e.Methods[0].Steps[1].Inputs["repo"] = "checkout" },
			"methods[0].steps[1].inputs.repo", "repo", true, 0, `activity no_source takes no input "repo" (takes: checkout)`},
		{"required input missing", func(e *Experiment) { delete(e.Methods[0].Steps[4].Inputs, "patch") },
			"methods[0].steps[4].inputs", "grade", false, 0, `step "grade" (activity grade) needs input "patch"`},
		{"cycle", func(e *Experiment) { e.Methods[0].Steps[1].Inputs["checkout"] = "patch" }, "methods[0].steps[1]",
			"context", false, 0, `method "no_source": steps form a cycle: context -> patch -> context`},
		{"self input", func(e *Experiment) { e.Methods[0].Steps[1].Inputs["checkout"] = "context" },
			"methods[0].steps[1]", "context", false, 0, "steps form a cycle: context -> context"},
		{"param the activity does not take", func(e *Experiment) {
			e.Methods[0].Steps[1].Params = map[string]any{"tokenizer": "o200k_base", "variant": 1.0}
		}, "methods[0].steps[1].params.variant", "variant", true, 0,
			`method "no_source", step "context": activity no_source takes no param "variant" (params: replica, tokenizer)`},
		{"param of an activity that takes none", func(e *Experiment) {
			e.Methods[1].Steps[0].Params = map[string]any{"depth": 1.0}
		}, "methods[1].steps[0].params.depth", "depth", true, 0,
			`method "oracle_files", step "checkout": activity checkout takes no param "depth" (params: none)`},
		{"mistyped param", func(e *Experiment) { e.Methods[0].Steps[2].Params = map[string]any{"format": 3.0} },
			"methods[0].steps[2].params.format", "format", true, 0,
			`method "no_source", step "patch": activity patch: param "format": cannot unmarshal number`},
		{"unknown field inside a param", func(e *Experiment) {
			e.Methods[0].Steps[2].Params = map[string]any{"prompt": map[string]any{"systm": "be brief"}}
		}, "methods[0].steps[2].params.prompt", "prompt", true, 0,
			`activity patch: param "prompt": unknown field "systm"`},
		{"bad executor", func(e *Experiment) { e.Grading.Executor = "k8s" }, "grading.executor", "k8s", false,
			0, `unknown grading executor "k8s" (known: local, docker)`},
		{"bad reruns", func(e *Experiment) { e.Grading.Reruns = -1 }, "grading.reruns", "", false, 0,
			"must be between 0 and 10"},
		{"negative timeout", func(e *Experiment) { e.Grading.Timeout = Duration(-time.Second) }, "grading.timeout",
			"", false, 0, "must be positive"},
		{"unknown model_tests", func(e *Experiment) { e.Grading.ModelTests = "ignore" }, "grading.model_tests",
			"ignore", false, 0, `unknown grading.model_tests "ignore" (known: drop, keep)`},
		{"unknown tests mode", func(e *Experiment) { e.Grading.Tests = "all" }, "grading.tests", "all", false, 0,
			`unknown grading.tests "all" (known: files, listed)`},
		{"test_cmd key neither language nor repo", func(e *Experiment) {
			e.Grading.TestCmd = TestCommand{By: map[string]string{"rust": "cargo test", "python": "pytest"}}
		}, "grading.test_cmd.rust", "rust", true, 0, `test_cmd key "rust" is neither a language (go, python) nor`},
		{"test_cmd key with two slashes", func(e *Experiment) {
			e.Grading.TestCmd = TestCommand{By: map[string]string{"a/b/c": "pytest"}}
		}, "grading.test_cmd.a/b/c", "a/b/c", true, 0, `test_cmd key "a/b/c" is neither`},
		{"empty test_cmd", func(e *Experiment) {
			e.Grading.TestCmd = TestCommand{By: map[string]string{"acme/calc": " "}}
		}, "grading.test_cmd.acme/calc", "", false, 0, `test_cmd for "acme/calc" is empty`},
		{"zero concurrency after defaults", func(e *Experiment) { e.Limits.Concurrency = -2 }, "limits.concurrency",
			"", false, 0, "concurrency -2 must be at least 1"},
		{"negative retries", func(e *Experiment) { e.Limits.Retries = -1 }, "limits.retries", "", false, 0,
			"retries -1 must be at least 1"},
		{"unknown anchor", func(e *Experiment) { e.Anchor = "bm25" }, "anchor", "bm25", false, 0,
			`anchor "bm25" names no method (methods: no_source, oracle_files)`},
		{"no dataset file", func(e *Experiment) { e.Dataset = Dataset{Repos: "r"} }, "dataset.file", "", false, 0,
			"dataset file is empty"},
		{"unknown generator", func(e *Experiment) { e.Dataset.Generate = "swe" }, "dataset.generate", "swe", false,
			0, `unknown generated dataset "swe"`},
		{"no repos", func(e *Experiment) { e.Dataset.Repos = "" }, "dataset.repos", "", false, 0,
			"repos template is empty"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := goodExperiment()
			c.mutate(e)
			errs := Validate(e)
			if len(errs) != 1 {
				t.Fatalf("want 1 error, got %d: %v", len(errs), errs)
			}
			v := errs[0]
			if v.Path != c.path || v.Value != c.value || v.Key != c.key || v.Occurrence != c.occ ||
				!strings.Contains(v.Msg, c.msg) {
				t.Errorf("got %+v\nwant path %q value %q key %v occurrence %d msg containing %q", *v, c.path, c.value,
					c.key, c.occ, c.msg)
			}
			if strings.Contains(v.Error(), "\n") || !strings.HasPrefix(v.Error(), c.path+": ") {
				t.Errorf("Error() = %q, want one line starting with the path", v.Error())
			}
		})
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	e := goodExperiment()
	e.Name = "bad name"
	e.Models = nil
	e.Methods[0].Steps[1].Activity = "bm25"
	e.Methods[1].Steps[2].Inputs["context"] = "nowhere"
	e.Limits.Retries = -1
	errs := Validate(e)
	var paths []string
	for _, v := range errs {
		paths = append(paths, v.Path)
	}
	want := []string{"name", "models", "methods[0].steps[1].activity", "methods[1].steps[2].inputs.context",
		"limits.retries"}
	if strings.Join(paths, " ") != strings.Join(want, " ") {
		t.Errorf("paths = %v, want %v", paths, want)
	}
}

func TestValidateNil(t *testing.T) {
	if errs := Validate(nil); len(errs) != 1 {
		t.Errorf("Validate(nil) = %v", errs)
	}
}

func TestCycleNotReportedWithMissingInput(t *testing.T) {
	// A method with a missing input gets that error alone, not a misleading cycle error too.
	e := goodExperiment()
	e.Methods[0].Steps[1].Inputs["checkout"] = "patch"
	e.Methods[0].Steps[3].Inputs["context"] = "gone"
	errs := Validate(e)
	if len(errs) != 1 || !strings.Contains(errs[0].Msg, `missing step "gone"`) {
		t.Errorf("errs = %v", errs)
	}
}

// test_cmd is a string (every instance) or an object by language and repository; each form comes back as written.
func TestTestCommandJSON(t *testing.T) {
	for _, text := range []string{`{"test_cmd":"pytest -x"}`, `{"test_cmd":{"acme/calc":"tox","python":"pytest"}}`, `{}`} {
		var g struct {
			TestCmd TestCommand `json:"test_cmd,omitzero"`
		}
		if err := json.Unmarshal([]byte(text), &g); err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		out, err := json.Marshal(g)
		if err != nil || string(out) != text {
			t.Errorf("%s came back as %s (%v)", text, out, err)
		}
	}
	var c TestCommand
	for _, bad := range []string{`["pytest"]`, `3`, `{"python": 3}`} {
		if err := json.Unmarshal([]byte(bad), &c); err == nil || !strings.Contains(err.Error(), "test_cmd must be") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

// The --test-cmd flag takes a command, or the object form as JSON (starter grade of a dataset mixing languages).
func TestTestCommandFlag(t *testing.T) {
	var c TestCommand
	if err := c.Set("python3 -m unittest -v"); err != nil || c.All != "python3 -m unittest -v" || c.By != nil {
		t.Errorf("a command: %+v, %v", c, err)
	}
	if err := c.Set(`{"python": "python3 -m unittest -v"}`); err != nil || c.All != "" ||
		c.By["python"] != "python3 -m unittest -v" || len(c.By) != 1 {
		t.Errorf("an object: %+v, %v", c, err)
	}
	if err := c.Set(`{"python": 3}`); err == nil || !strings.Contains(err.Error(), "test_cmd must be") {
		t.Errorf("a bad object: %v", err)
	}
}

// TestValidateAcceptsDeclaredParams: params every activity declares pass, promoted ones (patch's model params) and
// nulls included, so the check above is not a blanket refusal.
func TestValidateAcceptsDeclaredParams(t *testing.T) {
	e := goodExperiment()
	e.Methods[0].Steps[1].Params = map[string]any{"tokenizer": "cl100k_base"}
	e.Methods[0].Steps[2].Params = map[string]any{"format": "search_replace", "sample": 2.0, "temperature": nil,
		"prompt": map[string]any{"system": "s", "user": "u"}}
	e.Methods[0].Steps[4].Params = map[string]any{"grading": map[string]any{"timeout": "10m"}}
	if errs := Validate(e); errs != nil {
		t.Errorf("declared params refused: %v", errs)
	}
}

// TestCheckParamsTakesEveryDefault: each activity's own default params, in their JSON form, pass its check, but for
// the enumerated params without a default, which a step must set.
func TestCheckParamsTakesEveryDefault(t *testing.T) {
	required := map[string]string{"retrieve": "unit", "compress": "compressor", "corrupt": "mode"}
	defaults, err := DefaultParams()
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range defaults {
		params, ok := p.(map[string]any)
		if !ok {
			t.Errorf("%s: defaults are %T, not an object", name, p)
		}
		problems, err := CheckParams(name, params)
		if r, ok := required[name]; ok && len(problems) == 1 && problems[0].Required && problems[0].Param == r {
			continue
		}
		if err != nil || len(problems) > 0 {
			t.Errorf("%s: defaults %v: %v %v", name, params, problems, err)
		}
	}
	if _, err := CheckParams("bm25", nil); err == nil {
		t.Error("CheckParams of an unknown activity gave no error")
	}
}

// TestCheckParamsListsEveryProblem: all bad params of a step come back, in param order.
func TestCheckParamsListsEveryProblem(t *testing.T) {
	problems, err := CheckParams("assemble", map[string]any{"total_capp": 1.0, "file_cap": "big", "snippet_cap": 5.0,
		"tokenizer": "o200k_base"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range problems {
		got = append(got, p.Param)
	}
	if strings.Join(got, " ") != "file_cap total_capp" {
		t.Errorf("problems %+v, want file_cap and total_capp", problems)
	}
}
