package specs

import (
	"fmt"
	"reflect"
	"sort"
)

// Task queues by kind of work, so a cluster can scale model callers, CPU work and test runs separately.
const (
	QueueLLM   = "llm"
	QueueCPU   = "cpu"
	QueueGrade = "grade"
)

// ActivityInfo describes an activity a step may name.
type ActivityInfo struct {
	Name string
	// Queue is the task queue kind the activity runs on.
	Queue string
	// Cheap activities take well under a second even on a large repository and need nothing a queue's workers
	// have that the workflow worker lacks: the Issue workflow runs them in process (see RunsLocally).
	Cheap bool
	// NoEndpoint, when set, reports whether a step with these params calls no endpoint (the offline model, the
	// fake compressor): such a step is as cheap as a Cheap one, and runs in process too.
	NoEndpoint func(params map[string]any) bool
	// Inputs are the input names the activity requires; Optional ones may be left out.
	Inputs   []string
	Optional []string
	// UsesModel activities get the model they run under as the "model" parameter, so that the same step under two
	// models is two nodes, and the same step under one model in two methods is one.
	UsesModel bool
	// UsesTokenizer activities get the experiment's tokenizer as the "tokenizer" parameter.
	UsesTokenizer bool
	// UsesGrading activities get the experiment's grading settings as the "grading" parameter.
	UsesGrading bool
	// Summary is one line for `starter compile` and error messages.
	Summary string
	// Params is the struct type the activity decodes a step's params into (params.go). The spec compiler decodes
	// every step's params into it strictly, so an unknown or mistyped param is a spec error, not a silent default.
	Params reflect.Type
	// Defaults, when set, is a Params value the activity starts from before decoding a step's params.
	Defaults any
	// Fields are the results row fields the activity owns: its node output's row fragment may set these and no
	// others: the activity fails, naming the instance, step and field, on any other (specs.CheckRow).
	Fields []RowField
	// ReplacesContext marks an activity whose context replaces the contexts its method's earlier steps built
	// (retrieve, compress, corrupt): before its fragment is merged into a row, every field marked Context in the
	// catalog is reset to null, so the row never describes a context the method did not patch from.
	ReplacesContext bool
}

// Catalog lists every activity a spec may use.
var Catalog = map[string]ActivityInfo{}

func register(a ActivityInfo) {
	if a.Params == nil || a.Params.Kind() != reflect.Struct {
		panic("specs: activity " + a.Name + " needs a params struct type")
	}
	if a.Defaults != nil && reflect.TypeOf(a.Defaults) != a.Params {
		panic("specs: activity " + a.Name + " has defaults of another type than its params")
	}
	if _, dup := Catalog[a.Name]; dup {
		panic("specs: activity " + a.Name + " registered twice")
	}
	if err := checkFields(a, Catalog); err != nil {
		panic("specs: " + err.Error())
	}
	Catalog[a.Name] = a
}

