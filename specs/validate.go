package specs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"
)

// Defaults that SetDefaults fills in (ExperimentDefaults holds them as an experiment).
const (
	// DefaultExperimentTokenizer counts each model's budgets in that model's own tokenizer (ResolveTokenizer).
	DefaultExperimentTokenizer = TokenizerModel
	DefaultExecutor            = "local"
	DefaultTimeout             = 30 * time.Minute
	DefaultConcurrency         = 4
	DefaultRetries             = 3
	DefaultRepos               = "{dataset_dir}/repos/{repo}"
)

// Defaults of grading.model_tests, grading.tests and grading.isolation. SetDefaults writes them into the compiled
// spec: a sweep graded before they existed ran the model's test files unconfined, so its grades must not be reused
// by a sweep that runs under them (the spec hash changes; patches and every other node are still reused).
const (
	DefaultModelTests = "drop"
	DefaultTests      = "files"
	DefaultIsolation  = "sandbox"
)

// Allowed values of the enumerated fields, in the order error messages list them.
var (
	Tokenizers = append(append([]string{TokenizerModel}, Encodings...), TokenizerEndpoint)
	Executors  = []string{"local", "docker"}
	Generators = []string{"demo"}
	ModelTests = []string{"drop", "keep"}
	TestModes  = []string{"files", "listed"}
	Isolations = []string{"sandbox", "none"}
)

// ExperimentDefaults are the values SetDefaults fills in, kept once: jsonnet/lib/ctxlab.libsonnet's
// ctxlab.experiment writes them into every spec (so that a compiled spec is explicit) by reading DefaultsJSON through
// the native function ctxlab_experiment_defaults, never from a copy. Zero fields have no default. Keep maps, slices
// and pointers out: SetDefaults copies these values by assignment.
var ExperimentDefaults = Experiment{
	Tokenizer: DefaultExperimentTokenizer,
	Dataset:   Dataset{Repos: DefaultRepos},
	Grading: Grading{Executor: DefaultExecutor, Timeout: Duration(DefaultTimeout), ModelTests: DefaultModelTests,
		Tests: DefaultTests, Isolation: DefaultIsolation},
	Limits: Limits{Concurrency: DefaultConcurrency, Retries: DefaultRetries},
}

// SetDefaults fills the fields a spec may leave out from ExperimentDefaults. Zero means "not set": a zero
// concurrency becomes DefaultConcurrency, while a negative one is left for Validate to reject. Models have no
// default: an experiment must name at least one.
func (e *Experiment) SetDefaults() {
	fillZero(reflect.ValueOf(e).Elem(), reflect.ValueOf(ExperimentDefaults))
}

// fillZero sets each zero field of dst, a struct, to the same field of def, descending into nested structs.
func fillZero(dst, def reflect.Value) {
	for i := range dst.NumField() {
		d, v := dst.Field(i), def.Field(i)
		switch {
		case !d.CanSet() || v.IsZero():
		case d.Kind() == reflect.Struct:
			fillZero(d, v)
		case d.IsZero():
			d.Set(v)
		}
	}
}

// DefaultsJSON returns ExperimentDefaults in their JSON form with the fields that have no default left out: what
// ctxlab.experiment merges a spec onto.
func DefaultsJSON() (map[string]any, error) {
	v, err := toParam(ExperimentDefaults)
	if err != nil {
		return nil, fmt.Errorf("experiment defaults: %w", err)
	}
	obj, _ := dropZero(v).(map[string]any)
	return obj, nil
}

// dropZero removes the zero values ("", 0, false, null and objects left empty) from a decoded JSON value.
func dropZero(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			if e = dropZero(e); e != nil {
				out[k] = e
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case string:
		if x == "" {
			return nil
		}
	case float64:
		if x == 0 {
			return nil
		}
	case bool:
		if !x {
			return nil
		}
	case []any:
		if len(x) == 0 {
			return nil
		}
	}
	return v
}

