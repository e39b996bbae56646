package agent

import (
	"strings"
	"unicode"

	"ctxlab/activities/contexts"
	"ctxlab/activities/llm"
	"ctxlab/activities/llm/offline"
	"ctxlab/internal/offlinetask"
	"ctxlab/specs"
)

// ToolsHelp describes the tools and the plain-text protocol to call them; a prompt shows it as .Tools.
const ToolsHelp = "You can call one read-only tool per turn over the repository at the issue's commit by answering " +
	"with a fenced block tagged tool holding one JSON object, for example\n" +
	"```tool\n{\"tool\": \"search\", \"args\": {\"pattern\": \"parse_row\"}}\n```\n" +
	"Tools:\n" +
	"- search {pattern, regex (true for an RE2 regex, else a fixed string), path (a folder, optional)}: matching lines as path:line: text\n" +
	"- open {path, start, end (optional 1-based lines)}: a file or a line range, numbered\n" +
	"- list {path (a folder, \".\" for the root)}: the folder's entries\n" +
	"- definition {name}: the Go or Python definition of name, whole\n" +
	"Paths are relative to the repository root. Tool output counts against a token budget.\n"

// ToolsHelpNative describes the tools when they are offered as native function tools.
const ToolsHelpNative = "You can call one read-only tool per turn over the repository at the issue's commit: search " +
	"(matching lines as path:line: text), open (a file or a line range, numbered), list (a folder's entries), " +
	"definition (the Go or Python definition of a name, whole). Paths are relative to the repository root. Tool " +
	"output counts against a token budget.\n"

// NativeTools are the tools as OpenAI function tools, with their arguments' JSON schemas.
var NativeTools = []llm.Tool{
	{Name: offlinetask.ToolSearch, Description: "Lines of the repository matching a fixed string, or an RE2 regex with regex=true, as path:line: text.",
		Parameters: schema(map[string]any{"pattern": str, "regex": boolean, "path": str}, "pattern")},
	{Name: offlinetask.ToolOpen, Description: "A file, or lines start..end of it (1-based), numbered.",
		Parameters: schema(map[string]any{"path": str, "start": integer, "end": integer}, "path")},
	{Name: offlinetask.ToolList, Description: "The entries of a folder (\".\" for the root).",
		Parameters: schema(map[string]any{"path": str}, "path")},
	{Name: offlinetask.ToolDefinition, Description: "The Go or Python definition of a function, method, type or class, whole.",
		Parameters: schema(map[string]any{"name": str}, "name")},
}

var (
	str     = map[string]any{"type": "string"}
	boolean = map[string]any{"type": "boolean"}
	integer = map[string]any{"type": "integer"}
)

func schema(props map[string]any, required ...string) map[string]any {
	return map[string]any{"type": "object", "properties": props, "required": required}
}

// OfflineInput is what the offline stand-in agent reads instead of the conversation.
type OfflineInput struct {
	Issue  string
	Gold   string
	Format string
	// Steps are the finished turns' calls and results; TurnsLeft counts this turn.
	Steps     []offlinetask.AgentStep
	TurnsLeft int
	// Seen is everything the agent was shown so far, as a context: what the oracle patcher may use.
	Seen contexts.Context
}

// The offline stand-in agent (not a language model): the issue's identifiers are searched, the files with most
// hits opened, then the oracle patcher answers from what the agent saw.
func init() {
	offlinetask.Register(specs.Agent.Task, offlinetask.Answerer{
		FromInput: offline.Answer(func(in *OfflineInput, _ offlinetask.Call) (string, error) {
			if c, ok := offlinetask.NextAgentCall(Terms(in.Issue), in.Steps, in.TurnsLeft); ok {
				return "Looking into the repository.\n\n" + offlinetask.FormatAgentCall(c), nil
			}
			res, err := offline.OraclePatch(in.Gold, in.Seen)
			if err != nil {
				return "", err
			}
			return offline.FormatPatch(res.Patch, in.Format)
		}),
	})
}

// Terms are what the stand-in searches for: the issue's code identifiers, or, when it names none, its distinct words
// of at least 6 letters in order, so an issue in prose still leads somewhere.
func Terms(issue string) []string {
	if ids := offline.Identifiers(issue); len(ids) > 0 {
		return ids
	}
	seen := map[string]bool{}
	var out []string
	for _, w := range strings.FieldsFunc(issue, func(r rune) bool { return !unicode.IsLetter(r) && r != '_' }) {
		if len(w) >= 6 && !seen[strings.ToLower(w)] {
			seen[strings.ToLower(w)] = true
			out = append(out, w)
		}
	}
	return out
}
