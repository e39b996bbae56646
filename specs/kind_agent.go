package specs

// The agent method's kinds: the loop lives inside one node (the Issue workflow runs it as the Agent child workflow,
// a turn per activity), so specs stay DAGs.

// AgentParams are the agent step's parameters; Model and Tokenizer are filled in by the plan. The prompt's fields:
// .Issue, .Tools (the tools and how to call them), .MaxTurns, .Format (prompt.formats[edit_format]).
type AgentParams struct {
	ModelParams
	// MaxTurns bounds the model calls of one trajectory; the last one must answer with the edit.
	MaxTurns int `json:"max_turns" range:"[1,)"`
	// ToolOutputBudget bounds the tokens of tool output the agent may see (0: no bound). With a budget input (an
	// anchor's context) the bound is Multiplier times that context's tokens instead.
	ToolOutputBudget int `json:"tool_output_budget,omitempty" range:"[0,)"`
	// EditFormat is the format of the final edit, read by the patch step's parsers.
	EditFormat EditFormat `json:"edit_format"`
	// ToolCalling is how tools are offered.
	ToolCalling ToolCalling `json:"tool_calling"`
	// MaxHits and MaxLines bound one search's hits and one open's lines before the budget does.
	MaxHits  int `json:"max_hits,omitempty" range:"[0,)"`
	MaxLines int `json:"max_lines,omitempty" range:"[0,)"`
	FitParams
}

// ToolCalling is how an agent's tools are offered to the model.
type ToolCalling string

const (
	ToolsNative ToolCalling = "native" // OpenAI function tools, Anthropic tools
	// ToolsText is the plain-text protocol the prompt's .Tools describes, for endpoints without tool calling.
	ToolsText ToolCalling = "text"
)

// Values are the ways of offering tools (Enum).
func (ToolCalling) Values() []string { return names(ToolsNative, ToolsText) }

// AgentDefaults: a short trajectory, SWE-agent's default edit format being a diff.
var AgentDefaults = AgentParams{MaxTurns: 12, EditFormat: EditDiff, ToolCalling: ToolsNative, MaxHits: 50,
	MaxLines: 400}

// The agent's row fields: its trajectory's turns, why it stopped, its tool calls (AgentCalls by tool) and the tool
// output it saw against its budget.
var (
	AgentTurns            = IntField("agent_turns")
	AgentStop             = StringField("agent_stop")
	AgentToolCalls        = IntField("agent_tool_calls")
	AgentCallsSearch      = IntField("agent_calls_search")
	AgentCallsOpen        = IntField("agent_calls_open")
	AgentCallsList        = IntField("agent_calls_list")
	AgentCallsDefinition  = IntField("agent_calls_definition")
	AgentBadCalls         = IntField("agent_bad_calls")
	AgentRefusedCalls     = IntField("agent_refused_calls")
	AgentToolOutputTokens = IntField("agent_tool_output_tokens")
	AgentBudgetTokens     = IntField("agent_budget_tokens")
	AgentTokensPaid       = IntField("agent_tokens_paid")
	// AgentCalls are the calls of each tool, by the tool's name.
	AgentCalls = map[string]Field[int]{"search": AgentCallsSearch, "open": AgentCallsOpen, "list": AgentCallsList,
		"definition": AgentCallsDefinition}
)

var Agent = Declare(Kind[AgentParams]{Name: "agent", Queue: QueueLLM, Inputs: []string{"checkout"},
	Optional: []string{"budget"}, UsesModel: true, UsesTokenizer: true, Defaults: AgentDefaults, Task: "agent",
	Fields: Fields(UsageFields, ServedFields, Rows(AgentTurns, AgentStop, AgentToolCalls, AgentCallsSearch,
		AgentCallsOpen, AgentCallsList, AgentCallsDefinition, AgentBadCalls, AgentRefusedCalls,
		AgentToolOutputTokens, AgentBudgetTokens, AgentTokensPaid)),
	Summary: "the model gathers its own context with read-only tools (search, open, list, definition) turn by turn, then edits"})

// AgentContextParams are the agent_context step's parameters: none.
type AgentContextParams struct{}

var AgentContext = Declare(Kind[AgentContextParams]{Name: "agent_context", Queue: QueueCPU,
	Inputs:  []string{"checkout", "agent"},
	Fields:  ContextStepFields,
	Summary: "the union of every repository line the agent saw, as a context (what measure reads)"})

// AgentPatchParams are the agent_patch step's parameters: none (the edit format is the agent's).
type AgentPatchParams struct{}

var AgentPatch = Declare(Kind[AgentPatchParams]{Name: "agent_patch", Queue: QueueCPU,
	Inputs: []string{"checkout", "agent"}, Optional: []string{"context"},
	Fields:  Rows(PatchParseError, PatchRecounted),
	Summary: "the agent's final answer read as a patch with the patch step's parsers"})
