package specs

// The baselines' kinds (PAPER.md): retrieval, compression, controlled corruptions. Each takes an optional input
// named budget (the anchor method's context on the same issue) that makes it fit its knob to the anchor's tokens;
// jsonnet/lib/baselines.libsonnet's fitted() wires it.

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

// Retrieve's row fields: the chunks shown, and the embeddings a dense scorer asked for and found cached.
var (
	ChunksShown      = IntField("chunks_shown").InContext()
	EmbeddingTokens  = IntField("embedding_tokens").InContext()
	EmbeddingsCached = IntField("embeddings_cached").InContext()
)

var Retrieve = Declare(Kind[RetrieveParams]{Name: "retrieve", Queue: QueueCPU, Inputs: []string{"checkout"},
	Optional: []string{"budget"}, UsesTokenizer: true, ReplacesContext: true,
	Fields:  Fields(ContextStepFields, FitFields, Rows(TemplateShown, ChunksShown, EmbeddingTokens, EmbeddingsCached)),
	Summary: "rank the repository's chunks against the issue (BM25 or dense) and show them in rank order up to the budget"})

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

// Compress's row fields: the rate used, and the compressor's calls and tokens.
var (
	CompressRate        = FloatField("compress_rate").InContext()
	CompressorCalls     = IntField("compressor_calls").InContext()
	CompressorTokensIn  = IntField("compressor_tokens_in").InContext()
	CompressorTokensOut = IntField("compressor_tokens_out").InContext()
)

var Compress = Declare(Kind[CompressParams]{Name: "compress", Queue: QueueLLM, Inputs: []string{"context"},
	Optional: []string{"budget"}, UsesTokenizer: true, ReplacesContext: true,
	// The stand-in compressor calls no endpoint.
	NoEndpoint: func(p CompressParams) bool { return p.Compressor == "fake" },
	Fields: Fields(ContextStepFields, FitFields, Rows(TemplateShown, CompressRate, CompressorCalls,
		CompressorTokensIn, CompressorTokensOut)),
	Summary: "compress each block of a context at a rate (fitted to the budget) through a compression server"})

// CorruptParams are the corrupt step's parameters.
type CorruptParams struct {
	Tokenizer string  `json:"tokenizer"`
	Mode      string  `json:"mode"`
	Rate      float64 `json:"rate,omitempty"`
	Seed      int64   `json:"seed,omitempty"`
	FitParams
}

// Corrupt's row fields: what a deletion took, and the verbatim rate a same-files-other-text corruption aimed at.
var (
	CorruptTokensDeleted = IntField("corrupt_tokens_deleted").InContext()
	CorruptLinesDeleted  = IntField("corrupt_lines_deleted").InContext()
	CorruptTargetEpsilon = FloatField("corrupt_target_epsilon").InContext()
	CorruptLinesChanged  = IntField("corrupt_lines_changed").InContext()
)

var Corrupt = Declare(Kind[CorruptParams]{Name: "corrupt", Queue: QueueCPU, Cheap: true,
	Inputs: []string{"checkout", "context"}, Optional: []string{"other"}, UsesTokenizer: true, ReplacesContext: true,
	Fields: Fields(ContextStepFields, FitFields, Rows(TemplateShown, CorruptTokensDeleted, CorruptLinesDeleted,
		CorruptTargetEpsilon, CorruptLinesChanged)),
	Summary: "controlled corruption of a context: delete tokens or lines (seeded), or pair it with another context"})
