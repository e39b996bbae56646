package results

// Names of activity-owned row fields that the top-level activities files still spell through this package. They are
// copies of the specs handles' names (specs.BudgetTokens.Name, ...), kept only until those files use the handles
// (branch kinds converts them): delete this file then. Constants, as activities/fitbudget.go aliases them in a const.
const (
	FieldModelServed      = "model_served"
	FieldTemplateShown    = "template_shown"
	FieldChunksShown      = "chunks_shown"
	FieldTokenizer        = "tokenizer"
	FieldBudget           = "budget_tokens"
	FieldBudgetEvals      = "budget_evals"
	FieldBudgetError      = "budget_error"
	FieldBudgetAnchor     = "budget_anchor_tokens"
	FieldBudgetMultiplier = "budget_multiplier"
	FieldBudgetKnob       = "budget_knob"
	FieldBudgetReached    = "budget_reached"
	FieldCachedTokens     = "cached_tokens"
	FieldCacheWriteTokens = "cache_write_tokens"
	FieldCostInputUSD     = "cost_input_usd"
	FieldCostCachedUSD    = "cost_cached_usd"
	FieldCostOutputUSD    = "cost_output_usd"
)