// ValidationError is one problem with an experiment, in one line.
type ValidationError struct {
	// Path is where in the compiled experiment the problem is, such as "methods[2].steps[1].activity".
	Path string
	// Value is the offending literal as the spec wrote it (an activity name, a step id), so that a compiler can find
	// the line that wrote it. Empty when there is no such literal (a missing field).
	Value string
	// Key says Value is an object field name (an unknown field, an input name) rather than a string value.
	Key bool
	// Occurrence says which of several equal literals is meant: 0 the first, 1 the second (a duplicate name).
	Occurrence int
	// Number says Value is a number literal (in Go's shortest form), such as a param out of its range.
	Number bool
	// Msg says what is wrong.
	Msg string
}

func (v *ValidationError) Error() string {
	if v.Path == "" {
		return v.Msg
	}
	return v.Path + ": " + v.Msg
}

// Validate checks an experiment (after SetDefaults) and returns every problem it finds, in the order of the fields,
// or nil when there is none.
func Validate(e *Experiment) []*ValidationError {
	if e == nil {
		return []*ValidationError{{Msg: "no experiment"}}
	}
	v := &problems{}
	v.name(e)
	v.dataset(e.Dataset)
	v.models(e)
	methodSeen := v.methods(e.Methods)
	v.samples(e)
	v.grading(e.Grading)
	v.limits(e.Limits)
	if e.Anchor != "" && methodSeen[e.Anchor] == 0 {
		names := make([]string, 0, len(e.Methods))
		for _, m := range e.Methods {
			names = append(names, m.Name)
		}
		v.add("anchor", e.Anchor, "anchor %q names no method (methods: %s)", e.Anchor, list(names))
	}
	if e.Debug.SlowActivities < 0 {
		v.add("debug.slow_activities", "", "slow_activities %s is negative", e.Debug.SlowActivities.D())
	}
	return v.errs
}

// problems collects what Validate finds, in order.
type problems struct{ errs []*ValidationError }

func (v *problems) add(path, value, format string, args ...any) *ValidationError {
	p := &ValidationError{Path: path, Value: value, Msg: fmt.Sprintf(format, args...)}
	v.errs = append(v.errs, p)
	return p
}

// name checks the experiment's name, which names its run folder.
func (v *problems) name(e *Experiment) {
	switch {
	case e.Name == "":
		v.add("name", "", "experiment name is empty")
	case !folderName(e.Name):
		v.add("name", e.Name, "experiment name %q must be a folder name: letters, digits, '-', '_' and '.'", e.Name)
	case len(e.Name) > MaxNameLen:
		v.add("name", e.Name, "experiment name is %d characters long; at most %d (it names the run folder and is "+
			"part of every workflow id of the sweep)", len(e.Name), MaxNameLen)
	}
}

// dataset checks where the instances come from.
func (v *problems) dataset(d Dataset) {
	if d.File == "" && d.Generate == "" {
		v.add("dataset.file", "", "dataset file is empty (name a JSONL file, or set generate)")
	}
	if d.Generate != "" && !slices.Contains(Generators, d.Generate) {
		v.add("dataset.generate", d.Generate, "unknown generated dataset %q (known: %s)", d.Generate, list(Generators))
	}
	if d.Repos == "" {
		v.add("dataset.repos", "", "dataset repos template is empty")
	}
	if d.Limit < 0 {
		v.add("dataset.limit", "", "dataset limit %d is negative", d.Limit)
	}
}

// models checks the models, their names once each, and the experiment's tokenizer.
func (v *problems) models(e *Experiment) {
	if len(e.Models) == 0 {
		v.add("models", "", "no models: an experiment needs at least one")
	}
	modelSeen := map[string]int{}
	for i, m := range e.Models {
		p := fmt.Sprintf("models[%d]", i)
		if m.Name == "" {
			v.add(p+".name", "", "model name is empty")
		} else {
			if n := modelSeen[m.Name]; n > 0 {
				v.add(p+".name", m.Name, "duplicate model name %q", m.Name).Occurrence = n
			}
			modelSeen[m.Name]++
		}
		v.model(p, e, m)
	}
	if !slices.Contains(Tokenizers, e.Tokenizer) {
		v.add("tokenizer", e.Tokenizer, "unknown tokenizer %q (known: %s)", e.Tokenizer, list(Tokenizers))
	}
}

