package e2e

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"ctxlab/results"
	"ctxlab/runfolder"
	"ctxlab/runlog"
	"ctxlab/specs"
	"ctxlab/starter/sweepclient"
	"ctxlab/testkit/e2e"
	"ctxlab/testkit/fakeopenai"
	"ctxlab/workflows"
)

// agentSpec writes the demo spec cut to the agent method on two instances, priced, and returns its path.
func agentSpec(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name+".jsonnet")
	src := "local ctxlab = import 'ctxlab.libsonnet';\n(import '" + demoSpec(t) + "') + { name: '" + name + "', " +
		"dataset+: { limit: 2 }, methods: [ctxlab.methods.agent({ max_turns: 8 })], anchor:: null, " +
		"models: [super.models[0] + { price: { input: 2.5, output: 10 } }] }\n"
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// agentTurnsDone counts the model turns of agent trajectories that finished in a run so far.
func agentTurnsDone(dir string) int {
	atts, _, _ := runlog.Read[runlog.Attempt](filepath.Join(dir, runfolder.AttemptsFile))
	n := 0
	for _, a := range atts {
		if a.Activity == "agent_model_turn" && a.Event == runlog.EventDone {
			n++
		}
	}
	return n
}

// TestAgentCrashMidTrajectory kills the starter with SIGKILL while agent trajectories are half done against the
// fake endpoint, starts it again, and checks that the resumed sweep produces the rows of an uninterrupted one, that
// no turn finished before the kill ran again, and that no request paid before the kill was paid again.
func TestAgentCrashMidTrajectory(t *testing.T) {
	const key = "sk-ctxlab-agent-crash-DO-NOT-LEAK"
	srv := fakeopenai.New(fakeopenai.WithKey(key), fakeopenai.WithDelay(specs.Agent.Task, 250*time.Millisecond))
	hs := httptest.NewServer(srv)
	defer hs.Close()
	t.Setenv("OPENAI_BASE_URL", hs.URL+"/v1")
	t.Setenv("OPENAI_API_KEY", key)

	// The uninterrupted reference run.
	refRuns := t.TempDir()
	spec := agentSpec(t, "agentkill")
	if _, stderr, code := runStarter(t, 10*time.Minute, "run", spec, "--runs", refRuns, "--quiet",
		"--ext-str", "model=openai"); code != 0 {
		t.Fatalf("reference run: exit %d\n%s", code, stderr)
	}
	want := readRows(t, filepath.Join(refRuns, "agentkill", "results.jsonl"))
	refCalls := srv.CallsFor(specs.Agent.Task)
	if len(want) != 2 || refCalls < 4 {
		t.Fatalf("reference run: %d rows, %d agent calls; want 2 rows of several turns", len(want), refCalls)
	}
	for k, r := range want {
		if r[results.FieldError] != nil || r["agent_turns"] == nil || r["agent_calls_search"] == nil {
			t.Fatalf("reference row %v: %v", k, r)
		}
	}

	// The agent spoke OpenAI tool calling: every turn offered the tools, and results went back as tool messages.
	toolResults := 0
	for _, r := range srv.Requests() {
		if r.Task() != specs.Agent.Task {
			continue
		}
		if len(r.Tools) == 0 {
			t.Fatalf("an agent request offered no tools: %+v", r.Messages)
		}
		for _, m := range r.Messages {
			if m.Role == "tool" {
				toolResults++
			}
		}
	}
	if toolResults == 0 {
		t.Error("no agent request carried a tool message")
	}

	runs := t.TempDir()
	dir := filepath.Join(runs, "agentkill")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	e2e.KillWhen(t, starter(ctx, t, "run", spec, "--runs", runs, "--quiet", "--ext-str", "model=openai"),
		"no agent turn finished", 5*time.Minute, 20*time.Millisecond, func() bool { return agentTurnsDone(dir) >= 2 })
	killedAt := time.Now()
	callsBeforeResume := srv.CallsFor(specs.Agent.Task) - refCalls
	atts, _, _ := runlog.Read[runlog.Attempt](filepath.Join(dir, runfolder.AttemptsFile))
	turnDone, trajDone := map[string]bool{}, map[string]bool{}
	for _, a := range atts {
		if a.Event == runlog.EventDone && strings.HasPrefix(a.Activity, "agent_") {
			turnDone[a.Instance+"/"+a.Node] = true
			traj, _, _ := strings.Cut(a.Node, ".") // the agent node of turn <node>.t03.model
			trajDone[a.Instance+"/"+traj] = true
		}
	}
	if rs, _, _ := results.ReadFile(filepath.Join(dir, "results.jsonl")); len(rs) >= len(want) {
		t.Fatalf("the kill came too late: all %d rows were written", len(rs))
	}
	paidBefore, _, _ := paidCalls(t, dir)

	if _, stderr, code := runStarter(t, 10*time.Minute, "run", spec, "--runs", runs, "--quiet",
		"--ext-str", "model=openai"); code != 0 {
		t.Fatalf("resumed run: exit %d\n%s", code, stderr)
	}
	got := readRows(t, filepath.Join(dir, "results.jsonl"))
	if !reflect.DeepEqual(got, want) {
		for k, w := range want {
			if !reflect.DeepEqual(got[k], w) {
				t.Errorf("%v after the crash:\n got %v\nwant %v", k, got[k], w)
			}
		}
	}
	after, _, _ := runlog.Read[runlog.Attempt](filepath.Join(dir, runfolder.AttemptsFile))
	memos := 0
	for _, a := range after {
		if !a.Time.After(killedAt) {
			continue
		}
		if a.Event == runlog.EventStart && turnDone[a.Instance+"/"+a.Node] {
			t.Errorf("turn %s of %s had finished before the kill but started again", a.Node, a.Instance)
		}
		if a.Event == runlog.EventMemo && strings.HasPrefix(a.Activity, "agent_") {
			memos++
		}
	}
	// A trajectory lives in its Agent child workflow's history: the resumed run does not start its finished turns
	// at all (a turn that finished in the instant before the kill is a memo read). The kill landed mid-trajectory
	// when a trajectory with turns done before it ran further turns after it.
	continued := false
	for _, a := range after {
		traj, _, _ := strings.Cut(a.Node, ".")
		if a.Time.After(killedAt) && a.Event == runlog.EventStart && strings.HasPrefix(a.Activity, "agent_") &&
			trajDone[a.Instance+"/"+traj] {
			continued = true
		}
	}
	if !continued {
		t.Error("no trajectory with turns done before the kill went on after it: the kill did not land mid-trajectory")
	}
	checkAgentAudit(t, runs, "agentkill", want)
	paidAfter, _, _ := paidCalls(t, dir)
	for k, n := range paidAfter {
		if n > 1 {
			t.Errorf("request %s paid %d times", k, n)
		}
		if paidBefore[k] > 0 && n != paidBefore[k] {
			t.Errorf("request %s paid before the kill was paid again", k)
		}
	}
	// Calls in flight at the kill (at most one per running trajectory) are the only ones asked twice.
	total := srv.CallsFor(specs.Agent.Task) - refCalls
	if total > refCalls+len(want) {
		t.Errorf("%d agent calls over the killed and resumed runs, want at most %d (the uninterrupted run's %d plus one in flight per trajectory)",
			total, refCalls+len(want), refCalls)
	}
	t.Logf("killed after %d agent calls with %d turn activities done; resumed with %d turn memos, %d agent calls in all (uninterrupted: %d)",
		callsBeforeResume, len(turnDone), memos, total, refCalls)
}

