package specs

// The baselines' kinds (PAPER.md): retrieval, compression, controlled corruptions. Each takes an optional input
// named budget (the anchor method's context on the same issue) that makes it fit its knob to the anchor's tokens;
// jsonnet/lib/baselines.libsonnet's fitted() wires it.

// FitParams are the budget-fitting parameters every knob-bearing context step (retrieve, compress, corrupt's
// same_text_other_files) takes. The budget itself comes from the optional input named "budget": the context of the
// anchor method on the same issue (ctxlab.baselines.fitted wires it), whose rendered tokens times Multiplier are the
// target.
type FitParams struct {
	Multiplier float64 `json:"multiplier,omitempty" range:"[0,)"` // 1 when 0
	Tolerance  float64 `json:"tolerance,omitempty" range:"[0,1)"` // budget.DefaultTolerance when 0
	MaxEvals   int     `json:"max_evals,omitempty" range:"[0,)"`  // budget.DefaultMaxEvals when 0
}

// RetrieveParams are the retrieve step's parameters.
type RetrieveParams struct {
	Tokenizer string `json:"tokenizer" check:"tokenizer_name"`
	// Scorer ranks the chunks; empty is bm25.
	Scorer Scorer       `json:"scorer,omitempty"`
	Unit   RetrieveUnit `json:"unit"`
	Window int          `json:"window,omitempty" range:"[0,)"`
	K1     float64      `json:"k1,omitempty" range:"[0,)"` // bm25.DefaultK1 when 0 and B is unset
	B      *float64     `json:"b,omitempty" range:"[0,1]"` // bm25.DefaultB when unset
	// EmbeddingModel names the model of the embeddings endpoint (dense).
	EmbeddingModel string `json:"embedding_model,omitempty"`
	// EmbeddingMaxTokens cuts each embedded text at this many cl100k_base tokens (whole lines); 0 is OpenAI's
	// embedding models' limit (dense.MaxInputTokens). A server whose inputs are shorter (llama.cpp's physical batch)
	// needs less.
	EmbeddingMaxTokens int `json:"embedding_max_tokens,omitempty" range:"[0,)"`
	// Partial lets the last chunk be cut at a line to meet the budget; false shows whole chunks only ("whole files
	// ranked by similarity" with unit file), so a budget between two chunk counts is recorded as unreachable.
	Partial *bool `json:"partial,omitempty"`
	// MaxTokens is the budget when the step has no budget input.
	MaxTokens int `json:"max_tokens,omitempty" range:"[0,)"`
	FitParams
}

// Scorer is how a retrieve step ranks chunks against the issue.
type Scorer string

const (
	ScorerBM25  Scorer = "bm25"  // BM25 over the chunks' words
	ScorerDense Scorer = "dense" // cosine similarity of the embeddings endpoint's vectors
)

// Values are the scorers (Enum).
func (Scorer) Values() []string { return names(ScorerBM25, ScorerDense) }

// RetrieveUnit is what a retrieve step cuts files into and ranks: package activities/chunk's units, and SWE-bench's
// file-level documents (a file's path and text together).
type RetrieveUnit string

const (
	UnitDefinition   RetrieveUnit = "definition"
	UnitFunction     RetrieveUnit = "function"
	UnitWindow       RetrieveUnit = "window"
	UnitFile         RetrieveUnit = "file"
	UnitSWEBenchFile RetrieveUnit = "swebench_file"
)

// Values are the units (Enum).
func (RetrieveUnit) Values() []string {
	return names(UnitDefinition, UnitFunction, UnitWindow, UnitFile, UnitSWEBenchFile)
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
	Tokenizer  string     `json:"tokenizer" check:"tokenizer_name"`
	Compressor Compressor `json:"compressor"`
	Endpoint   string     `json:"endpoint,omitempty"`
	// Rate is the share of tokens kept when the step has no budget input.
	Rate float64 `json:"rate,omitempty" range:"[0,1]"`
	// RateMin bounds the fitted rate from below.
	RateMin float64 `json:"rate_min,omitempty" range:"[0,1]"`
	// NoQuery leaves the issue text out of requests (for question-agnostic use of question-aware compressors).
	NoQuery bool `json:"no_query,omitempty"`
	FitParams
}

// Compressor is the compressor a compress step asks: one the compression server serves (scripts/compress_server.py),
// or the in-process stand-in.
type Compressor string

const (
	CompressorLLMLingua2    Compressor = "llmlingua2"
	CompressorLongLLMLingua Compressor = "longllmlingua"
	CompressorLongCodeZip   Compressor = "longcodezip"
	CompressorSWEPruner     Compressor = "swepruner"
	// CompressorFake is the in-process stand-in (not a model): it calls no endpoint.
	CompressorFake Compressor = "fake"
)

// Values are the compressors (Enum).
func (Compressor) Values() []string {
	return names(CompressorLLMLingua2, CompressorLongLLMLingua, CompressorLongCodeZip, CompressorSWEPruner,
		CompressorFake)
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
	NoEndpoint: func(p CompressParams) bool { return p.Compressor == CompressorFake },
	Fields: Fields(ContextStepFields, FitFields, Rows(TemplateShown, CompressRate, CompressorCalls,
		CompressorTokensIn, CompressorTokensOut)),
	Summary: "compress each block of a context at a rate (fitted to the budget) through a compression server"})

// CorruptParams are the corrupt step's parameters.
type CorruptParams struct {
	Tokenizer string      `json:"tokenizer" check:"tokenizer_name"`
	Mode      CorruptMode `json:"mode"`
	Rate      float64     `json:"rate,omitempty" range:"[0,1]"`
	Seed      int64       `json:"seed,omitempty"`
	FitParams
}

// CorruptMode is what a corrupt step does to its context.
type CorruptMode string

const (
	CorruptTokens CorruptMode = "tokens" // delete a share rate of the tokens of every line
	CorruptLines  CorruptMode = "lines"  // delete a share rate of the lines of every block
	// CorruptSameFilesOtherText keeps the files and lines of the context and makes its verbatim rate that of the
	// context named other: gold-file recall of one method, epsilon of another.
	CorruptSameFilesOtherText CorruptMode = "same_files_other_text"
	// CorruptSameTextOtherFiles shows the files of other, whole and verbatim in other's order, cut to the context's
	// tokens: the text form (and size) of one method, the file choice of another.
	CorruptSameTextOtherFiles CorruptMode = "same_text_other_files"
)

// Values are the modes (Enum).
func (CorruptMode) Values() []string {
	return names(CorruptTokens, CorruptLines, CorruptSameFilesOtherText, CorruptSameTextOtherFiles)
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
