package specs

// Each activity's parameters, as a step's params object writes them. They live here, beside the catalog, so that
// the spec compiler checks a step's params against the very struct the activity decodes them into at run time
// (activities imports specs; specs imports nothing of ctxlab). Every field a step may set is declared: an unknown or
// mistyped param is a spec error. Params the plan injects (model, tokenizer, grading) are fields too, because a
// step may set them itself.

// Defaults of the params that have any, kept once: each activity starts from its defaults before decoding a step's
// params, and jsonnet/lib writes the paper's values into specs by reading them from the catalog (the native
// function ctxlab_defaults), never from a copy. Activities copy them by assignment: keep maps and pointers out.
var (
	PatchDefaults = PatchParams{Format: "diff"}
	// InventoryDefaults are Algorithm 1's: tau = 1/2 · min(|P| in tokens, 32K).
	InventoryDefaults = InventoryParams{Tokenizer: DefaultTokenizer, Ratio: 0.5, Cap: 32000}
	LocalizeDefaults  = LocalizeParams{MaxFiles: 5}
	// EvidenceDefaults' Window is activities/search's DefaultWindow (a test keeps them equal).
	EvidenceDefaults = EvidenceParams{MaxSearches: 4, MaxStrings: 8, NewFiles: 2, MaxFiles: 8, Window: 15,
		FileCap: 60000}
	// AssembleDefaults are the caps of step 4 in tokens: the paper's hand-set values.
	AssembleDefaults = AssembleParams{Tokenizer: DefaultTokenizer, FileCap: 60000, SnippetCap: 12000, TotalCap: 80000}
)

// CheckoutParams are the checkout step's parameters: none.
type CheckoutParams struct{}

// NoSourceParams are the no_source step's parameters; Tokenizer is filled in by the plan.
type NoSourceParams struct {
	Tokenizer string `json:"tokenizer"`
	// Replica tells otherwise equal steps apart, so that each runs as its own node (the orchestration benchmark
	// gives every method its own nodes this way); the output does not depend on it.
	Replica int `json:"replica,omitempty"`
}

// OracleFilesParams are the oracle_files step's parameters; Tokenizer is filled in by the plan.
type OracleFilesParams struct {
	Tokenizer string `json:"tokenizer"`
	// Replica tells otherwise equal steps apart, so that each runs as its own node (the orchestration benchmark
	// gives every method its own nodes this way); the output does not depend on it.
	Replica int `json:"replica,omitempty"`
}

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
	Tokenizer string `json:"tokenizer"`
	Prompt    Prompt `json:"prompt"`
	// Sample numbers independent samples of the same prompt.
	Sample int `json:"sample"`
	// Temperature, when set, overrides the model's for this step (localization samples must differ).
	Temperature *float64 `json:"temperature,omitempty"`
}

// PatchParams are the patch step's parameters; Model and Tokenizer are filled in by the plan.
type PatchParams struct {
	ModelParams
	// Format is the edit format asked for: diff (a unified diff) or search_replace (SEARCH/REPLACE blocks, turned
	// into a diff against the real file text).
	Format string `json:"format"`
}

// MeasureParams are the measure step's parameters; Tokenizer is filled in by the plan.
type MeasureParams struct {
	Tokenizer string `json:"tokenizer"`
}

// GradeParams are the grade step's parameters; Grading is filled in by the plan.
type GradeParams struct {
	Grading Grading `json:"grading"`
}

// FitParams are the budget-fitting parameters every knob-bearing context step (retrieve, compress, corrupt's
// same_text_other_files) takes. The budget itself comes from the optional input named "budget": the context of the
// anchor method on the same issue (ctxlab.baselines.fitted wires it), whose rendered tokens times Multiplier are the
// target.
type FitParams struct {
	Multiplier float64 `json:"multiplier,omitempty"` // 1 when 0
	Tolerance  float64 `json:"tolerance,omitempty"`  // budget.DefaultTolerance when 0
	MaxEvals   int     `json:"max_evals,omitempty"`  // budget.DefaultMaxEvals when 0
}

