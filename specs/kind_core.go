package specs

// The core kinds every method's row goes through: checkout, a context (no_source, oracle_files or a method's own),
// patch, measure and grade. Each step's params are declared with its kind, beside the catalog, so that the spec
// compiler checks a step's params against the very struct the activity decodes them into at run time (activities
// imports specs; specs imports nothing of ctxlab). Every field a step may set is declared: an unknown or mistyped
// param is a spec error. Params the plan injects (model, tokenizer, grading) are fields too, because a step may set
// them itself. jsonnet/lib writes the paper's defaults into specs by reading them from the catalog (the native
// function ctxlab_defaults), never from a copy.

// CheckoutParams are the checkout step's parameters: none.
type CheckoutParams struct{}

// RepoFiles is the number of files in the instance's snapshot.
var RepoFiles = IntField("repo_files")

var Checkout = Declare(Kind[CheckoutParams]{Name: "checkout", Queue: QueueCPU,
	Fields:  Rows(RepoFiles),
	Summary: "open or clone the instance's repository and snapshot it at base_commit"})

// NoSourceParams are the no_source step's parameters; Tokenizer is filled in by the plan.
type NoSourceParams struct {
	Tokenizer string `json:"tokenizer" check:"tokenizer_name"`
	// Replica tells otherwise equal steps apart, so that each runs as its own node (the orchestration benchmark
	// gives every method its own nodes this way); the output does not depend on it.
	Replica int `json:"replica,omitempty" range:"[0,)"`
}

var NoSource = Declare(Kind[NoSourceParams]{Name: "no_source", Queue: QueueCPU, Cheap: true,
	Inputs: []string{"checkout"}, UsesTokenizer: true,
	Fields:  ContextStepFields,
	Summary: "context of the issue text only"})

// OracleFilesParams are the oracle_files step's parameters; Tokenizer is filled in by the plan.
type OracleFilesParams struct {
	Tokenizer string `json:"tokenizer" check:"tokenizer_name"`
	// Replica tells otherwise equal steps apart, so that each runs as its own node (the orchestration benchmark
	// gives every method its own nodes this way); the output does not depend on it.
	Replica int `json:"replica,omitempty" range:"[0,)"`
}

var OracleFiles = Declare(Kind[OracleFilesParams]{Name: "oracle_files", Queue: QueueCPU, Cheap: true,
	Inputs: []string{"checkout"}, UsesTokenizer: true,
	Fields:  ContextStepFields,
	Summary: "context of the files the gold patch edits, whole"})

// Prompt is a chat prompt from the spec: Go text/template texts filled per instance (see each activity for the
// fields it offers). Formats holds the edit-format instructions of the patch prompt, by format name.
type Prompt struct {
	System  string            `json:"system"`
	User    string            `json:"user"`
	Formats map[string]string `json:"formats,omitempty"`
}

// ModelParams are the parameters every model-calling step has; Model and Tokenizer are filled in by the plan.
type ModelParams struct {
	Model     Model  `json:"model"`
	Tokenizer string `json:"tokenizer" check:"tokenizer_name"`
	Prompt    Prompt `json:"prompt"`
	// Sample numbers independent samples of the same prompt.
	Sample int `json:"sample" range:"[0,)"`
	// Temperature, when set, overrides the model's for this step (localization samples must differ).
	Temperature *float64 `json:"temperature,omitempty" range:"[0,2]"`
}

// offline reports whether a model step's provider answers without an endpoint (the offline stand-in, replay).
func (p ModelParams) offline() bool {
	pr, ok := ProviderOf(p.Model)
	return ok && !pr.Paid
}

// PatchParams are the patch step's parameters; Model and Tokenizer are filled in by the plan.
type PatchParams struct {
	ModelParams
	// Format is the edit format asked for.
	Format EditFormat `json:"format"`
}

// EditFormat is the form a model writes its edit in (the patch step's format, the agent's edit_format).
type EditFormat string

const (
	EditDiff EditFormat = "diff" // a unified diff
	// EditSearchReplace is SEARCH/REPLACE blocks, turned into a diff against the real file text.
	EditSearchReplace EditFormat = "search_replace"
)

// Values are the edit formats (Enum).
func (EditFormat) Values() []string { return names(EditDiff, EditSearchReplace) }

// PatchDefaults are the patch step's defaults.
var PatchDefaults = PatchParams{Format: EditDiff}

// The offline stand-in's hunks of the gold patch shown, of all its hunks.
var (
	OracleHunksEmitted = IntField("oracle_hunks_emitted")
	OracleHunksTotal   = IntField("oracle_hunks_total")
)

