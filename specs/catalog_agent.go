package specs

import "reflect"

// AgentParams are the agent step's parameters; Model and Tokenizer are filled in by the plan. The prompt's fields:
// .Issue, .Tools (the tools and how to call them), .MaxTurns, .Format (prompt.formats[edit_format]).
type AgentParams struct {
	ModelParams
	// MaxTurns bounds the model calls of one trajectory; the last one must answer with the edit.
	MaxTurns int `json:"max_turns"`
	// ToolOutputBudget bounds the tokens of tool output the agent may see (0: no bound). With a budget input (an
	// anchor's context) the bound is Multiplier times that context's tokens instead.
	ToolOutputBudget int `json:"tool_output_budget,omitempty"`
	// EditFormat is the format of the final edit: diff or search_replace, read by the patch step's parsers.
	EditFormat string `json:"edit_format"`
	// ToolCalling is how tools are offered: native (OpenAI function tools, Anthropic tools; the default) or text
	// (the plain-text protocol the prompt's .Tools describes, for endpoints without tool calling).
	ToolCalling string `json:"tool_calling"`
	// MaxHits and MaxLines bound one search's hits and one open's lines before the budget does.
	MaxHits  int `json:"max_hits,omitempty"`
	MaxLines int `json:"max_lines,omitempty"`
	FitParams
}

// AgentDefaults: a short trajectory, SWE-agent's default edit format being a diff.
var AgentDefaults = AgentParams{MaxTurns: 12, EditFormat: "diff", ToolCalling: "native", MaxHits: 50, MaxLines: 400}

// AgentContextParams are the agent_context step's parameters: none.
type AgentContextParams struct{}

// AgentPatchParams are the agent_patch step's parameters: none (the edit format is the agent's).
type AgentPatchParams struct{}

// The agent method's steps: the loop lives inside one node (the Issue workflow runs it as the Agent child workflow,
// a turn per activity), so specs stay DAGs.
func init() {
	register(ActivityInfo{Name: "agent", Queue: QueueLLM, Inputs: []string{"checkout"}, Optional: []string{"budget"},
		UsesModel: true, UsesTokenizer: true,
		Params: reflect.TypeFor[AgentParams](), Defaults: AgentDefaults,
		Fields: Fields(UsageFields, ServedFields, []RowField{
			{Name: "agent_turns", Kind: KindInt}, {Name: "agent_stop", Kind: KindString},
			{Name: "agent_tool_calls", Kind: KindInt}, {Name: "agent_calls_search", Kind: KindInt},
			{Name: "agent_calls_open", Kind: KindInt}, {Name: "agent_calls_list", Kind: KindInt},
			{Name: "agent_calls_definition", Kind: KindInt}, {Name: "agent_bad_calls", Kind: KindInt},
			{Name: "agent_refused_calls", Kind: KindInt}, {Name: "agent_tool_output_tokens", Kind: KindInt},
			{Name: "agent_budget_tokens", Kind: KindInt}, {Name: "agent_tokens_paid", Kind: KindInt}}),
		Summary: "the model gathers its own context with read-only tools (search, open, list, definition) turn by turn, then edits"})
	register(ActivityInfo{Name: "agent_context", Queue: QueueCPU, Inputs: []string{"checkout", "agent"},
		Params:  reflect.TypeFor[AgentContextParams](),
		Fields:  ContextStepFields,
		Summary: "the union of every repository line the agent saw, as a context (what measure reads)"})
	register(ActivityInfo{Name: "agent_patch", Queue: QueueCPU, Inputs: []string{"checkout", "agent"},
		Optional: []string{"context"},
		Params:   reflect.TypeFor[AgentPatchParams](),
		Fields:   []RowField{{Name: "patch_parse_error", Kind: KindString}, {Name: "patch_recounted", Kind: KindInt}},
		Summary:  "the agent's final answer read as a patch with the patch step's parsers"})
}
