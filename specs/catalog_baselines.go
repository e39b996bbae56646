package specs

import "reflect"

// The baselines' activities (PAPER.md): retrieval, compression, controlled corruptions. Each takes an optional
// input named budget (the anchor method's context on the same issue) that makes it fit its knob to the anchor's
// tokens; jsonnet/lib/baselines.libsonnet's fitted() wires it.
func init() {
	register(ActivityInfo{Name: "retrieve", Queue: QueueCPU, Inputs: []string{"checkout"},
		Optional: []string{"budget"}, UsesTokenizer: true,
		Params: reflect.TypeFor[RetrieveParams](),
		Fields: Fields(ContextStepFields, FitFields, []RowField{TemplateShownField,
			{Name: "chunks_shown", Kind: KindInt, Context: true},
			{Name: "embedding_tokens", Kind: KindInt, Context: true},
			{Name: "embeddings_cached", Kind: KindInt, Context: true},
		}),
		ReplacesContext: true,
		Summary:         "rank the repository's chunks against the issue (BM25 or dense) and show them in rank order up to the budget"})
	register(ActivityInfo{Name: "compress", Queue: QueueLLM, NoEndpoint: fakeCompressor, Inputs: []string{"context"},
		Optional: []string{"budget"}, UsesTokenizer: true,
		Params: reflect.TypeFor[CompressParams](),
		Fields: Fields(ContextStepFields, FitFields, []RowField{TemplateShownField,
			{Name: "compress_rate", Kind: KindFloat, Context: true},
			{Name: "compressor_calls", Kind: KindInt, Context: true},
			{Name: "compressor_tokens_in", Kind: KindInt, Context: true},
			{Name: "compressor_tokens_out", Kind: KindInt, Context: true},
		}),
		ReplacesContext: true,
		Summary:         "compress each block of a context at a rate (fitted to the budget) through a compression server"})
	register(ActivityInfo{Name: "corrupt", Queue: QueueCPU, Cheap: true, Inputs: []string{"checkout", "context"},
		Optional: []string{"other"}, UsesTokenizer: true,
		Params: reflect.TypeFor[CorruptParams](),
		Fields: Fields(ContextStepFields, FitFields, []RowField{TemplateShownField,
			{Name: "corrupt_tokens_deleted", Kind: KindInt, Context: true},
			{Name: "corrupt_lines_deleted", Kind: KindInt, Context: true},
			{Name: "corrupt_target_epsilon", Kind: KindFloat, Context: true},
			{Name: "corrupt_lines_changed", Kind: KindInt, Context: true},
		}),
		ReplacesContext: true,
		Summary:         "controlled corruption of a context: delete tokens or lines (seeded), or pair it with another context"})
}
