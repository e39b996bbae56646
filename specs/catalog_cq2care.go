package specs

import "reflect"

// CQ2-CARE's steps (PAPER.md, Algorithm 1); jsonnet/lib/cq2care.libsonnet puts them together.
func init() {
	register(ActivityInfo{Name: "inventory", Queue: QueueCPU, Inputs: []string{"checkout"}, UsesTokenizer: true,
		Params: reflect.TypeFor[InventoryParams](), Defaults: InventoryDefaults,
		Fields:  []RowField{{Name: "inventory_paths", Kind: KindInt}, {Name: "inventory_tokens", Kind: KindInt}},
		Summary: "rank repository paths by words shared with the issue; keep the best within tau tokens, alphabetically"})
	register(ActivityInfo{Name: "localize", Queue: QueueLLM, NoEndpoint: offlineModel, Inputs: []string{"checkout", "inventory"},
		UsesModel: true, UsesTokenizer: true,
		Params: reflect.TypeFor[LocalizeParams](), Defaults: LocalizeDefaults,
		Fields:  Fields(UsageFields, ServedFields),
		Summary: "one localization sample: the model ranks the files to change (params.sample numbers it)"})
	register(ActivityInfo{Name: "intersect", Queue: QueueCPU, Cheap: true, Inputs: []string{"l0", "l1", "l2"},
		Params:  reflect.TypeFor[IntersectParams](),
		Fields:  SelectionFields,
		Summary: "F = L1 ∩ L2 minus tests and docs, by reciprocal-rank sum; empty F falls back to L0"})
	register(ActivityInfo{Name: "trim", Queue: QueueCPU, Cheap: true, Inputs: []string{"sample"}, Optional: []string{"like"},
		Params:  reflect.TypeFor[TrimParams](),
		Fields:  SelectionFields,
		Summary: "one localization sample, tests and docs dropped, cut to the file count of input like (or params.count)"})
	register(ActivityInfo{Name: "evidence", Queue: QueueLLM, NoEndpoint: offlineModel, Inputs: []string{"checkout", "files"},
		UsesModel: true, UsesTokenizer: true,
		Params: reflect.TypeFor[EvidenceParams](), Defaults: EvidenceDefaults,
		Fields: Fields(UsageFields, ServedFields, []RowField{
			{Name: "evidence_searches", Kind: KindInt}, {Name: "evidence_files", Kind: KindInt},
			{Name: "evidence_plan_error", Kind: KindString},
		}),
		Summary: "the model plans typed searches; grep at base_commit; enclosing definitions become snippets"})
	register(ActivityInfo{Name: "assemble", Queue: QueueCPU, Cheap: true, Inputs: []string{"checkout", "files"},
		Optional: []string{"evidence"}, UsesTokenizer: true,
		Params: reflect.TypeFor[AssembleParams](), Defaults: AssembleDefaults,
		Fields: Fields(ContextStepFields, []RowField{
			{Name: "assembled_tokens", Kind: KindInt}, {Name: "blocks_cut", Kind: KindInt},
			{Name: "blocks_skipped", Kind: KindInt},
		}),
		Summary: "selected files whole, then evidence snippets, within per-file, per-snippet and total token caps"})
}
