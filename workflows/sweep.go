package workflows

import (
	"fmt"
	"maps"
	"slices"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/workflow"

	"ctxlab/activities/api"
	"ctxlab/internal/safename"
	"ctxlab/results"
	"ctxlab/specs"
	"ctxlab/store/cas"
)

// ProgressQuery is the query name that returns a sweep's Progress.
const ProgressQuery = "progress"

// RowsQuery is the query name that returns the rows references the sweep's finished issues stored
// ([]api.IssueRows), from the index its argument names on, in the order they finished.
const RowsQuery = "rows"

// DefaultMaxHistory is the history length past which a sweep drains its running children and continues as new.
const DefaultMaxHistory = 4000

// SweepInput is one experiment. The fields after Queues are carried across continue-as-new.
type SweepInput struct {
	Run         string        `json:"run"`
	Title       string        `json:"title"`
	Plan        cas.Ref       `json:"plan"`
	Dataset     specs.Dataset `json:"dataset"`
	Grading     specs.Grading `json:"grading"`
	Concurrency int           `json:"concurrency"`
	Retries     int           `json:"retries"`
	Debug       specs.Debug   `json:"debug,omitempty"`
	Order       []results.Key `json:"order"`
	Queues      Queues        `json:"queues"`
	// MaxHistory overrides DefaultMaxHistory (tests make it small).
	MaxHistory int `json:"max_history,omitempty"`
	// InfraWaits overrides how often a node waits for the endpoint before failing (-1: never; tests).
	InfraWaits int `json:"infra_waits,omitempty"`
	// Retry, when set, limits the sweep to these instances and each to these arms (method and model): a re-run of a finished sweep
	// retries the rows that failed for want of the endpoint or of a key, and nothing else.
	Retry map[string][]results.Key `json:"retry,omitempty"`
	// RemoteOnly runs every node on its kind's task queue, none in the workflow worker (IssueInput.RemoteOnly).
	RemoteOnly bool `json:"remote_only,omitempty"`
	// Shipped names the starter's folders the run reads, in the store (api.ShippedFolders); empty on one machine.
	Shipped cas.Ref `json:"shipped,omitempty"`

	Instances []api.InstanceRef `json:"instances,omitempty"`
	Next      int               `json:"next,omitempty"`
	Done      int               `json:"done,omitempty"`
	Failed    []string          `json:"failed,omitempty"`
	Runs      int               `json:"runs,omitempty"`
	// Stored lists, in the order the issues finished, where each finished issue stored its rows (IssueResult.RowsRef):
	// the starter reads them (RowsQuery, SweepResult.Rows) and writes results.jsonl.
	Stored []api.IssueRows `json:"stored,omitempty"`
}

// Progress is what the progress query returns.
type Progress struct {
	Total   int      `json:"total"`
	Done    int      `json:"done"`
	Running int      `json:"running"`
	Failed  []string `json:"failed,omitempty"`
	// Runs counts continue-as-new generations before this one.
	Runs int `json:"runs"`
	// Paused counts running issues that wait for the spend cap (limits.spend_usd) to be raised.
	Paused int `json:"paused,omitempty"`
}

// issueWorkflowID is the ID of the Issue workflow of an instance: issue/RUN/ID, or, for an id Temporal cannot carry
// (bytes outside printable ASCII, which its gRPC headers refuse, or longer than safename.MaxWorkflowPart: the child
// would never start and the sweep would wait on it forever), issue~/RUN/ followed by a printable prefix of the id and
// its digest. The other first segment keeps the two forms apart. The row keeps the original id.
func issueWorkflowID(run, instance string) string {
	part, plain := safename.WorkflowPart(instance)
	if plain {
		return verbatimIssueID(run, instance)
	}
	return fmt.Sprintf("issue~/%s/%s", run, part)
}

// verbatimIssueID is issue/RUN/ID with the id as it is: every Issue's id before safeIDChange.
func verbatimIssueID(run, instance string) string { return fmt.Sprintf("issue/%s/%s", run, instance) }

// safeIDChange: a Sweep names the Issue of an id that safename.WorkflowPart does not keep as it is by its digested
// form (issueWorkflowID). Only a sweep that meets such an id takes the version, so histories of plain ids replay
// without its marker; a history without the marker names every Issue verbatim (verbatimIssueID).
const safeIDChange = "digested-issue-ids"

