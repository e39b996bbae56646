package offlinetask

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// The agent method's turns (its task is specs.Agent.Task) either call a read-only tool or answer with the edit. Their
// wire format lives here, below both stand-ins, so the activity, the offline stand-in and the fake endpoint read and
// write the same text; the stand-ins register the task under its declaration's name.

// Agent tools, as a tool call names them.
const (
	ToolSearch     = "search"     // args: pattern, regex (bool), path (folder prefix, optional)
	ToolOpen       = "open"       // args: path, start, end (1-based lines, optional)
	ToolList       = "list"       // args: path (a folder, "" or "." for the root)
	ToolDefinition = "definition" // args: name (a Go or Python identifier)
)

// AgentTools lists the tools in the order prompts describe them.
var AgentTools = []string{ToolSearch, ToolOpen, ToolList, ToolDefinition}

// AgentCall is one tool call of the agent.
type AgentCall struct {
	Tool string         `json:"tool"`
	Args map[string]any `json:"args,omitempty"`
}

// String returns an argument as text ("" when absent or not a string).
func (c AgentCall) String(name string) string {
	s, _ := c.Args[name].(string)
	return s
}

// Int returns an argument as a number (0 when absent); numbers may arrive as JSON numbers or as digit strings.
func (c AgentCall) Int(name string) int {
	switch v := c.Args[name].(type) {
	case float64:
		return int(v)
	case int:
		return v
	case string:
		n, _ := strconv.Atoi(strings.TrimSpace(v))
		return n
	}
	return 0
}

// Bool returns an argument as a boolean (false when absent).
func (c AgentCall) Bool(name string) bool {
	switch v := c.Args[name].(type) {
	case bool:
		return v
	case string:
		return v == "true"
	}
	return false
}

// FormatAgentCall writes a tool call in the plain-text protocol: a fenced block tagged tool holding one JSON object.
// It is how endpoints without native tool calling (and the stand-ins) call a tool.
func FormatAgentCall(c AgentCall) string {
	b, _ := json.Marshal(c)
	return "```tool\n" + string(b) + "\n```\n"
}

var toolFence = regexp.MustCompile("(?s)```tool[ \t]*\n(.*?)\n?```")

// ParseAgentCall finds the first tool call of an answer in the plain-text protocol. ok is false when the answer
// holds none (it is the final answer); err is set when a tool block is there but does not decode.
func ParseAgentCall(answer string) (c AgentCall, ok bool, err error) {
	m := toolFence.FindStringSubmatch(answer)
	if m == nil {
		return c, false, nil
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(m[1])), &c); err != nil {
		return c, true, fmt.Errorf("tool call does not decode: %w", err)
	}
	if c.Tool == "" {
		return c, true, fmt.Errorf("tool call names no tool")
	}
	return c, true, nil
}

// AgentStep is one finished turn as the stand-in policy reads it: the call and the text of its result.
type AgentStep struct {
	Call   AgentCall
	Result string
}

// Search results list one hit a line as "path:line: text" (the agent activity writes them so).
var hitLine = regexp.MustCompile(`^([^\s:][^:]*):(\d+):`)

// agentSearches bounds how many identifiers the stand-in searches for, and agentOpens how many files it opens.
const (
	agentSearches = 3
	agentOpens    = 2
)

// NextAgentCall is the deterministic stand-in agent's policy (not a language model): search for each of the first
// terms (the identifiers) in turn, then open the files with the most hits (files outside tests first), then
// answer. ok is false when it is time to answer: the searches and opens are done, or one turn is left.
func NextAgentCall(terms []string, steps []AgentStep, turnsLeft int) (AgentCall, bool) {
	if turnsLeft <= 1 {
		return AgentCall{}, false
	}
	searched, opened := map[string]bool{}, map[string]bool{}
	for _, s := range steps {
		switch s.Call.Tool {
		case ToolSearch:
			searched[s.Call.String("pattern")] = true
		case ToolOpen:
			opened[s.Call.String("path")] = true
		}
	}
	for _, t := range terms[:min(len(terms), agentSearches)] {
		if !searched[t] {
			return AgentCall{Tool: ToolSearch, Args: map[string]any{"pattern": t}}, true
		}
	}
	if len(opened) >= agentOpens {
		return AgentCall{}, false
	}
	for _, path := range rankHits(steps) {
		if !opened[path] {
			return AgentCall{Tool: ToolOpen, Args: map[string]any{"path": path}}, true
		}
	}
	return AgentCall{}, false
}

// rankHits orders the files named by search results: files outside tests before test files, then by hits, then by
// first appearance.
func rankHits(steps []AgentStep) []string {
	count, first := map[string]int{}, map[string]int{}
	var order []string
	for _, s := range steps {
		if s.Call.Tool != ToolSearch {
			continue
		}
		for _, l := range strings.Split(s.Result, "\n") {
			m := hitLine.FindStringSubmatch(l)
			if m == nil {
				continue
			}
			if _, ok := count[m[1]]; !ok {
				first[m[1]] = len(order)
				order = append(order, m[1])
			}
			count[m[1]]++
		}
	}
	isTest := func(p string) bool { return strings.Contains(strings.ToLower(p), "test") }
	sort.SliceStable(order, func(i, j int) bool {
		a, b := order[i], order[j]
		if isTest(a) != isTest(b) {
			return !isTest(a)
		}
		if count[a] != count[b] {
			return count[a] > count[b]
		}
		return first[a] < first[b]
	})
	return order
}
