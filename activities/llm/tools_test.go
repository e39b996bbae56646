package llm

import (
	"context"
	"strings"
	"testing"

	"ctxlab/internal/offlinetask"
	"ctxlab/specs"
	"ctxlab/testkit/fakeopenai"
)

func agentConversation() []Message {
	return []Message{
		{Role: "system", Content: "You fix issues."},
		{Role: "user", Content: "<issue>\n`ParseRow` drops quoted fields; see `TableWriter`.\n</issue>\nYou have at most 6 turns."},
		{Role: "assistant", Content: "Let me look.\n\n" + offlinetask.FormatAgentCall(offlinetask.AgentCall{
			Tool: offlinetask.ToolSearch, Args: map[string]any{"pattern": "ParseRow"}})},
		{Role: "user", Content: "Result of search (5 turns left):\nsrc/rows.py:3: def ParseRow(line):\n"},
	}
}

// TestNativeToolCalls: with tools offered, the plain-text conversation goes out as OpenAI tool calls and a tool
// message, the tools are offered, and the model's tool call comes back in the plain-text protocol; without tools the
// same conversation goes out as plain messages.
func TestNativeToolCalls(t *testing.T) {
	fake := fakeopenai.New(fakeopenai.WithKey(testKey))
	serve(t, fake)
	p := newProvider(t)
	tools := []Tool{{Name: offlinetask.ToolSearch, Parameters: map[string]any{"type": "object"}},
		{Name: offlinetask.ToolOpen, Parameters: map[string]any{"type": "object"}}}
	resp, err := p.Complete(context.Background(), Request{Task: specs.Agent.Task, Messages: agentConversation(),
		Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	c, ok, perr := offlinetask.ParseAgentCall(resp.Text)
	if !ok || perr != nil || c.Tool != offlinetask.ToolSearch || c.String("pattern") != "TableWriter" {
		t.Errorf("answer %q: call %+v ok %v err %v; want the fake's next search, in the plain-text protocol", resp.Text, c, ok, perr)
	}
	reqs := fake.Requests()
	var roles []string
	for _, m := range reqs[0].Messages {
		roles = append(roles, m.Role)
	}
	if got := strings.Join(roles, ","); got != "system,user,assistant,tool" || len(reqs[0].Tools) == 0 {
		t.Errorf("sent roles %s, tools %s; want the result as a tool message and the tools offered", got, reqs[0].Tools)
	}
	if am := reqs[0].Messages[2].Content; !strings.Contains(am, `"pattern":"ParseRow"`) || !strings.Contains(am, "Let me look.") {
		t.Errorf("assistant message as the server read it: %q", am)
	}

	if _, err := p.Complete(context.Background(), Request{Task: specs.Agent.Task, Messages: agentConversation()}); err != nil {
		t.Fatal(err)
	}
	plain := fake.Requests()[1]
	roles = roles[:0]
	for _, m := range plain.Messages {
		roles = append(roles, m.Role)
	}
	if got := strings.Join(roles, ","); got != "system,user,assistant,user" || len(plain.Tools) != 0 {
		t.Errorf("without tools: roles %s, tools %s", got, plain.Tools)
	}
}

func TestStripToolBlock(t *testing.T) {
	in := "before\n```tool\n{\"tool\":\"list\"}\n```\nafter"
	if got := stripToolBlock(in); got != "before\n\nafter" {
		t.Errorf("%q", got)
	}
}