// model checks one model's provider, id, limits, tokenizer and prices.
func (v *problems) model(p string, e *Experiment, m Model) {
	pr, known := ProviderOf(m)
	if !known {
		v.add(p+".provider", m.Provider, "unknown provider %q (known: %s)", m.Provider, list(ProviderNames()))
	}
	if pr.NeedsID && m.ID == "" {
		v.add(p+".id", m.Name, "%s model %q needs an id", m.Provider, m.Name)
	}
	if pr.Validate != nil {
		if field, problem := pr.Validate(m); problem != "" {
			v.add(p+"."+field, m.Name, "%s", problem)
		}
	} else if m.Replays != "" {
		v.add(p+".replays", m.Name, "model %q: replays is only for a %s model (its provider is %s)", m.Name,
			Replay.Name, m.Provider)
	}
	if m.MaxTokens < 0 {
		v.add(p+".max_tokens", "", "max_tokens %d is negative", m.MaxTokens)
	}
	if m.Tokenizer != "" && !slices.Contains(ModelTokenizers, m.Tokenizer) {
		v.add(p+".tokenizer", m.Tokenizer, "model %q: unknown tokenizer %q (known: %s)", m.Name, m.Tokenizer,
			list(ModelTokenizers))
	}
	if known && pr.Counting.Scheme == "" && strings.HasPrefix(ResolveTokenizer(e, m), TokenizerEndpoint+":") {
		v.add(p+".tokenizer", m.Name, "model %q: tokenizer %q needs a server that tokenizes (%s); provider %q "+
			"has none", m.Name, TokenizerEndpoint, countingProviders(), m.Provider)
	}
	// A negative price would be negative spend, and a negative reservation: calls past the cap.
	for _, pr := range []struct {
		name string
		v    float64
	}{{"input", m.Price.Input}, {"output", m.Price.Output}, {"cached_input", m.Price.CachedInput},
		{"cache_write", m.Price.CacheWrite}} {
		if pr.v < 0 || math.IsNaN(pr.v) || math.IsInf(pr.v, 0) {
			v.add(p+".price."+pr.name, m.Name, "price.%s %v must be 0 or more dollars per million tokens", pr.name, pr.v)
		}
	}
}

// methods checks each method's name and steps; it returns how often each name occurs.
func (v *problems) methods(methods []Method) map[string]int {
	if len(methods) == 0 {
		v.add("methods", "", "no methods: an experiment needs at least one")
	}
	methodSeen := map[string]int{}
	for i, m := range methods {
		p := fmt.Sprintf("methods[%d]", i)
		switch {
		case m.Name == "":
			v.add(p+".name", "", "method name is empty")
		case strings.ContainsAny(m.Name, "/."):
			v.add(p+".name", m.Name, "method name %q must not contain '/' or '.'", m.Name)
		}
		if m.Name != "" {
			if n := methodSeen[m.Name]; n > 0 {
				v.add(p+".name", m.Name, "duplicate method name %q", m.Name).Occurrence = n
			}
			methodSeen[m.Name]++
		}
		v.errs = append(v.errs, validateSteps(p, m)...)
	}
	return methodSeen
}

// samples checks the patch samples: 0 to MaxSamples, and a method of more than one sample has exactly one patch
// step to draw them from.
func (v *problems) samples(e *Experiment) {
	if e.Samples < 0 || e.Samples > MaxSamples {
		v.add("samples", "", "samples %d must be from 1 to %d (0: one)", e.Samples, MaxSamples)
	}
	for i, m := range e.Methods {
		p := fmt.Sprintf("methods[%d].samples", i)
		if m.Samples < 0 || m.Samples > MaxSamples {
			v.add(p, m.Name, "method %q: samples %d must be from 1 to %d (0: the experiment's)", m.Name, m.Samples,
				MaxSamples)
			continue
		}
		patches := 0
		for _, s := range m.Steps {
			if s.Activity == Patch.Name {
				patches++
			}
		}
		if k := SamplesOf(e, m); k > 1 && patches != 1 {
			v.add(p, m.Name, "method %q draws %d patch samples but has %d %s steps (samples need exactly one; "+
				"set samples: 1 on the method to keep it to one)", m.Name, k, patches, Patch.Name)
		}
	}
}