// childIssueID is the id this sweep gives the Issue of an instance (see safeIDChange).
func childIssueID(ctx workflow.Context, run, instance string) string {
	if _, plain := safename.WorkflowPart(instance); plain ||
		workflow.GetVersion(ctx, safeIDChange, workflow.DefaultVersion, 1) >= 1 {
		return issueWorkflowID(run, instance)
	}
	return verbatimIssueID(run, instance)
}

// SweepResult is a finished sweep.
type SweepResult struct {
	Issues  int      `json:"issues"`
	Failed  []string `json:"failed,omitempty"`
	Summary string   `json:"summary"`
	// Generations counts the runs of the sweep workflow (1 + continue-as-new count).
	Generations int `json:"generations"`
	// Rows lists where every issue stored its rows (SweepInput.Stored), for the starter to write; Summary is then
	// the summary of those rows, and the starter writes summary.md from the rows it wrote (starterSummaryChange).
	Rows []api.IssueRows `json:"rows,omitempty"`
}

// Sweep runs one Issue child per instance, at most Concurrency at a time. Before its history grows past MaxHistory
// events it lets the running children finish and continues as new, carrying its position.
func Sweep(ctx workflow.Context, in SweepInput) (SweepResult, error) {
	in.Queues = in.Queues.withDefaults()
	in.Concurrency = max(in.Concurrency, 1)
	s := &sweepState{ctx: ctx, in: &in, bctx: bookkeepingOptions(ctx, in.Queues), paused: map[string]bool{},
		maxHistory: in.MaxHistory}
	if s.maxHistory <= 0 {
		s.maxHistory = DefaultMaxHistory
	}
	if err := workflow.SetQueryHandler(ctx, ProgressQuery, func() (Progress, error) {
		return Progress{Total: len(in.Instances), Done: in.Done, Running: s.running, Failed: in.Failed, Runs: in.Runs,
			Paused: len(s.paused)}, nil
	}); err != nil {
		return SweepResult{}, err
	}
	if err := workflow.SetQueryHandler(ctx, RowsQuery, func(from int) ([]api.IssueRows, error) {
		return in.Stored[min(max(from, 0), len(in.Stored)):], nil
	}); err != nil {
		return SweepResult{}, err
	}
	if err := s.loadInstances(); err != nil {
		return SweepResult{}, err
	}
	s.sel = workflow.NewSelector(ctx)
	s.receiveSignals()
	if continued, err := s.runIssues(); continued || err != nil {
		return SweepResult{}, err
	}
	res := SweepResult{Issues: len(in.Instances), Failed: in.Failed, Generations: in.Runs + 1, Rows: in.Stored}
	switch workflow.GetVersion(ctx, starterSummaryChange, workflow.DefaultVersion, storedSummaryVersion) {
	case storedSummaryVersion:
		// The summary of the stored rows, for the result the Web UI and a history show. The starter writes
		// summary.md itself: a summary that cannot be read here leaves the result's empty, not the sweep failed.
		if err := workflow.ExecuteActivity(s.bctx, api.SummarizeStoredName, api.SummarizeStoredInput{
			Run: in.Run, Title: in.Title, Order: in.Order, Rows: in.Stored}).Get(ctx, &res.Summary); err != nil {
			workflow.GetLogger(ctx).Warn("the sweep's summary could not be made from its stored rows", "error", err)
		}
		return res, nil
	case 1:
		return res, nil
	}
	if err := workflow.ExecuteActivity(s.bctx, api.SummarizeName, api.SummarizeInput{
		Run: in.Run, Title: in.Title, Order: in.Order}).Get(ctx, &res.Summary); err != nil {
		return SweepResult{}, fmt.Errorf("writing summary: %w", err)
	}
	return res, nil
}

// starterSummaryChange: a finished sweep returns where its rows are and the starter writes summary.md; before it,
// the Summarize activity wrote it from the results.jsonl of its cpu worker's run folder. At storedSummaryVersion the
// result also carries the summary of the stored rows (version 1 left it empty).
const (
	starterSummaryChange = "summary-by-starter"
	storedSummaryVersion = 2
)

// sweepState is one run of the Sweep workflow: its input (whose counters it advances), the Issue children in
// flight and the instances whose nodes wait at the spend cap.
type sweepState struct {
	ctx        workflow.Context
	in         *SweepInput
	bctx       workflow.Context // bookkeeping activities' options
	sel        workflow.Selector
	maxHistory int
	running    int
	paused     map[string]bool // instances with nodes waiting for the spend cap
}

