// Package api is the contract between the workflows and the activities: the names of the sweep's bookkeeping
// activities and of the agent's turns, the inputs and outputs every activity exchanges with the workflows, and the
// error types the workflows act on. It holds types only, so the workflows depend on it rather than on the
// activities' implementation (and its model clients, sandboxes and stores); both sides name its declarations.
package api

import (
	"time"

	"ctxlab/activities/limiter"
	"ctxlab/results"
	"ctxlab/specs"
	"ctxlab/store/cas"
)

// Names of the sweep's bookkeeping activities. They are not DAG steps, so specs cannot name them.
const (
	LoadDatasetName = "ctxlab.load_dataset"
	LoadPlanName    = "ctxlab.load_plan"
	RecordName      = "ctxlab.record"
	SummarizeName   = "ctxlab.summarize"
	// StoreRowsName stores an issue's rows in the run's content store, for the starter that watches the sweep to
	// write (RecordName and SummarizeName wrote them into the run folder of whichever cpu worker ran them).
	StoreRowsName = "ctxlab.store_rows"
	// SummarizeStoredName returns the summary of a finished sweep's stored rows, for its result: what the Web UI
	// and a history show of a sweep, whichever machine's disk its summary.md is on.
	SummarizeStoredName = "ctxlab.summarize_stored"
	// HandshakeName answers a starter's handshake (Hello) on a worker process's own task queue.
	HandshakeName = "ctxlab.handshake"
)

// HandshakeKey is the folder of a run's objects where a starter leaves the object its workers must read back.
const HandshakeKey = "handshake"

// HandshakeInput asks a worker process to read the object the starter wrote under Key in the run's objects, and,
// with Budget, an llm worker to learn the limits its paid calls will be held to from the run's budget workflow.
type HandshakeInput struct {
	Run    string `json:"run"`
	Key    string `json:"key"`
	Nonce  string `json:"nonce"`
	Budget bool   `json:"budget,omitempty"`
}

// Hello is a worker process's answer to a handshake: who it is and what it serves, so that a starter refuses to run
// a sweep on workers that would not compute what it would.
type Hello struct {
	// Worker is the process's Temporal identity (host:pid:tag), Host its host name.
	Worker string `json:"worker"`
	Host   string `json:"host"`
	// Version names the ctxlab build (internal/buildid.Version).
	Version string `json:"version"`
	// Kinds are the queue kinds it serves (workflow, llm, cpu, grade).
	Kinds []string `json:"kinds"`
	// Store names its store of the run (no credentials); SeesRun says it read the starter's object back from it,
	// StoreError why not.
	Store      string `json:"store"`
	SeesRun    bool   `json:"sees_run"`
	StoreError string `json:"store_error,omitempty"`
	// Limits are the queue limits it applies, from the spec it was given (Spec: that experiment's name).
	Limits specs.QueueLimits `json:"limits"`
	Spec   string            `json:"spec,omitempty"`
	// Budget, asked of an llm worker, is what its purse learned from the run's budget workflow (BudgetWorkflowID):
	// the spend cap and provider limits its paid calls will be held to; BudgetError says why it learned none.
	Budget      *limiter.Limits `json:"budget,omitempty"`
	BudgetError string          `json:"budget_error,omitempty"`
}

// Names of the agent's turn activities: the Agent child workflow, which the Issue workflow starts for each agent
// node, runs them one by one. The agent node activity runs the same functions in a loop for the Issue workflows
// started before the child workflow existed (workflows' agentChange), which replay it.
const (
	AgentModelTurnName = "agent_model_turn" // llm queue: one model call
	AgentToolTurnName  = "agent_tool_turn"  // cpu queue: one tool call
	AgentFinishName    = "agent_finish"     // cpu queue: the trajectory's row fields
)

// AgentTurnInput is one turn of an agent trajectory: the agent node's own input, the turn's number and the
// trajectory so far (a reference into the content store; empty before the first turn).
type AgentTurnInput struct {
	Node  NodeInput `json:"node"`
	Turn  int       `json:"turn"`
	State cas.Ref   `json:"state,omitempty"`
}

// AgentTurnOutput is what a turn activity returns: the trajectory after the turn, and whether it has ended. Turns
// add no row fields: the agent's row comes from the finish activity (AgentFinishName).
type AgentTurnOutput struct {
	State cas.Ref `json:"state"`
	Done  bool    `json:"done,omitempty"`
}

// InstanceRef points at one dataset row stored in the run's content store.
type InstanceRef struct {
	ID  string  `json:"id"`
	Ref cas.Ref `json:"ref"`
}

// NodeInput is what every DAG node activity receives.
type NodeInput struct {
	Run      string      `json:"run"`
	Instance InstanceRef `json:"instance"`
	// Node is the node's key; Step one of the "method.step" labels that use it, for messages.
	Node   string         `json:"node"`
	Step   string         `json:"step"`
	Params map[string]any `json:"params,omitempty"`
	// Inputs are the outputs of the nodes this one depends on, by input name.
	Inputs  map[string]NodeOutput `json:"inputs,omitempty"`
	Dataset specs.Dataset         `json:"dataset"`
	Debug   specs.Debug           `json:"debug,omitempty"`
	// Shipped, when set, names the run's ShippedFolders: the starter's folders the run reads are to be taken from
	// the store, not from a path on the worker's machine.
	Shipped cas.Ref `json:"shipped,omitempty"`
}

