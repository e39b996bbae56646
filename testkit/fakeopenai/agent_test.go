package fakeopenai

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"ctxlab/internal/offlinetask"
	"ctxlab/specs"
)

const agentIssue = "<issue>\nCalling `ParseRow` on a quoted field drops it; see `TableWriter`.\n</issue>\n\n" +
	"You can call one read-only tool per turn, for example\n```tool\n{\"tool\": \"search\", \"args\": {\"pattern\": \"x\"}}\n```\n" +
	"You have at most 6 turns."

// TestAgentAnswerPlainText: over the plain-text protocol the fake searches the issue's identifiers (not the
// prompt's example), opens the file with most hits, then answers with an empty edit.
func TestAgentAnswerPlainText(t *testing.T) {
	conv := agentIssue
	var tools []string
	for turn := 0; turn < 6; turn++ {
		answer := DefaultAnswer(chatReq(specs.Agent.Task, conv))
		c, ok, err := offlinetask.ParseAgentCall(answer)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			if !strings.Contains(answer, "```diff\n```") {
				t.Errorf("final answer %q, want an empty diff", answer)
			}
			break
		}
		tools = append(tools, c.Tool+" "+c.String("pattern")+c.String("path"))
		result := "1 matches\nsrc/rows.py:3: def ParseRow(line):\n"
		if c.Tool == "open" {
			result = "[src/rows.py lines 1-3 of 3]\n"
		}
		conv += "\n\n" + answer + "\n\nResult of " + c.Tool + " (" + string(rune('5'-turn)) + " turns left):\n" + result
	}
	want := "search ParseRow|search TableWriter|open src/rows.py"
	if got := strings.Join(tools, "|"); got != want {
		t.Errorf("trajectory %q, want %q", got, want)
	}
	if got := agentTurnsLeft("x (1 turn left)\ny (3 turns left)"); got != 3 {
		t.Errorf("turns left %d, want the last count 3", got)
	}
}

// TestAgentNativeToolCalls: a request that offers tools gets the fake's tool calls in OpenAI's tool_calls form,
// readable by openai-go, and a conversation carrying them back (assistant tool_calls, tool results) goes on.
func TestAgentNativeToolCalls(t *testing.T) {
	srv := httptest.NewServer(New())
	defer srv.Close()
	client := openai.NewClient(option.WithBaseURL(srv.URL+"/v1"), option.WithAPIKey("k"),
		option.WithHeader(offlinetask.TaskHeader, specs.Agent.Task))
	var toolParams []openai.ChatCompletionToolUnionParam
	for _, name := range offlinetask.AgentTools {
		toolParams = append(toolParams, openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: name, Parameters: shared.FunctionParameters{"type": "object"}}))
	}
	msgs := []openai.ChatCompletionMessageParamUnion{openai.UserMessage(agentIssue)}
	var calls []string
	for turn := 0; turn < 6; turn++ {
		resp, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
			Model: "m", Messages: msgs, Tools: toolParams})
		if err != nil {
			t.Fatal(err)
		}
		choice := resp.Choices[0]
		if len(choice.Message.ToolCalls) == 0 {
			if choice.FinishReason != "stop" || !strings.Contains(choice.Message.Content, "```diff") {
				t.Errorf("final: %q %q", choice.FinishReason, choice.Message.Content)
			}
			break
		}
		tc := choice.Message.ToolCalls[0]
		var args map[string]any
		if err := json.Unmarshal([]byte(tc.Function.Arguments), &args); err != nil || choice.FinishReason != "tool_calls" ||
			tc.ID == "" {
			t.Fatalf("tool call %+v (%v), finish %q", tc, err, choice.FinishReason)
		}
		calls = append(calls, tc.Function.Name)
		msgs = append(msgs, choice.Message.ToParam(),
			openai.ToolMessage("Result of "+tc.Function.Name+" (4 turns left):\nsrc/rows.py:3: def ParseRow(line):\n", tc.ID))
	}
	if got := strings.Join(calls, ","); got != "search,search,open" {
		t.Errorf("native tool calls %q, want search,search,open", got)
	}
}