var Patch = Declare(Kind[PatchParams]{Name: "patch", Queue: QueueLLM, Inputs: []string{"checkout", "context"},
	UsesModel: true, UsesTokenizer: true, NoEndpoint: func(p PatchParams) bool { return p.offline() },
	Defaults: PatchDefaults, Task: "patch",
	Fields:  Fields(UsageFields, ServedFields, Rows(PatchParseError, PatchRecounted, OracleHunksEmitted, OracleHunksTotal)),
	Summary: "ask the model for a patch from the context"})

// MeasureParams are the measure step's parameters; Tokenizer is filled in by the plan.
type MeasureParams struct {
	Tokenizer string `json:"tokenizer" check:"tokenizer_name"`
}

// Measure's row fields.
var (
	// Tokenizer is what counted context_tokens (and the row's budget).
	Tokenizer     = StringField("tokenizer")
	ContextTokens = IntField("context_tokens").Required().Shown(Presentation{
		Feature: &Feature{Order: 4, Name: "log_tokens", Log1p: true},
		Columns: []Column{
			{Table: SummaryTable, Order: 7, Head: "mean tokens", Stat: Mean, Format: "%.0f",
				Legend: "tokens: repository text in the context"},
			{Table: MethodsTable, Order: 6, Head: "tokens mean", Stat: Mean, Format: "%.0f"},
			{Table: MethodsTable, Order: 7, Head: "tokens median", Stat: Median, Format: "%.0f"},
			{Table: PairsTable, Order: 3, Head: "tokens", Format: "%.0f"},
			{Table: RowTable, Order: 4, Head: "tokens", Format: "%.0f"}}})
	ContextLines = IntField("context_lines")
	// Rho is the share of the gold files the context shows.
	Rho = FloatField("rho").Required().Shown(Presentation{Feature: &Feature{Order: 1}, Columns: []Column{
		{Table: SummaryTable, Order: 3, Head: "mean rho", Stat: Mean, Format: "%.3f",
			Legend: "rho: share of gold files shown"},
		{Table: MethodsTable, Order: 2, Head: "mean rho", Stat: Mean, Format: "%.3f"},
		{Table: MethodsTable, Order: 5, Head: "no gold shown %", Stat: PctZero, Format: "%.1f"},
		{Table: PairsTable, Order: 1, Format: "%.3f"},
		{Table: RowTable, Order: 2, Format: "%.3f"}}})
	// Epsilon is the share of the context's lines found verbatim in their file.
	Epsilon = FloatField("epsilon").Required().Shown(Presentation{Feature: &Feature{Order: 2}, Columns: []Column{
		{Table: SummaryTable, Order: 4, Head: "mean epsilon", Stat: Mean, Format: "%.3f",
			Legend: "epsilon: share of shown lines found verbatim in their file"},
		{Table: MethodsTable, Order: 3, Head: "mean epsilon", Stat: Mean, Format: "%.3f"},
		{Table: PairsTable, Order: 2, Format: "%.3f"},
		{Table: RowTable, Order: 3, Format: "%.3f"}}})
	// GoldLineShare is the share of the context's lines in gold files.
	GoldLineShare = FloatField("gold_line_share").Shown(Presentation{Feature: &Feature{Order: 3}, Columns: []Column{
		{Table: MethodsTable, Order: 4, Head: "gold-line share", Stat: Mean, Format: "%.3f"}}})
	GoldFilesMissed = BoolField("gold_files_missed")
	// Line-level context truth (docs/methods.md): recall and precision of the context against the gold patch's
	// files (file recall is rho), the lines it deletes or replaces, and their enclosing functions or blocks.
	FilePrecision = FloatField("file_precision").Shown(Presentation{Columns: []Column{
		{Table: MethodsTable, Order: 15, Head: "file precision", Stat: Mean, Format: "%.3f"}}})
	BlockRecall = FloatField("block_recall").Shown(Presentation{Columns: []Column{
		{Table: MethodsTable, Order: 13, Head: "block recall", Stat: Mean, Format: "%.3f"}}})
	BlockPrecision = FloatField("block_precision").Shown(Presentation{Columns: []Column{
		{Table: MethodsTable, Order: 14, Head: "block precision", Stat: Mean, Format: "%.3f"}}})
	LineRecall = FloatField("line_recall").Shown(Presentation{Feature: &Feature{Order: 5}, Columns: []Column{
		{Table: SummaryTable, Order: 5, Head: "mean line recall", Stat: Mean, Format: "%.3f",
			Legend: "line recall: share of the lines the gold patch changes shown verbatim"},
		{Table: MethodsTable, Order: 11, Head: "line recall", Stat: Mean, Format: "%.3f"},
		{Table: PairsTable, Order: 4, Head: "line recall", Format: "%.3f"},
		{Table: RowTable, Order: 5, Head: "line recall", Format: "%.3f"}}})
	LinePrecision = FloatField("line_precision").Shown(Presentation{Columns: []Column{
		{Table: MethodsTable, Order: 12, Head: "line precision", Stat: Mean, Format: "%.3f"}}})
	// GoldLines and GoldBlockLines are line and block recall's denominators.
	GoldLines      = IntField("gold_lines")
	GoldBlockLines = IntField("gold_block_lines")
	// PatchApplied says whether the patch applies strictly (git apply).
	PatchApplied = BoolField("patch_applied").Required().Shown(Presentation{Columns: []Column{
		{Table: SummaryTable, Order: 2, Head: "applied %", Stat: PctOfRows, Format: "%.1f"},
		{Table: MethodsTable, Order: 1, Head: "applied %", Stat: PctOfRowsIfAny, Format: "%.1f"},
		{Table: RowTable, Order: 1, Head: "applied"}}})
	PatchEmpty      = BoolField("patch_empty")
	PatchApplyError = StringField("patch_apply_error")
)