// grading checks how patches are graded.
func (v *problems) grading(g Grading) {
	if !slices.Contains(Executors, g.Executor) {
		v.add("grading.executor", g.Executor, "unknown grading executor %q (known: %s)", g.Executor,
			list(Executors))
	}
	if g.Reruns < 0 || g.Reruns > 10 {
		v.add("grading.reruns", "", "grading reruns %d must be between 0 and 10", g.Reruns)
	}
	if g.Timeout <= 0 {
		v.add("grading.timeout", "", "grading timeout %s must be positive", g.Timeout.D())
	}
	if g.ModelTests != "" && !slices.Contains(ModelTests, g.ModelTests) {
		v.add("grading.model_tests", g.ModelTests, "unknown grading.model_tests %q (known: %s)", g.ModelTests,
			list(ModelTests))
	}
	if g.Isolation != "" && !slices.Contains(Isolations, g.Isolation) {
		v.add("grading.isolation", g.Isolation, "unknown grading.isolation %q (known: %s)", g.Isolation, list(Isolations))
	}
	if g.Tests != "" && !slices.Contains(TestModes, g.Tests) {
		v.add("grading.tests", g.Tests, "unknown grading.tests %q (known: %s)", g.Tests, list(TestModes))
	}
	if raw := bytes.TrimSpace(g.InstallConfig); len(raw) > 0 && string(raw) != "null" {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil {
			v.add("grading.install_config", "", "grading.install_config must be an object (a SWE-rebench "+
				"install_config: test_cmd, log_parser, eval_commands, install, ...), got %.60s", raw)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(g.TestCmd.By)) {
		owner, name, isRepo := strings.Cut(k, "/")
		if !slices.Contains(TestCmdLanguages, k) && (!isRepo || owner == "" || name == "" || strings.Contains(name, "/")) {
			v.add("grading.test_cmd."+k, k, "test_cmd key %q is neither a language (%s) nor a repository \"owner/name\"",
				k, list(TestCmdLanguages)).Key = true
		}
		if strings.TrimSpace(g.TestCmd.By[k]) == "" {
			v.add("grading.test_cmd."+k, "", "test_cmd for %q is empty", k)
		}
	}
}

// limits checks concurrency, retries, queues, the spend cap and the providers' limits.
func (v *problems) limits(l Limits) {
	if l.Concurrency < 1 {
		v.add("limits.concurrency", "", "concurrency %d must be at least 1", l.Concurrency)
	}
	if l.Retries < 1 {
		v.add("limits.retries", "", "retries %d must be at least 1", l.Retries)
	}
	v.errs = append(v.errs, validateQueues(l.Queues)...)
	if l.SpendUSD < 0 || math.IsNaN(l.SpendUSD) {
		v.add("limits.spend_usd", "", "spend cap %v must be positive, or 0 for none", l.SpendUSD)
	}
	for _, name := range slices.Sorted(maps.Keys(l.Providers)) {
		pl := l.Providers[name]
		if p, ok := Providers[name]; !ok || !p.Paid {
			v.add("limits.providers."+name, "", "no paid provider is named %q: limits bound the calls of %s",
				name, list(paidProviders()))
		}
		if pl.RPS < 0 || math.IsNaN(pl.RPS) {
			v.add("limits.providers."+name+".rps", "", "rps %v must be positive, or 0 for unlimited", pl.RPS)
		}
		if pl.InFlight < 0 {
			v.add("limits.providers."+name+".in_flight", "", "in_flight %d must be positive, or 0 for unlimited", pl.InFlight)
		}
	}
}

// validateSteps checks one method's steps: ids, activities, inputs and params against the catalog, and cycles.
func validateSteps(p string, m Method) []*ValidationError {
	var errs []*ValidationError
	add := func(path, value, format string, args ...any) *ValidationError {
		v := &ValidationError{Path: path, Value: value, Msg: fmt.Sprintf(format, args...)}
		errs = append(errs, v)
		return v
	}
	if len(m.Steps) == 0 {
		add(p+".steps", m.Name, "method %q has no steps", m.Name)
		return errs
	}
	ids := map[string]int{}
	var idList []string
	for _, s := range m.Steps {
		if s.ID != "" && ids[s.ID] == 0 {
			idList = append(idList, s.ID)
		}
		ids[s.ID]++
	}
	// Cycles are only looked for in a method whose steps are otherwise well formed: TopoOrder stops at the first
	// missing input, and duplicate ids make "the step named x" ambiguous.
	wellFormed := true
	seen := map[string]int{}
	for j, s := range m.Steps {
		sp := fmt.Sprintf("%s.steps[%d]", p, j)
		if s.ID == "" {
			add(sp+".id", "", "step id is empty")
			wellFormed = false
		} else {
			if n := seen[s.ID]; n > 0 {
				add(sp+".id", s.ID, "duplicate step id %q in method %q", s.ID, m.Name).Occurrence = n
				wellFormed = false
			}
			seen[s.ID]++
		}
		info, known := Catalog[s.Activity]
		switch {
		case s.Activity == "":
			add(sp+".activity", s.ID, "step %q has no activity (known: %s)", s.ID, list(ActivityNames()))
		case !known:
			add(sp+".activity", s.Activity, "unknown activity %q (known: %s)", s.Activity, list(ActivityNames()))
		}
		for _, name := range slices.Sorted(maps.Keys(s.Inputs)) {
			from := s.Inputs[name]
			if known && !slices.Contains(info.Inputs, name) && !slices.Contains(info.Optional, name) {
				v := add(sp+".inputs."+name, name, "activity %s takes no input %q (takes: %s)", s.Activity, name,
					list(append(append([]string{}, info.Inputs...), info.Optional...)))
				v.Key = true
			}
			if ids[from] == 0 {
				add(sp+".inputs."+name, from, "input %s of step %q names missing step %q (steps: %s)", name, s.ID,
					from, list(idList))
				wellFormed = false
			}
		}
		if known {
			errs = append(errs, validateStepParams(sp, m.Name, s, info)...)
		}
	}
	if wellFormed {
		errs = append(errs, validateAcyclic(p, m)...)
	}
	return errs
}

// validateStepParams checks a step of a known activity: its params against the kind's, and its required inputs.
func validateStepParams(sp, method string, s Step, info ActivityInfo) []*ValidationError {
	v := &problems{}
	// Every problem has a literal to point at: the param's name.
	problems, _ := CheckParams(s.Activity, s.Params)
	for _, pp := range problems {
		if pp.Required {
			// Left out: the step is the literal to point at.
			v.add(sp+".params."+pp.Param, s.ID, "method %q, step %q: %s", method, s.ID, pp.Msg)
			continue
		}
		p := v.add(sp+".params."+pp.Param, pp.Param, "method %q, step %q: %s", method, s.ID, pp.Msg)
		// A value outside its declaration is pointed at by the value, else by the param's name.
		p.Key = pp.Value == ""
		if !p.Key {
			p.Value, p.Number = pp.Value, pp.Number
		}
	}
	for _, name := range info.Inputs {
		if _, ok := s.Inputs[name]; !ok {
			v.add(sp+".inputs", s.ID, "step %q (activity %s) needs input %q", s.ID, s.Activity, name)
		}
	}
	return v.errs
}

// validateAcyclic reports a cycle among a well-formed method's steps, at the step it starts from.
func validateAcyclic(p string, m Method) []*ValidationError {
	_, err := TopoOrder(m)
	if err == nil {
		return nil
	}
	v := &problems{}
	var cycle *CycleError
	if errors.As(err, &cycle) && len(cycle.Steps) > 0 {
		j := slices.IndexFunc(m.Steps, func(s Step) bool { return s.ID == cycle.Steps[0] })
		v.add(fmt.Sprintf("%s.steps[%d]", p, j), cycle.Steps[0], "method %q: steps form a cycle: %s", m.Name,
			strings.Join(cycle.Steps, " -> "))
	} else {
		v.add(p+".steps", m.Name, "%v", err)
	}
	return v.errs
}

// MaxNameLen bounds an experiment's name: a file name may have 255 bytes, and an Issue's workflow id (issue/NAME/ID,
// with an Agent child's suffix) must stay under Temporal's 1,000.
const MaxNameLen = 128

// folderName reports whether s is safe as a single folder name on every platform ctxlab runs on.
func folderName(s string) bool {
	if s == "." || s == ".." {
		return false
	}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
		default:
			return false
		}
	}
	return true
}

