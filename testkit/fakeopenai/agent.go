package fakeopenai

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"ctxlab/internal/offlinetask"
	"ctxlab/specs"
)

// The agent task's prompt answer: the stand-in policy of internal/offlinetask over what the conversation shows
// (the issue's identifiers searched, the files with most hits opened), then an empty edit, as the fake cannot
// write code; and the markers of the agent's prompts, so that an agent turn that comes without its task header is
// known. Registered before the other tasks (this file's init runs first): an agent's prompt also speaks of diffs.
func init() {
	offlinetask.Register(specs.Agent.Task, offlinetask.Answerer{FromPrompt: agentAnswer,
		Markers: []string{"```tool", "read-only tools"}})
}

var (
	turnsLeftRE = regexp.MustCompile(`\((\d+) turns? left\)`)
	maxTurnsRE  = regexp.MustCompile(`(?i)at most (\d+) turns`)
	toolBlockRE = regexp.MustCompile("(?s)```tool[ \t]*\n.*?\n?```")
)

// agentAnswer answers one agent turn from the conversation's text.
func agentAnswer(prompt string) string {
	c, ok := offlinetask.NextAgentCall(agentTerms(prompt), agentSteps(prompt), agentTurnsLeft(prompt))
	if !ok {
		return "I have looked around, but I cannot write a reliable patch.\n\n```diff\n```\n"
	}
	return "Let me look.\n\n" + offlinetask.FormatAgentCall(c)
}

// agentTerms are the issue's identifiers, or its longest words when it names none.
func agentTerms(prompt string) []string {
	issue := issueText(prompt)
	if ids := identifiers(issue); len(ids) > 0 {
		return ids
	}
	return uniq(words(issue))
}

// agentSteps reads the finished turns from a conversation: each tool block, and the text after it up to the next
// one as its result.
func agentSteps(prompt string) []offlinetask.AgentStep {
	locs := toolBlockRE.FindAllStringIndex(prompt, -1)
	var steps []offlinetask.AgentStep
	for i, loc := range locs {
		c, ok, err := offlinetask.ParseAgentCall(prompt[loc[0]:loc[1]])
		if !ok || err != nil {
			continue
		}
		end := len(prompt)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		steps = append(steps, offlinetask.AgentStep{Call: c, Result: prompt[loc[1]:end]})
	}
	// The prompt's own example of a call is not a turn: it comes before the first result.
	if len(steps) > 0 && !strings.Contains(steps[0].Result, "Result of ") {
		steps = steps[1:]
	}
	return steps
}

// agentTurnsLeft is the count the last tool result states, else the prompt's "at most N turns", else plenty.
func agentTurnsLeft(prompt string) int {
	if m := turnsLeftRE.FindAllStringSubmatch(prompt, -1); len(m) > 0 {
		n, _ := strconv.Atoi(m[len(m)-1][1])
		return n
	}
	if m := maxTurnsRE.FindStringSubmatch(prompt); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 1 << 10
}

// toolCallsOf turns an answer's plain-text tool call into the OpenAI tool_calls form, for a request that offered
// tools: the message a model with native tool calling would send. ok is false when the answer calls no tool.
func toolCallsOf(answer string, callID string) (msg map[string]any, ok bool) {
	c, isCall, err := offlinetask.ParseAgentCall(answer)
	if !isCall || err != nil {
		return nil, false
	}
	args, _ := json.Marshal(c.Args)
	if c.Args == nil {
		args = []byte("{}")
	}
	return map[string]any{
		"role":    "assistant",
		"content": nil,
		"tool_calls": []any{map[string]any{
			"id":       callID,
			"type":     "function",
			"function": map[string]any{"name": c.Tool, "arguments": string(args)},
		}},
	}, true
}

// toolCallID names the n-th call's tool call.
func toolCallID(n int) string { return fmt.Sprintf("call_fake_%d", n) }
