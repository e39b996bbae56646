package specs

// CQ2-CARE's kinds (PAPER.md, Algorithm 1); jsonnet/lib/cq2care.libsonnet puts them together.

// InventoryParams are the inventory step's parameters: tau = ratio · min(tokens of all paths, cap).
type InventoryParams struct {
	Tokenizer string  `json:"tokenizer" check:"tokenizer_name"`
	Ratio     float64 `json:"ratio" range:"(0,1]"`
	Cap       int     `json:"cap" range:"[1,)"`
}

// InventoryDefaults are Algorithm 1's: tau = 1/2 · min(|P| in tokens, 32K).
var InventoryDefaults = InventoryParams{Tokenizer: FallbackTokenizer, Ratio: 0.5, Cap: 32000}

// The inventory's paths kept and their tokens.
var (
	InventoryPaths  = IntField("inventory_paths")
	InventoryTokens = IntField("inventory_tokens")
)

var Inventory = Declare(Kind[InventoryParams]{Name: "inventory", Queue: QueueCPU, Inputs: []string{"checkout"},
	UsesTokenizer: true, Defaults: InventoryDefaults,
	Fields:  Rows(InventoryPaths, InventoryTokens),
	Summary: "rank repository paths by words shared with the issue; keep the best within tau tokens, alphabetically"})

// LocalizeParams are one localization sample's parameters.
type LocalizeParams struct {
	ModelParams
	// MaxFiles is how many paths the prompt asks for at most.
	MaxFiles int `json:"max_files" range:"[1,)"`
}

// LocalizeDefaults are the localization samples' defaults.
var LocalizeDefaults = LocalizeParams{MaxFiles: 5}

var Localize = Declare(Kind[LocalizeParams]{Name: "localize", Queue: QueueLLM,
	NoEndpoint: func(p LocalizeParams) bool { return p.offline() }, Inputs: []string{"checkout", "inventory"},
	UsesModel: true, UsesTokenizer: true, Defaults: LocalizeDefaults, Task: "localize",
	Fields:  Fields(UsageFields, ServedFields),
	Summary: "one localization sample: the model ranks the files to change (params.sample numbers it)"})

// IntersectParams are the intersect step's parameters: none.
type IntersectParams struct{}

var Intersect = Declare(Kind[IntersectParams]{Name: "intersect", Queue: QueueCPU, Cheap: true,
	Inputs:  []string{"l0", "l1", "l2"},
	Fields:  SelectionFields,
	Summary: "F = L1 ∩ L2 minus tests and docs, by reciprocal-rank sum; empty F falls back to L0"})

// TrimParams are the trim step's parameters.
type TrimParams struct {
	// Count, when positive, is the number of files kept; otherwise the like input's count is used.
	Count int `json:"count" range:"[0,)"`
}

var Trim = Declare(Kind[TrimParams]{Name: "trim", Queue: QueueCPU, Cheap: true, Inputs: []string{"sample"},
	Optional: []string{"like"},
	Fields:   SelectionFields,
	Summary:  "one localization sample, tests and docs dropped, cut to the file count of input like (or params.count)"})

// EvidenceParams are the evidence step's parameters (Algorithm 1, step 3).
type EvidenceParams struct {
	ModelParams
	// MaxSearches and MaxStrings bound the plan: at most 4 searches of at most 8 fixed strings each.
	MaxSearches int `json:"max_searches" range:"[0,)"`
	MaxStrings  int `json:"max_strings" range:"[1,)"`
	// NewFiles is how many files not yet shown one search may add (2); MaxFiles stops the step once the evidence
	// covers that many files (8).
	NewFiles int `json:"new_files" range:"[0,)"`
	MaxFiles int `json:"max_files" range:"[1,)"`
	// Window is the half-height of a line window, for hits outside any definition.
	Window int `json:"window" range:"[0,)"`
	// FileCap cuts each selected file shown in the planning prompt (tokens).
	FileCap int `json:"file_cap" range:"[1,)"`
}

// EvidenceDefaults' Window is activities/search's DefaultWindow (a test keeps them equal).
var EvidenceDefaults = EvidenceParams{MaxSearches: 4, MaxStrings: 8, NewFiles: 2, MaxFiles: 8, Window: 15,
	FileCap: 60000}

// The evidence plan's searches, the files its snippets cover, and why the plan could not be read.
var (
	EvidenceSearches  = IntField("evidence_searches")
	EvidenceFiles     = IntField("evidence_files")
	EvidencePlanError = StringField("evidence_plan_error")
)

var Evidence = Declare(Kind[EvidenceParams]{Name: "evidence", Queue: QueueLLM,
	NoEndpoint: func(p EvidenceParams) bool { return p.offline() }, Inputs: []string{"checkout", "files"},
	UsesModel: true, UsesTokenizer: true, Defaults: EvidenceDefaults, Task: "evidence",
	Fields:  Fields(UsageFields, ServedFields, Rows(EvidenceSearches, EvidenceFiles, EvidencePlanError)),
	Summary: "the model plans typed searches; grep at base_commit; enclosing definitions become snippets"})

// AssembleParams are the caps of Algorithm 1, step 4, in tokens.
type AssembleParams struct {
	Tokenizer  string `json:"tokenizer" check:"tokenizer_name"`
	FileCap    int    `json:"file_cap" range:"[0,)"`
	SnippetCap int    `json:"snippet_cap" range:"[0,)"`
	TotalCap   int    `json:"total_cap" range:"[0,)"`
}

// AssembleDefaults are the caps of step 4 in tokens: the paper's hand-set values.
var AssembleDefaults = AssembleParams{Tokenizer: FallbackTokenizer, FileCap: 60000, SnippetCap: 12000, TotalCap: 80000}

// The assembled context's tokens, and the blocks cut to a cap or skipped for the total.
var (
	AssembledTokens = IntField("assembled_tokens")
	BlocksCut       = IntField("blocks_cut")
	BlocksSkipped   = IntField("blocks_skipped")
)

var Assemble = Declare(Kind[AssembleParams]{Name: "assemble", Queue: QueueCPU, Cheap: true,
	Inputs: []string{"checkout", "files"}, Optional: []string{"evidence"}, UsesTokenizer: true,
	Defaults: AssembleDefaults,
	Fields:   Fields(ContextStepFields, Rows(AssembledTokens, BlocksCut, BlocksSkipped)),
	Summary:  "selected files whole, then evidence snippets, within per-file, per-snippet and total token caps"})