// RetrieveParams are the retrieve step's parameters.
type RetrieveParams struct {
	Tokenizer string `json:"tokenizer"`
	// Scorer is bm25 (default) or dense.
	Scorer string `json:"scorer,omitempty"`
	// Unit is definition, function, window, file or swebench_file.
	Unit   string   `json:"unit"`
	Window int      `json:"window,omitempty"`
	K1     float64  `json:"k1,omitempty"` // bm25.DefaultK1 when 0 and B is unset
	B      *float64 `json:"b,omitempty"`  // bm25.DefaultB when unset
	// EmbeddingModel names the model of the embeddings endpoint (dense).
	EmbeddingModel string `json:"embedding_model,omitempty"`
	// Partial lets the last chunk be cut at a line to meet the budget; false shows whole chunks only ("whole files
	// ranked by similarity" with unit file), so a budget between two chunk counts is recorded as unreachable.
	Partial *bool `json:"partial,omitempty"`
	// MaxTokens is the budget when the step has no budget input.
	MaxTokens int `json:"max_tokens,omitempty"`
	FitParams
}

// CompressParams are the compress step's parameters.
type CompressParams struct {
	Tokenizer string `json:"tokenizer"`
	// Compressor is llmlingua2, longllmlingua, longcodezip, swepruner (served by the endpoint) or fake.
	Compressor string `json:"compressor"`
	Endpoint   string `json:"endpoint,omitempty"`
	// Rate is the share of tokens kept when the step has no budget input.
	Rate float64 `json:"rate,omitempty"`
	// RateMin bounds the fitted rate from below.
	RateMin float64 `json:"rate_min,omitempty"`
	// NoQuery leaves the issue text out of requests (for question-agnostic use of question-aware compressors).
	NoQuery bool `json:"no_query,omitempty"`
	FitParams
}

// CorruptParams are the corrupt step's parameters.
type CorruptParams struct {
	Tokenizer string  `json:"tokenizer"`
	Mode      string  `json:"mode"`
	Rate      float64 `json:"rate,omitempty"`
	Seed      int64   `json:"seed,omitempty"`
	FitParams
}

// InventoryParams are the inventory step's parameters: tau = ratio · min(tokens of all paths, cap).
type InventoryParams struct {
	Tokenizer string  `json:"tokenizer"`
	Ratio     float64 `json:"ratio"`
	Cap       int     `json:"cap"`
}

// LocalizeParams are one localization sample's parameters.
type LocalizeParams struct {
	ModelParams
	// MaxFiles is how many paths the prompt asks for at most.
	MaxFiles int `json:"max_files"`
}

// IntersectParams are the intersect step's parameters: none.
type IntersectParams struct{}

// TrimParams are the trim step's parameters.
type TrimParams struct {
	// Count, when positive, is the number of files kept; otherwise the like input's count is used.
	Count int `json:"count"`
}

// EvidenceParams are the evidence step's parameters (Algorithm 1, step 3).
type EvidenceParams struct {
	ModelParams
	// MaxSearches and MaxStrings bound the plan: at most 4 searches of at most 8 fixed strings each.
	MaxSearches int `json:"max_searches"`
	MaxStrings  int `json:"max_strings"`
	// NewFiles is how many files not yet shown one search may add (2); MaxFiles stops the step once the evidence
	// covers that many files (8).
	NewFiles int `json:"new_files"`
	MaxFiles int `json:"max_files"`
	// Window is the half-height of a line window, for hits outside any definition.
	Window int `json:"window"`
	// FileCap cuts each selected file shown in the planning prompt (tokens).
	FileCap int `json:"file_cap"`
}

// AssembleParams are the caps of Algorithm 1, step 4, in tokens.
type AssembleParams struct {
	Tokenizer  string `json:"tokenizer"`
	FileCap    int    `json:"file_cap"`
	SnippetCap int    `json:"snippet_cap"`
	TotalCap   int    `json:"total_cap"`
}