// loadInstances reads the dataset's instances on the first run (a continued run carries them), keeping only those
// a retry names.
func (s *sweepState) loadInstances() error {
	in := s.in
	if in.Instances != nil {
		return nil
	}
	if err := workflow.ExecuteActivity(s.bctx, api.LoadDatasetName,
		api.LoadDatasetInput{Run: in.Run, Dataset: in.Dataset}).Get(s.ctx, &in.Instances); err != nil {
		return fmt.Errorf("loading dataset: %w", err)
	}
	if len(in.Retry) > 0 {
		in.Instances = slices.DeleteFunc(in.Instances, func(i api.InstanceRef) bool {
			return len(in.Retry[i.ID]) == 0
		})
	}
	return nil
}

// receiveSignals tracks which issues wait at the spend cap and passes a resume signal on to each of them.
func (s *sweepState) receiveSignals() {
	s.sel.AddReceive(workflow.GetSignalChannel(s.ctx, PausedSignal), func(c workflow.ReceiveChannel, _ bool) {
		var p IssuePaused
		c.Receive(s.ctx, &p)
		if p.Nodes > 0 {
			s.paused[p.Instance] = true
		} else {
			delete(s.paused, p.Instance)
		}
	})
	s.sel.AddReceive(workflow.GetSignalChannel(s.ctx, ResumeSignal), func(c workflow.ReceiveChannel, _ bool) {
		c.Receive(s.ctx, nil)
		// Sorted keys: a deterministic order.
		//workflowcheck:ignore
		for _, id := range slices.Sorted(maps.Keys(s.paused)) {
			workflow.SignalExternalWorkflow(s.ctx, childIssueID(s.ctx, s.in.Run, id), "", ResumeSignal, nil)
		}
		clear(s.paused) // a node still over the cap says so again
	})
}

// runIssues keeps up to Concurrency Issue children running until every instance is done; when the history grows
// past maxHistory it drains them and continues as new (continued is true, with the continue-as-new error).
func (s *sweepState) runIssues() (continued bool, err error) {
	in := s.in
	draining := false
	for in.Next < len(in.Instances) || s.running > 0 {
		for !draining && s.running < in.Concurrency && in.Next < len(in.Instances) {
			s.startIssue(in.Instances[in.Next])
		}
		if s.running == 0 {
			break
		}
		s.sel.Select(s.ctx)
		if !draining && in.Next < len(in.Instances) &&
			workflow.GetInfo(s.ctx).GetCurrentHistoryLength() > s.maxHistory {
			draining = true
		}
		if draining && s.running == 0 {
			in.Runs++
			return true, workflow.NewContinueAsNewError(s.ctx, Sweep, *in)
		}
	}
	return false, nil
}

// startIssue starts the next instance's Issue child and counts it done (failed, when it fails) when it ends.
func (s *sweepState) startIssue(inst api.InstanceRef) {
	in := s.in
	in.Next++
	s.running++
	cctx := workflow.WithChildOptions(s.ctx, workflow.ChildWorkflowOptions{
		WorkflowID:            childIssueID(s.ctx, in.Run, inst.ID),
		TaskQueue:             in.Queues.Workflow,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
	})
	fut := workflow.ExecuteChildWorkflow(cctx, Issue, IssueInput{
		Run: in.Run, Instance: inst, Plan: in.Plan, Dataset: in.Dataset, Grading: in.Grading,
		Retries: in.Retries, Debug: in.Debug, Queues: in.Queues, InfraWaits: in.InfraWaits, Arms: in.Retry[inst.ID],
		RemoteOnly: in.RemoteOnly, Shipped: in.Shipped,
	})
	id := inst.ID
	s.sel.AddFuture(fut, func(f workflow.Future) {
		s.running--
		in.Done++
		delete(s.paused, id)
		var r IssueResult
		if err := f.Get(s.ctx, &r); err != nil {
			workflow.GetLogger(s.ctx).Error("issue failed", "instance", id, "error", err)
			in.Failed = append(in.Failed, id)
		}
		if r.RowsRef != "" {
			in.Stored = append(in.Stored, api.IssueRows{Instance: id, Rows: r.RowsRef})
		}
	})
}
