package runstate

import (
	"testing"
	"time"

	"ctxlab/runlog"
	"ctxlab/store/cas"
)

// TestAuditKeepsAgentTurnsWithTheirNode: keeping a method's nodes keeps the turns its agent node recorded as
// sub-nodes, in the order they ran, and drops other nodes' records.
func TestAuditKeepsAgentTurnsWithTheirNode(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var rec Records
	add := func(node, step, act string) {
		at = at.Add(time.Second)
		rec.Attempts = append(rec.Attempts,
			runlog.Attempt{Instance: "i", Node: node, Step: step, Activity: act, Event: runlog.EventStart, Time: at},
			runlog.Attempt{Instance: "i", Node: node, Step: step, Activity: act, Event: runlog.EventDone, Time: at,
				Output: cas.Ref("sha256:" + node)})
	}
	add("agent-1", "agent.agent", "agent")
	add("agent-1.t00.model", "agent.agent turn 0 (model)", "agent_model_turn")
	add("agent-1.t00.tool", "agent.agent turn 0 (tool)", "agent_tool_turn")
	add("agent-1.t01.model", "agent.agent turn 1 (model)", "agent_model_turn")
	add("patch-2", "other.patch", "patch")
	acts := Audit(rec, AuditOptions{Nodes: []Node{{Key: "agent-1", Activity: "agent"}, {Key: "patch-2", Activity: "patch"}},
		Keep: map[string]bool{"agent-1": true}})
	var got []string
	for _, a := range acts {
		got = append(got, a.Key)
		if len(a.Tries) != 1 || a.Tries[0].Output != cas.Ref("sha256:"+a.Key) {
			t.Errorf("%s: tries %+v", a.Key, a.Tries)
		}
	}
	want := []string{"agent-1", "agent-1.t00.model", "agent-1.t00.tool", "agent-1.t01.model"}
	if len(got) != len(want) {
		t.Fatalf("audit nodes %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("audit nodes %v, want %v", got, want)
			break
		}
	}
}
