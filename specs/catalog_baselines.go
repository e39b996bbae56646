package specs

import "reflect"

// The baselines' activities (PAPER.md): retrieval, compression, controlled corruptions. Each takes an optional
// input named budget (the anchor method's context on the same issue) that makes it fit its knob to the anchor's
// tokens; jsonnet/lib/baselines.libsonnet's fitted() wires it.
func init() {
	register(ActivityInfo{Name: "retrieve", Queue: QueueCPU, Inputs: []string{"checkout"},
		Optional: []string{"budget"}, UsesTokenizer: true,
		Params:  reflect.TypeFor[RetrieveParams](),
		Summary: "rank the repository's chunks against the issue (BM25 or dense) and show them in rank order up to the budget"})
	register(ActivityInfo{Name: "compress", Queue: QueueLLM, Inputs: []string{"context"},
		Optional: []string{"budget"}, UsesTokenizer: true,
		Params:  reflect.TypeFor[CompressParams](),
		Summary: "compress each block of a context at a rate (fitted to the budget) through a compression server"})
	register(ActivityInfo{Name: "corrupt", Queue: QueueCPU, Inputs: []string{"checkout", "context"},
		Optional: []string{"other"}, UsesTokenizer: true,
		Params:  reflect.TypeFor[CorruptParams](),
		Summary: "controlled corruption of a context: delete tokens or lines (seeded), or pair it with another context"})
}