var Measure = Declare(Kind[MeasureParams]{Name: "measure", Queue: QueueCPU, Cheap: true,
	Inputs: []string{"checkout", "context"}, Optional: []string{"patch"}, UsesTokenizer: true,
	// v3: a measure's row carries the line-level truth, so a memo of v2 measures again (cheap).
	CodeVersion: "ctxlab-measure-v3",
	Fields: Rows(Tokenizer, ContextTokens, ContextLines, Rho, Epsilon, GoldLineShare, GoldFilesMissed,
		FilePrecision, BlockRecall, BlockPrecision, LineRecall, LinePrecision, GoldLines, GoldBlockLines,
		PatchApplied, PatchEmpty, PatchApplyError),
	Summary: "rho, epsilon, line-level truth, context tokens and whether the patch applies"})

// GradeParams are the grade step's parameters; Grading is filled in by the plan.
type GradeParams struct {
	Grading Grading `json:"grading"`
}

// Grade's row fields.
var (
	Resolved = BoolField("resolved").Required().Shown(Presentation{Columns: []Column{
		{Table: SummaryTable, Order: 1, Head: "resolved %", Stat: PctOfRows, Format: "%.1f"}}})
	GradeStatus     = StringField("grade_status")
	GradeExecutor   = StringField("grade_executor")
	GradeIsolation  = StringField("grade_isolation")
	GradeNote       = StringField("grade_note")
	GradeError      = StringField("grade_error")
	GradeBuildError = StringField("grade_build_error")
	GradeSeconds    = FloatField("grade_seconds")
	// GradeExitCode is the test command's exit code as the runner's own code recorded it (never read from the
	// output), where one is known: SWE-bench 5.0's exit-code rule reads it.
	GradeExitCode = IntField("grade_exit_code")
	GradeRuns     = ListField("grade_runs")
	GradeFlaky    = BoolField("grade_flaky")
	TestsFailed   = ListField("tests_failed")
	TestsMissing  = ListField("tests_missing")
	TestsSkipped  = ListField("tests_skipped")
	// Multi-SWE-bench rows only: the tests of the row's no_new_failures (they passed before the fix) that failed
	// under the model patch, set on an unresolved row when there are any ("no new failures").
	TestsRegressed        = ListField("tests_regressed")
	PatchRef              = StringField("patch_ref")
	PatchApply            = StringField("patch_apply")
	PatchApplyStage       = StringField("patch_apply_stage")
	PatchHunksShifted     = IntField("patch_hunks_shifted")
	PatchHunksFuzzed      = IntField("patch_hunks_fuzzed")
	PatchRejected         = ListField("patch_rejected")
	PatchTestFilesDropped = ListField("patch_test_files_dropped")
	PatchTestFilesKept    = ListField("patch_test_files_kept")
)

var Grade = Declare(Kind[GradeParams]{Name: "grade", Queue: QueueGrade, Inputs: []string{"checkout", "patch"},
	UsesGrading: true,
	// A grade's outcome depends on the grader's code (the harness's test commands and log parsers): this version
	// starts every grade memo key too (activities/steps' gradeMemoKey), so bumping it grades again, also where a
	// grade step's own memo would have answered.
	CodeVersion: "ctxlab-grade-v3",
	Fields: Rows(Resolved, GradeStatus, GradeExecutor, GradeIsolation, GradeNote, GradeError, GradeBuildError,
		GradeSeconds, GradeExitCode, GradeRuns, GradeFlaky, TestsFailed, TestsMissing, TestsSkipped, TestsRegressed, PatchRef,
		PatchApply, PatchApplyStage, PatchHunksShifted, PatchHunksFuzzed, PatchRejected, PatchTestFilesDropped,
		PatchTestFilesKept),
	Summary: "apply test and model patches in a fresh worktree and run FAIL_TO_PASS and PASS_TO_PASS"})