func list(names []string) string { return strings.Join(names, ", ") }

// ParamProblem is one param a step sets that its activity's params struct does not take, or a value it cannot hold.
type ParamProblem struct {
	Param string // the param's name
	Msg   string // what is wrong, naming the activity and the param
	// Value is the offending value as a spec writes it, for a value outside its declared set or range ("" for an
	// unknown or mistyped param, or a required one left out); Number says it is a number.
	Value  string
	Number bool
	// Required says the param has no default and the step leaves it out.
	Required bool
}

// CheckParams checks a step's params against its activity's params struct (Catalog) as strictly as the activity
// decodes them: every param the struct lacks and every value of the wrong type is a problem, in param order. Validate
// reports them at compile time; the activities check the same at run time, for plans built another way.
func CheckParams(activity string, params map[string]any) ([]ParamProblem, error) {
	info, ok := Catalog[activity]
	if !ok {
		return nil, fmt.Errorf("unknown activity %q", activity)
	}
	fields := JSONFields(info.Params)
	var problems []ParamProblem
	for _, name := range slices.Sorted(maps.Keys(params)) {
		f, ok := fields[name]
		if !ok {
			takes := "none"
			if len(fields) > 0 {
				takes = list(slices.Sorted(maps.Keys(fields)))
			}
			problems = append(problems, ParamProblem{Param: name,
				Msg: fmt.Sprintf("activity %s takes no param %q (params: %s)", activity, name, takes)})
			continue
		}
		if err := decodeStrict(params[name], reflect.New(f.Type).Interface()); err != nil {
			problems = append(problems, ParamProblem{Param: name,
				Msg: fmt.Sprintf("activity %s: param %q: %s", activity, name, strings.TrimPrefix(err.Error(), "json: "))})
		}
	}
	if len(problems) > 0 {
		return problems, nil
	}
	// Every param is of its type: their values (and the defaults of those left out) against their declarations.
	decoded, err := decodeParams(info.Params, info.Defaults, params)
	if err != nil {
		return []ParamProblem{{Msg: fmt.Sprintf("activity %s: %v", activity, err)}}, nil
	}
	return checkValues(activity, decoded, true), nil
}

// decodeStrict decodes v, a JSON value as encoding/json decodes it into any, into out, refusing unknown fields of
// nested objects too.
func decodeStrict(v any, out any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(out)
}

// JSONFields maps the JSON names of a struct's fields to the fields, as encoding/json sees them: untagged embedded
// structs' fields are promoted, and the outer struct's own fields win over promoted ones.
func JSONFields(t reflect.Type) map[string]reflect.StructField {
	out := map[string]reflect.StructField{}
	var embedded []reflect.Type
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			embedded = append(embedded, f.Type)
			continue
		}
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f
	}
	for _, et := range embedded {
		for name, f := range JSONFields(et) {
			if _, own := out[name]; !own {
				out[name] = f
			}
		}
	}
	return out
}