// ShippedFolders are the folders of the starter's machine that a run reads (local repositories, a Go module proxy
// folder), each archived in the run's content store (store/archive), by the path the spec's templates give them
// there: workers that share no disk with the starter unpack them instead of reading a path of theirs.
type ShippedFolders map[string]cas.Ref

// NodeOutput is what every DAG node activity returns: a reference to its large output, and the small fields it
// contributes to the results rows of the methods that use it.
type NodeOutput struct {
	Ref cas.Ref        `json:"ref,omitempty"`
	Row map[string]any `json:"row,omitempty"`
}

// LoadDatasetInput names the dataset of a run.
type LoadDatasetInput struct {
	Run     string        `json:"run"`
	Dataset specs.Dataset `json:"dataset"`
}

// LoadPlanInput points at a compiled plan in the run's store.
type LoadPlanInput struct {
	Run  string  `json:"run"`
	Plan cas.Ref `json:"plan"`
}

// RecordInput carries one issue's rows.
type RecordInput struct {
	Run  string        `json:"run"`
	Rows []results.Row `json:"rows"`
}

// IssueRows points at the rows an Issue workflow stored (StoreRowsName): a JSON array of results.Row in the run's
// content store.
type IssueRows struct {
	Instance string  `json:"instance"`
	Rows     cas.Ref `json:"rows"`
}

// SummarizeInput names a run and the order of its methods.
type SummarizeInput struct {
	Run   string        `json:"run"`
	Title string        `json:"title"`
	Order []results.Key `json:"order"`
}

// SummarizeStoredInput names a finished sweep's stored rows (SweepResult.Rows) and how its summary is titled and
// ordered.
type SummarizeStoredInput struct {
	Run   string        `json:"run"`
	Title string        `json:"title"`
	Order []results.Key `json:"order"`
	Rows  []IssueRows   `json:"rows"`
}

// Error types of failures that retrying cannot fix; the Issue workflow records them on the row.
const (
	ErrBadInput    = "BadInput"    // a dataset row, parameter or input that cannot be used
	ErrRepo        = "RepoError"   // a repository or commit that cannot be found
	ErrUnsupported = "Unsupported" // a provider or option this build does not offer
	ErrPanic       = "Panic"       // a bug in ctxlab: recorded, never retried in a loop

	// ErrWorkerStopped is retryable: the worker shut down while the node ran. The Issue workflow does not count
	// it against the node.
	ErrWorkerStopped = "WorkerStopped"
)

// ErrSpendLimit is the type of the error a model call fails with when the run has spent its cap. The Issue
// workflow does not fail the node: it waits and tries again, so the sweep continues once the cap is raised.
const ErrSpendLimit = "SpendLimit"

// ErrProviderWait is the type of the error a model call fails with when the endpoint asked to wait longer than an
// activity should sleep (a 429 with a Retry-After of an hour): its details are a ProviderWait. The Issue workflow
// does not fail the node: it waits that long on a durable timer and runs it again.
const ErrProviderWait = "ProviderWait"

// ProviderWait is the detail of an ErrProviderWait error.
type ProviderWait struct {
	Kind string        `json:"kind"`
	Wait time.Duration `json:"wait"`
}

// ErrCallUsage is the type of the application error that a failed node activity's error has as its cause when the
// node's model calls used or bought anything: its detail is a CallUsage. Its heartbeats carry the same CallUsage
// (Spent only) from one attempt to the next, so a node whose worker was lost still says what it spent (a heartbeat
// timeout's last details).
const ErrCallUsage = "CallUsage"

// CallUsage is what a node activity's model calls used, as row fields (specs.UsageFields, summed over calls).
// Spent is what bought no answer a later attempt can get again: calls billed without an answer and, with the
// response cache off, every paid answer, over every attempt of the activity. Answered is the answers its last
// attempt got before it failed (from the response cache at their original price), as a successful attempt's row
// counts them, and for an agent's turn what the trajectory's earlier turns used. The Issue workflow adds the Spent of every failed run of a node, and the Answered of the run that
// failed the node, to the rows of its steps; a successful attempt's row already holds its earlier attempts' Spent.
type CallUsage struct {
	Spent    map[string]float64 `json:"spent,omitempty"`
	Answered map[string]float64 `json:"answered,omitempty"`
}

// The run's budget workflow holds its spend cap and provider limits (a limiter.Ledger) for every worker of the
// run, on any machine: the starter signals the spec's limits to it, workers' paid calls ask and settle through
// its sync update, and `starter status` queries it.
const (
	// BudgetSyncUpdate is the update a worker process's purse sends (a limiter.Sync, answered by a limiter.Reply).
	BudgetSyncUpdate = "sync"
	// BudgetLimitsSignal sets the run's limits (a limiter.Limits).
	BudgetLimitsSignal = "limits"
	// BudgetQuery returns the ledger's limiter.Status.
	BudgetQuery = "budget"
	// ErrBudgetQuiet is the type of the error the sync update is refused with when it would change nothing (every
	// ask in it waits): refused before it is accepted, it adds no event to the history.
	ErrBudgetQuiet = "BudgetQuiet"
	// ErrBudgetMoving is the type of the error the sync update is refused with while the workflow continues as new:
	// the purse sends it again.
	ErrBudgetMoving = "BudgetMoving"
)

// BudgetWorkflowID is the ID of a run's budget workflow.
func BudgetWorkflowID(run string) string { return "budget/" + run }