func init() {
	register(ActivityInfo{Name: "checkout", Queue: QueueCPU,
		Params:  reflect.TypeFor[CheckoutParams](),
		Fields:  []RowField{{Name: "repo_files", Kind: KindInt}},
		Summary: "open or clone the instance's repository and snapshot it at base_commit"})
	register(ActivityInfo{Name: "no_source", Queue: QueueCPU, Cheap: true, Inputs: []string{"checkout"}, UsesTokenizer: true,
		Params:  reflect.TypeFor[NoSourceParams](),
		Fields:  ContextStepFields,
		Summary: "context of the issue text only"})
	register(ActivityInfo{Name: "oracle_files", Queue: QueueCPU, Cheap: true, Inputs: []string{"checkout"}, UsesTokenizer: true,
		Params:  reflect.TypeFor[OracleFilesParams](),
		Fields:  ContextStepFields,
		Summary: "context of the files the gold patch edits, whole"})
	register(ActivityInfo{Name: "patch", Queue: QueueLLM, Inputs: []string{"checkout", "context"}, UsesModel: true,
		UsesTokenizer: true, NoEndpoint: offlineModel,
		Params: reflect.TypeFor[PatchParams](), Defaults: PatchDefaults,
		Fields: Fields(UsageFields, ServedFields, []RowField{
			{Name: "patch_parse_error", Kind: KindString}, // the answer's edit could not be read
			{Name: "patch_recounted", Kind: KindInt},      // hunks whose line counts were repaired
			{Name: "oracle_hunks_emitted", Kind: KindInt}, // the offline stand-in's hunks shown ...
			{Name: "oracle_hunks_total", Kind: KindInt},   // ... of the gold patch's
		}),
		Summary: "ask the model for a patch from the context"})
	register(ActivityInfo{Name: "measure", Queue: QueueCPU, Cheap: true, Inputs: []string{"checkout", "context"},
		Optional: []string{"patch"}, UsesTokenizer: true,
		Params: reflect.TypeFor[MeasureParams](),
		Fields: []RowField{
			{Name: "tokenizer", Kind: KindString}, // what counted context_tokens (and the row's budget)
			{Name: "context_tokens", Kind: KindInt}, {Name: "context_lines", Kind: KindInt},
			{Name: "rho", Kind: KindFloat}, {Name: "epsilon", Kind: KindFloat},
			{Name: "gold_line_share", Kind: KindFloat}, {Name: "gold_files_missed", Kind: KindBool},
			{Name: "patch_applied", Kind: KindBool}, {Name: "patch_empty", Kind: KindBool},
			{Name: "patch_apply_error", Kind: KindString},
		},
		Summary: "rho, epsilon, context tokens and whether the patch applies"})
	register(ActivityInfo{Name: "grade", Queue: QueueGrade, Inputs: []string{"checkout", "patch"}, UsesGrading: true,
		Params: reflect.TypeFor[GradeParams](),
		Fields: []RowField{
			{Name: "resolved", Kind: KindBool}, {Name: "grade_status", Kind: KindString},
			{Name: "grade_executor", Kind: KindString}, {Name: "grade_isolation", Kind: KindString},
			{Name: "grade_note", Kind: KindString}, {Name: "grade_error", Kind: KindString},
			{Name: "grade_build_error", Kind: KindString}, {Name: "grade_seconds", Kind: KindFloat},
			{Name: "grade_runs", Kind: KindList}, {Name: "grade_flaky", Kind: KindBool},
			{Name: "tests_failed", Kind: KindList}, {Name: "tests_missing", Kind: KindList},
			{Name: "tests_skipped", Kind: KindList},
			// Multi-SWE-bench rows only: the tests of the row's no_new_failures (they passed before the fix) that
			// failed under the model patch, set on an unresolved row when there are any ("no new failures").
			{Name: "tests_regressed", Kind: KindList},
			{Name: "patch_ref", Kind: KindString},
			{Name: "patch_apply", Kind: KindString}, {Name: "patch_apply_stage", Kind: KindString},
			{Name: "patch_hunks_shifted", Kind: KindInt}, {Name: "patch_hunks_fuzzed", Kind: KindInt},
			{Name: "patch_rejected", Kind: KindList},
			{Name: "patch_test_files_dropped", Kind: KindList}, {Name: "patch_test_files_kept", Kind: KindList},
		},
		Summary: "apply test and model patches in a fresh worktree and run FAIL_TO_PASS and PASS_TO_PASS"})
}

// ActivityNames lists the catalog's names in order, for error messages.
func ActivityNames() []string {
	names := make([]string, 0, len(Catalog))
	for n := range Catalog {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// DefaultParams returns every activity's default params in their JSON form (fields without a default are zero, and
// omitempty ones are left out), by activity name: what jsonnet/lib reads instead of keeping a copy.
func DefaultParams() (map[string]any, error) {
	out := map[string]any{}
	for name, info := range Catalog {
		v := info.Defaults
		if v == nil {
			v = reflect.New(info.Params).Elem().Interface()
		}
		p, err := toParam(v)
		if err != nil {
			return nil, fmt.Errorf("default params of %s: %w", name, err)
		}
		out[name] = p
	}
	return out, nil
}
