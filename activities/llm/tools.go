package llm

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"ctxlab/activities/api/errkind"
	"ctxlab/internal/offlinetask"
)

// Tool is a function tool offered to the model through OpenAI's tool calling.
type Tool struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Parameters  map[string]any `json:"parameters,omitempty"`
}

// A conversation stays in the agent's plain-text tool protocol (internal/offlinetask: a fenced tool block in the
// assistant's message, its result in the next user message) wherever it is stored, cached or audited. With tools
// offered, the openai provider sends it as OpenAI tool calls and tool messages, and reads the model's tool calls
// back into that protocol, so the activity parses one format whichever way the endpoint speaks.

// toolMessages turns a plain-text conversation into OpenAI messages with tool calls and results, and the tools.
func toolMessages(req Request) ([]openai.ChatCompletionMessageParamUnion, []openai.ChatCompletionToolUnionParam, *Error) {
	var msgs []openai.ChatCompletionMessageParamUnion
	pending := "" // the id of the tool call whose result the next user message holds
	for i, m := range req.Messages {
		switch {
		case m.Role == "assistant":
			pending = ""
			c, ok, err := offlinetask.ParseAgentCall(m.Content)
			if !ok || err != nil {
				msgs = append(msgs, openai.AssistantMessage(m.Content))
				continue
			}
			args, _ := json.Marshal(c.Args)
			if c.Args == nil {
				args = []byte("{}")
			}
			pending = fmt.Sprintf("call_%d", i)
			am := openai.ChatCompletionAssistantMessageParam{ToolCalls: []openai.ChatCompletionMessageToolCallUnionParam{{
				OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{ID: pending,
					Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Tool, Arguments: string(args)}},
			}}}
			if text := strings.TrimSpace(stripToolBlock(m.Content)); text != "" {
				am.Content.OfString = openai.String(text)
			}
			msgs = append(msgs, openai.ChatCompletionMessageParamUnion{OfAssistant: &am})
		case m.Role == "user" && pending != "":
			msgs = append(msgs, openai.ToolMessage(m.Content, pending))
			pending = ""
		case m.Role == "system":
			msgs = append(msgs, openai.SystemMessage(m.Content))
		case m.Role == "developer":
			msgs = append(msgs, openai.DeveloperMessage(m.Content))
		case m.Role == "user":
			msgs = append(msgs, openai.UserMessage(m.Content))
		default:
			return nil, nil, &Error{Kind: errkind.BadRequest, Msg: fmt.Sprintf("message %d has role %q", i+1, m.Role)}
		}
	}
	tools := make([]openai.ChatCompletionToolUnionParam, 0, len(req.Tools))
	for _, t := range req.Tools {
		def := shared.FunctionDefinitionParam{Name: t.Name, Parameters: shared.FunctionParameters(t.Parameters)}
		if t.Description != "" {
			def.Description = openai.String(t.Description)
		}
		tools = append(tools, openai.ChatCompletionFunctionTool(def))
	}
	return msgs, tools, nil
}

// stripToolBlock removes the first tool block of an answer.
func stripToolBlock(text string) string {
	start := strings.Index(text, "```tool")
	if start < 0 {
		return text
	}
	end := strings.Index(text[start+len("```tool"):], "```")
	if end < 0 {
		return text[:start]
	}
	return text[:start] + text[start+len("```tool")+end+3:]
}

// answerWithToolCalls is a completion's text with its first tool call, if any, written in the plain-text protocol
// (one call per turn: further calls are dropped, as the agent runs one tool per turn).
func answerWithToolCalls(msg openai.ChatCompletionMessage) string {
	text := msg.Content
	for _, tc := range msg.ToolCalls {
		if tc.Function.Name == "" {
			continue
		}
		c := offlinetask.AgentCall{Tool: tc.Function.Name}
		if err := json.Unmarshal([]byte(tc.Function.Arguments), &c.Args); err != nil && tc.Function.Arguments != "" {
			// Kept as the model wrote it, so the agent sees its call did not decode.
			return strings.TrimSpace(text+"\n\n") + "```tool\n{\"tool\": \"" + tc.Function.Name + "\", \"args\": " +
				tc.Function.Arguments + "}\n```\n"
		}
		if text != "" && !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		return text + offlinetask.FormatAgentCall(c)
	}
	return text
}