// checkAgentAudit checks that `starter audit --issue ID --method agent` lists each row's trajectory turn by turn: as
// many model turns ended (done, or a memo read) as the row's agent_turns, each run by the issue's Agent child
// workflow.
func checkAgentAudit(t *testing.T, runs, run string, rows map[results.Key]results.Row) {
	t.Helper()
	for k, row := range rows {
		out, _ := mainOut(t, "audit", run, "--runs", runs, "--issue", k.Instance, "--method", k.Method, "--json")
		var rep sweepclient.AuditReport
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatal(err)
		}
		child := workflows.IssueWorkflowID(run, k.Instance) + "/agent/"
		modelTurns := 0
		for _, a := range rep.Activities {
			if a.Activity != "agent_model_turn" {
				continue
			}
			ended := false
			for _, try := range a.Tries {
				ended = ended || try.Event == runlog.EventDone || try.Event == runlog.EventMemo
				if !strings.HasPrefix(try.Workflow, child) {
					t.Errorf("%s: turn %s tried by workflow %q, want the Agent child workflow %s...", k.Instance, a.Key,
						try.Workflow, child)
				}
			}
			if ended {
				modelTurns++
			}
		}
		if turns, _ := row["agent_turns"].(float64); modelTurns == 0 || modelTurns != int(turns) {
			t.Errorf("audit of %s lists %d model turns, the row says %v", k.Instance, modelTurns, row["agent_turns"])
		}
	}
}
