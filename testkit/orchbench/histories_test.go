package orchbench

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/prototext"

	"ctxlab/activities"
	"ctxlab/activities/api"
	"ctxlab/activities/limiter"
	"ctxlab/dataset/swebench"
	"ctxlab/demobench"
	"ctxlab/internal/logs"
	"ctxlab/jsonnet"
	"ctxlab/results"
	"ctxlab/specs"
	"ctxlab/starter/embedded"
	"ctxlab/store/cas"
	"ctxlab/wiring"
	"ctxlab/workflows"
)

var saveHistories = flag.String("orch.save-histories", "", "write the Sweep and one Issue history of a small demo "+
	"sweep into this `folder` as NAME-SUFFIX.json (see workflows/replay_test.go)")

var historySuffix = flag.String("orch.history-suffix", "v4", "suffix of the saved histories' names")

var hostileID = flag.Bool("orch.hostile-id", false, "give the second instance an id that is no plain workflow id "+
	"(unicode and a newline), so the Sweep's history holds the version marker of its digested Issue id")

// hostileInstanceID is the id -orch.hostile-id gives the sweep's second instance.
const hostileInstanceID = "acme__semver-1 ✓\nsecond line"

// TestSaveHistories makes the saved histories workflows' TestSavedHistoriesReplay replays: the demo's reference
// methods, cq2care and the agent on its first two instances, run by today's code, with run-folder paths relative
// and a fixed worker identity, so the files name nothing of the machine that made them. Beside the Sweep and one
// Issue, the Agent child workflow of that issue's agent node is saved (when the code runs one).
//
//	go test ./testkit/orchbench/ -run TestSaveHistories -orch.save-histories "$PWD/workflows/testdata/histories"
//
// With -orch.hostile-id -orch.history-suffix safeids-v5 the second instance's id is no plain workflow id: the Sweep's
// history then holds safeIDChange's marker and its digested Issue id (sweep-safeids-v5.json).
func TestSaveHistories(t *testing.T) {
	if *saveHistories == "" {
		t.Skip("-orch.save-histories not set")
	}
	out, err := filepath.Abs(*saveHistories)
	if err != nil {
		t.Fatal(err)
	}
	e, err := jsonnet.Compile(filepath.Join("..", "..", "specs", "demo.jsonnet"), jsonnet.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e.Methods = slices.DeleteFunc(e.Methods, func(m specs.Method) bool {
		return !slices.Contains([]string{"no_source", "oracle_files", "cq2care", "agent"}, m.Name)
	})
	e.Anchor = "cq2care"
	e.Dataset.Limit = 2
	plan, err := specs.BuildPlan(e)
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	runs := "runs"
	res, err := demobench.Generate(filepath.Join(runs, e.Name, "dataset"))
	if err != nil {
		t.Fatal(err)
	}
	if *hostileID {
		rows, err := swebench.ReadFile(res.File)
		if err != nil {
			t.Fatal(err)
		}
		rows[1].InstanceID = hostileInstanceID
		var b bytes.Buffer
		if err := swebench.Write(&b, rows); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(res.File, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Relative, as runs is: the dataset's path reaches every history's inputs.
	wd, _ := os.Getwd()
	abs, _ := filepath.Abs(res.File)
	if e.Dataset.File, err = filepath.Rel(wd, abs); err != nil {
		t.Fatal(err)
	}

	ctx := context.Background()
	c := historyClient(t, ctx)
	a := activities.New(runs, zerolog.Nop())
	stop, err := wiring.Start(c, a, wiring.Options{Kinds: wiring.AllKinds})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	store, err := a.Store(e.Name)
	if err != nil {
		t.Fatal(err)
	}
	planRef, err := cas.PutJSON(ctx, store, plan)
	if err != nil {
		t.Fatal(err)
	}
	in := workflows.SweepInput{Run: e.Name, Title: "ctxlab: " + e.Name, Plan: planRef, Dataset: e.Dataset,
		Grading: e.Grading, Concurrency: e.Limits.Concurrency, Retries: e.Limits.Retries, Debug: e.Debug,
		Queues: workflows.DefaultQueues}
	for _, arm := range plan.Arms {
		in.Order = append(in.Order, results.Key{Method: arm.Method, Model: arm.Model})
	}
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "sweep/" + e.Name,
		TaskQueue: workflows.DefaultQueues.Workflow}, workflows.SweepName, in)
	if err != nil {
		t.Fatal(err)
	}
	var sr workflows.SweepResult
	if err := run.Get(ctx, &sr); err != nil || len(sr.Failed) > 0 {
		t.Fatalf("sweep: %v %v", err, sr.Failed)
	}
	issue := workflows.IssueWorkflowID(e.Name, "acme__humanize-1")
	ids := map[string]string{"sweep": "sweep/" + e.Name, "issue": issue}
	for _, n := range plan.Nodes {
		if n.Activity == "agent" { // the Agent child workflow of the issue's agent node
			ids["agent"] = workflows.AgentWorkflowID(issue, n.Key)
		}
	}
	for name, id := range ids {
		saveHistory(t, c, id, "", filepath.Join(out, name+"-"+*historySuffix+".json"), wd)
	}
}

// saveHistory writes the history of a workflow run (its current run when runID is "") to path as JSON, refusing a
// history that names the folder the test ran in.
func saveHistory(t *testing.T, c client.Client, id, runID, path, wd string) {
	t.Helper()
	it := c.GetWorkflowHistory(context.Background(), id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	h := &historypb.History{}
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		h.Events = append(h.Events, ev)
	}
	b, err := protojson.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	// Payloads are base64 in the JSON; the text format shows them as they are.
	if strings.Contains(string(b), wd) || strings.Contains(prototext.Format(h), wd) {
		t.Fatalf("%s's history names the folder it ran in", id)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d events -> %s", id, len(h.Events), path)
}

// TestSaveBudgetHistories makes the saved history of a Budget workflow run that workflows' TestSavedHistoriesReplay
// replays (budget-SUFFIX.json): the limits signalled, holders granted, one refused as quiet, settled, paced by a
// provider's rps, an allowance granted, paid from and given back, the cap raised while no worker runs the budget
// and a sync decided under it in the same workflow task, holders whose leases lapse on the workflow's timer, and a
// continue-as-new past a small history bound.
//
//	go test ./testkit/orchbench/ -run TestSaveBudgetHistories -orch.history-suffix v1 \
//	    -orch.save-histories "$PWD/workflows/testdata/histories"
func TestSaveBudgetHistories(t *testing.T) {
	if *saveHistories == "" {
		t.Skip("-orch.save-histories not set")
	}
	out, err := filepath.Abs(*saveHistories)
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	wd, _ := os.Getwd()
	ctx := context.Background()
	c := historyClient(t, ctx)
	w := worker.New(c, workflows.DefaultQueues.Workflow, worker.Options{})
	workflows.Register(w)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { w.Stop() }() // the worker started last
	id := api.BudgetWorkflowID("hist")
	run, err := c.SignalWithStartWorkflow(ctx, id, api.BudgetLimitsSignal, limiter.Limits{SpendUSD: 1,
		Providers: map[string]specs.ProviderLimit{"openai": {InFlight: 3, RPS: 20}}},
		client.StartWorkflowOptions{ID: id, TaskQueue: workflows.DefaultQueues.Workflow}, workflows.BudgetName,
		workflows.BudgetInput{Run: "hist", MaxHistory: 60})
	if err != nil {
		t.Fatal(err)
	}
	sync := func(s limiter.Sync) string {
		h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: api.BudgetSyncUpdate,
			Args: []any{s}, WaitForStage: client.WorkflowUpdateStageCompleted})
		var rep limiter.Reply
		if err == nil {
			err = h.Get(ctx, &rep)
		}
		if err != nil {
			return err.Error()
		}
		return fmt.Sprint(rep.Answers)
	}
	ask := func(id string, usd float64) []limiter.Ask {
		return []limiter.Ask{{ID: id, Provider: "openai", USD: usd, Priced: true}}
	}
	t.Log(sync(limiter.Sync{Holder: "a", Asks: ask("a1", 0.6)}))
	t.Log(sync(limiter.Sync{Holder: "b", Asks: ask("b1", 0.5)})) // refused: it can only wait
	t.Log(sync(limiter.Sync{Holder: "a", Settles: []limiter.Settle{{ID: "a1", USD: 0.2, Sent: true}}}))
	t.Log(sync(limiter.Sync{Holder: "b", Asks: append(ask("b1", 0.3), ask("b2", 0.3)...)}))
	t.Log(sync(limiter.Sync{Holder: "p", Seq: 1, Asks: []limiter.Ask{{ID: "p1", Provider: "other", USD: 0.1,
		Priced: true, ForPool: true, Need: 0.1, Extra: 0.3}}, InFlight: 1}))
	t.Log(sync(limiter.Sync{Holder: "p", Seq: 2, Settles: []limiter.Settle{{ID: "p1", USD: 0.05, Sent: true,
		Pool: true}}, Return: 0.1}))
	// The cap raised while no worker runs the budget, and a sync waiting beside it: one workflow task takes both,
	// and the sync is decided under the raised cap (limitsFirstChange).
	w.Stop()
	if err := c.SignalWorkflow(ctx, id, "", api.BudgetLimitsSignal, limiter.Limits{SpendUSD: 2,
		Providers: map[string]specs.ProviderLimit{"openai": {InFlight: 3, RPS: 20}}}); err != nil {
		t.Fatal(err)
	}
	raised := make(chan string, 1)
	go func() { raised <- sync(limiter.Sync{Holder: "d", Asks: ask("d1", 1)}) }()
	time.Sleep(2 * time.Second) // the update reaches the server before the worker comes back
	w = worker.New(c, workflows.DefaultQueues.Workflow, worker.Options{})
	workflows.Register(w)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	if got := <-raised; !strings.Contains(got, limiter.VerdictGranted) {
		t.Fatalf("a $1 call under the cap raised to $2 with it: %s", got)
	}
	time.Sleep(limiter.LeaseTTL + 5*time.Second) // b and d fall silent: their leases lapse on the workflow's timer
	for i := 0; ; i++ {
		desc, err := c.DescribeWorkflowExecution(ctx, id, "")
		if err != nil {
			t.Fatal(err)
		}
		if desc.WorkflowExecutionInfo.Execution.RunId != run.GetRunID() {
			break // continued as new
		}
		if i > 100 {
			t.Fatal("the budget never continued as new")
		}
		call := fmt.Sprint("c", i)
		t.Log(sync(limiter.Sync{Holder: "c", Asks: ask(call, 0.01), Held: []string{call},
			Settles: []limiter.Settle{{ID: fmt.Sprint("c", i-1), USD: 0.01, Sent: true}}}))
	}
	saveHistory(t, c, id, run.GetRunID(), filepath.Join(out, "budget-"+*historySuffix+".json"), wd)
}

// historyClient starts an embedded Temporal server in the working folder and returns a client of it with the fixed
// identity the saved histories carry; both stop when the test ends.
func historyClient(t *testing.T, ctx context.Context) client.Client {
	t.Helper()
	srv, err := embedded.Start(ctx, embedded.Options{DBFile: "temporal.db", LogFile: "temporal.log",
		Namespace: "ctxlab-test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	c, err := client.Dial(client.Options{HostPort: srv.HostPort(), Namespace: "ctxlab-test",
		Identity: "ctxlab-histories", Logger: logs.Temporal{L: zerolog.Nop()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}
