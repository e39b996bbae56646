package offlinetask

import (
	"reflect"
	"testing"
)

// TestAgentCallRoundTrip: a call written in the plain-text protocol parses back; an answer without a tool block is
// final; a broken block is an error.
func TestAgentCallRoundTrip(t *testing.T) {
	c := AgentCall{Tool: ToolOpen, Args: map[string]any{"path": "a/b.go", "start": float64(3)}}
	got, ok, err := ParseAgentCall("I will look.\n\n" + FormatAgentCall(c) + "\nthen more")
	if !ok || err != nil || !reflect.DeepEqual(got, c) || got.Int("start") != 3 || got.String("path") != "a/b.go" {
		t.Errorf("round trip: %+v %v %v", got, ok, err)
	}
	if _, ok, _ := ParseAgentCall("```diff\n--- a/x\n```\n"); ok {
		t.Error("a diff was taken for a tool call")
	}
	if _, ok, err := ParseAgentCall("```tool\n{not json\n```"); !ok || err == nil {
		t.Errorf("broken block: ok %v err %v", ok, err)
	}
}

// TestAgentPolicy: the stand-in searches its terms, opens the files with most hits (tests last), then answers; with
// one turn left it answers at once.
func TestAgentPolicy(t *testing.T) {
	terms := []string{"ParseRow", "Table"}
	var steps []AgentStep
	results := map[string]string{
		"ParseRow": "3 matches for \"ParseRow\"\ntests/test_rows.py:4: ParseRow()\ntests/test_rows.py:9: ParseRow()\ntab/rows.py:10: def ParseRow():\n",
		"Table":    "1 matches for \"Table\"\ntab/table.py:2: class Table:\n",
	}
	var tools []string
	for turn := 0; turn < 10; turn++ {
		c, ok := NextAgentCall(terms, steps, 10-turn)
		if !ok {
			break
		}
		tools = append(tools, c.Tool+" "+c.String("pattern")+c.String("path"))
		steps = append(steps, AgentStep{Call: c, Result: results[c.String("pattern")]})
	}
	want := []string{"search ParseRow", "search Table", "open tab/rows.py", "open tab/table.py"}
	if !reflect.DeepEqual(tools, want) {
		t.Errorf("trajectory %q, want %q", tools, want)
	}
	if _, ok := NextAgentCall(terms, nil, 1); ok {
		t.Error("with one turn left the stand-in called a tool")
	}
}
